// SPDX-License-Identifier: MIT
// TSC to nanoseconds (see clock.h). The calibration ring is written and read by the writer
// thread only (and by start-up code before the writer exists); hooks only read the TSC.
#include "clock.h"

#include <limits.h>
#include <stdint.h>
#include <time.h>
#if defined(__x86_64__)
#include <cpuid.h>
#endif

bool mt_clock_tsc;

typedef struct calib {
    int64_t tsc, ns;
} calib;

#define POINTS 256 // at >= 5 ms apart, over a second of history
static calib points[POINTS];
static unsigned npoints; // total points ever added; the ring holds the last POINTS
static int64_t last_added_ns;

// The segment last converted through (points lo and lo + 1, logical indexes) and its slope:
// a buffer's events fall in one or two segments, so most conversions need no search and no
// division.
static unsigned seg_lo = UINT_MAX, seg_npoints;
static double seg_slope;

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
    calib p = {0, 0};
    int64_t best = INT64_MAX;
    for (int i = 0; i < 8; i++) {
        int64_t t1 = (int64_t)__builtin_ia32_rdtsc();
        int64_t ns = mt_core_now();
        int64_t t2 = (int64_t)__builtin_ia32_rdtsc();
        if (t2 - t1 < best) {
            best = t2 - t1;
            p = (calib){t1 + (t2 - t1) / 2, ns};
        }
    }
    if (npoints && p.tsc <= points[(npoints - 1) % POINTS].tsc)
        return;
    points[npoints++ % POINTS] = p;
    last_added_ns = p.ns;
#endif
}

void mt_clock_restart(void) {
    npoints = 0;
    seg_lo = UINT_MAX;
    if (mt_clock_tsc)
        add_point();
}

void mt_clock_settle(void) {
    if (!mt_clock_tsc || npoints != 1)
        return;
    // A second point at least 200 us after the first gives a first slope; later points
    // refine it.
    int64_t until = points[0].ns + 200000;
    while (mt_core_now() < until)
        ;
    add_point();
}

void mt_clock_init(void) {
    mt_clock_tsc = invariant_tsc();
}

void mt_clock_calibrate(void) {
    if (mt_clock_tsc && mt_core_now() - last_added_ns >= 5000000)
        add_point();
}

static int64_t convert(unsigned lo, int64_t tsc) {
    const calib* a = &points[lo % POINTS];
    if (lo != seg_lo || seg_npoints != npoints) {
        const calib* b = &points[(lo + 1) % POINTS];
        seg_slope = (double)(b->ns - a->ns) / (double)(b->tsc - a->tsc);
        seg_lo = lo;
        seg_npoints = npoints;
    }
    return a->ns + (int64_t)((double)(tsc - a->tsc) * seg_slope);
}

int64_t mt_clock_to_ns(int64_t raw) {
    if (!mt_clock_tsc || npoints < 2)
        return raw;
    unsigned n = npoints < POINTS ? npoints : POINTS;
    unsigned first = npoints - n; // logical index of the oldest point held
#define AT(i) (&points[(i) % POINTS])
    if (raw >= AT(npoints - 1)->tsc)
        return convert(npoints - 2, raw);
    if (raw <= AT(first)->tsc)
        return convert(first, raw);
    if (seg_lo >= first && seg_lo + 1 < npoints && AT(seg_lo)->tsc <= raw &&
        raw < AT(seg_lo + 1)->tsc)
        return convert(seg_lo, raw);
    unsigned lo = first, hi = npoints - 1; // AT(lo)->tsc < raw < AT(hi)->tsc
    while (hi - lo > 1) {
        unsigned mid = lo + (hi - lo) / 2;
        if (AT(mid)->tsc <= raw)
            lo = mid;
        else
            hi = mid;
    }
    return convert(lo, raw);
#undef AT
}
