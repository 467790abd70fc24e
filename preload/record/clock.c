// SPDX-License-Identifier: MIT
// TSC to nanoseconds (see clock.h). The calibration ring is written and read by the writer
// thread only (and by start-up code before the writer exists); hooks only read the TSC.
#include "clock.h"

#include <stdint.h>
#include <time.h>
#if defined(__x86_64__)
#include <cpuid.h>
#endif

bool mt_clock_tsc;
static struct timespec t0;

int64_t mt_clock_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)(ts.tv_sec - t0.tv_sec) * 1000000000 + (ts.tv_nsec - t0.tv_nsec);
}

void mt_clock_zero(void) {
    clock_gettime(CLOCK_MONOTONIC, &t0);
}

// A calibration point and the line from it to the next (or, for the last point, past it).
typedef struct calib {
    int64_t tsc, ns;
    double slope; // ns per tick
    // The clock's rate from the point measured before this one to this one (an anchor: its
    // line's), ns per tick: the slope past the last point and before the oldest one held.
    // Never a segment's slope: a segment from an anchor (below) to the next point may be a
    // few ticks long, and its slope anything.
    double rate;
} calib;

// At most two points (a measured one and its anchor, below) every 5 ms: over 2.5 s of
// history, more than the writer leaves an event unconverted at the default periods.
#define POINTS 1024
static calib points[POINTS];
static unsigned npoints; // total points ever added; the ring holds the last POINTS
static int64_t last_added_ns;
static calib measured; // the last point measured, as measured (its ns before any adjustment)
// The largest raw value converted past the last point (on the last point's line). The next
// point is preceded by an anchor at this value on that line, so that no value converted
// before changes: a raw value's nanoseconds never depend on when the writer converted it,
// and a mark converted before a point was added keeps its place among the events next to
// it, converted after.
static int64_t past_last = INT64_MIN;
// The segment last converted through (its first point's logical index): a buffer's events fall
// in one or two segments, so most conversions need no search.
static unsigned seg_lo;

#define AT(i) (&points[(i) % POINTS])

static int64_t on_line(const calib* a, double slope, int64_t tsc) {
    return a->ns + (int64_t)((double)(tsc - a->tsc) * slope);
}

static int64_t convert(const calib* a, int64_t tsc) {
    return on_line(a, a->slope, tsc);
}

// Appends p, after last (if any), whose line then ends at p; p goes on at its rate.
static void append(calib p) {
    if (npoints) {
        calib* last = AT(npoints - 1);
        last->slope = (double)(p.ns - last->ns) / (double)(p.tsc - last->tsc);
    }
    p.slope = p.rate;
    *AT(npoints++) = p;
}

bool mt_clock_uses_tsc(void) {
    return mt_clock_tsc;
}

static bool invariant_tsc(void) {
#if defined(__x86_64__)
    unsigned a, b, c, d;
    if (__get_cpuid_max(0x80000000, NULL) < 0x80000007)
        return false;
    __cpuid(0x80000007, a, b, c, d);
    return (d >> 8) & 1; // "TscInvariant": constant rate, runs in every C-state
#else
    return false;
#endif
}

static void add_point(void) {
#if defined(__x86_64__)
    // Bracket clock_gettime between two TSC reads and use their midpoint; keep the tightest
    // of a few tries, since a preempted try (a busy VM) would misplace the point by as much
    // as the preemption lasted.
    calib p = {0, 0, 0, 0};
    int64_t best = INT64_MAX;
    for (int i = 0; i < 8; i++) {
        int64_t t1 = (int64_t)__builtin_ia32_rdtsc();
        int64_t ns = mt_clock_now();
        int64_t t2 = (int64_t)__builtin_ia32_rdtsc();
        if (t2 - t1 < best) {
            best = t2 - t1;
            p = (calib){t1 + (t2 - t1) / 2, ns, 0, 0};
        }
    }
    const calib* last = npoints ? AT(npoints - 1) : NULL;
    if (last && p.tsc <= last->tsc)
        return;
    if (npoints >= 2 && past_last >= p.tsc)
        return; // converted past even this point (two CPUs' TSCs apart): keep the line
    if (last)
        p.rate = (double)(p.ns - measured.ns) / (double)(p.tsc - measured.tsc);
    measured = p;
    if (npoints >= 2 && past_last > last->tsc) {
        calib anchor = {past_last, convert(last, past_last), last->slope, last->rate};
        if (p.ns <= anchor.ns)
            p.ns = anchor.ns + 1; // the line ran ahead of the clock: never go back
        *AT(npoints++) = anchor;  // on last's line: last keeps its slope
    }
    append(p);
    last_added_ns = p.ns;
#endif
}

void mt_clock_restart(void) {
    npoints = 0;
    seg_lo = 0;
    past_last = INT64_MIN;
    if (mt_clock_tsc)
        add_point();
}

void mt_clock_settle(void) {
    if (!mt_clock_tsc || npoints != 1)
        return;
    // A second point at least 200 us after the first gives a first slope; later points
    // refine it.
    int64_t until = points[0].ns + 200000;
    while (mt_clock_now() < until)
        ;
    add_point();
}

void mt_clock_init(void) {
    mt_clock_tsc = invariant_tsc();
}

void mt_clock_calibrate(void) {
    if (mt_clock_tsc && mt_clock_now() - last_added_ns >= 5000000)
        add_point();
}

int64_t mt_clock_to_ns(int64_t raw) {
    if (!mt_clock_tsc || npoints < 2)
        return raw;
    unsigned n = npoints < POINTS ? npoints : POINTS;
    unsigned first = npoints - n; // logical index of the oldest point held
    if (raw >= AT(npoints - 1)->tsc) {
        if (raw > past_last)
            past_last = raw;
        return convert(AT(npoints - 1), raw);
    }
    if (raw <= AT(first)->tsc) // on the line measured around the oldest point
        return on_line(AT(first), AT(first + 1)->rate, raw);
    if (seg_lo >= first && seg_lo + 1 < npoints && AT(seg_lo)->tsc <= raw &&
        raw < AT(seg_lo + 1)->tsc)
        return convert(AT(seg_lo), raw);
    unsigned lo = first, hi = npoints - 1; // AT(lo)->tsc < raw < AT(hi)->tsc
    while (hi - lo > 1) {
        unsigned mid = lo + (hi - lo) / 2;
        if (AT(mid)->tsc <= raw)
            lo = mid;
        else
            hi = mid;
    }
    seg_lo = lo;
    return convert(AT(lo), raw);
}
