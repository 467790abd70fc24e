// SPDX-License-Identifier: MIT
// The event clock (preload/record/clock.c): raw values map to nanoseconds that never go back and
// agree with CLOCK_MONOTONIC (the core's clock) read around them. Bounds are generous and
// principled, never timings: a sample is bracketed by two clock reads, and the mapping may
// differ from the bracket only by a calibration point's error (the tightest of eight
// bracketed reads, tens of ns normally), far below the 1 ms allowed.
#include "clock.h"

#include "../check.h"
#include "../rng.h"

#define SAMPLES 64
#define TOLERANCE_NS 1000000
#define CALIBRATION_NS 5000000 // mt_clock_calibrate adds a point when 5 ms have passed

typedef struct sample {
    int64_t before, raw, after;
} sample;

static void busy_until(int64_t ns) {
    while (mt_clock_now() < ns)
        ;
}

static void check_samples(const sample* s, int n) {
    int within = 0, monotonic = 1;
    for (int i = 0; i < n; i++) {
        int64_t ns = mt_clock_to_ns(s[i].raw);
        if (ns >= s[i].before - TOLERANCE_NS && ns <= s[i].after + TOLERANCE_NS)
            within++;
        else
            fprintf(stderr, "sample %d: %" PRId64 " not in [%" PRId64 ", %" PRId64 "]\n", i, ns,
                    s[i].before, s[i].after);
        for (int j = 0; j < n; j++)
            if (s[j].raw > s[i].raw && mt_clock_to_ns(s[j].raw) < ns)
                monotonic = 0;
    }
    CHECK_EQ_I64(within, n);
    CHECK(monotonic);
}

// Samples over ~30 ms with the writer's calibration cadence, converted afterwards (as the
// writer converts a buffer): interpolated between points, and a few past the last point.
static void test_mapping(void) {
    mt_clock_restart();
    mt_clock_settle();
    static sample s[SAMPLES];
    for (int i = 0; i < SAMPLES; i++) {
        s[i].before = mt_clock_now();
        s[i].raw = mt_clock_raw();
        s[i].after = mt_clock_now();
        if (i % 5 == 4)
            busy_until(s[i].after + CALIBRATION_NS / 2);
        if (i < SAMPLES - 4)
            mt_clock_calibrate();
    }
    check_samples(s, SAMPLES);

    // Continuous and monotonic between and across calibration points, raw value by raw value.
    int64_t lo = s[0].raw, hi = s[SAMPLES - 1].raw, step = (hi - lo) / 100000 + 1;
    int64_t prev = mt_clock_to_ns(lo);
    int never_back = 1;
    for (int64_t r = lo + step; r <= hi; r += step) {
        int64_t ns = mt_clock_to_ns(r);
        never_back &= ns >= prev;
        prev = ns;
    }
    CHECK(never_back);
}

// The writer converts a buffer or a mark when it gets to it, sometimes past the last
// calibration point (on the last segment's line), and the events next to it after the next
// point was added. A value's nanoseconds must not depend on when it was converted, or a
// mark could move past an event recorded after it.
static void test_converted_before_a_point(void) {
    mt_clock_restart();
    mt_clock_settle(); // the second point: a slope from 200 us, refined by the next points
    busy_until(mt_clock_now() + CALIBRATION_NS / 2);
    int64_t early = mt_clock_raw();
    int64_t early_ns = mt_clock_to_ns(early); // past the last point
    int64_t next = mt_clock_raw();
    busy_until(mt_clock_now() + CALIBRATION_NS);
    mt_clock_calibrate();
    busy_until(mt_clock_now() + CALIBRATION_NS);
    mt_clock_calibrate();
    CHECK_EQ_I64(mt_clock_to_ns(early), early_ns);
    CHECK(mt_clock_to_ns(next) >= early_ns);
    // And the mapping stays monotonic across the points added after the early conversion.
    int64_t prev = mt_clock_to_ns(early), never_back = 1, now = mt_clock_raw();
    for (int64_t r = early, step = (now - early) / 100000 + 1; r <= now; r += step) {
        int64_t ns = mt_clock_to_ns(r);
        never_back &= ns >= prev;
        prev = ns;
    }
    CHECK(never_back);
}

// A deterministic pseudo-random sequence (xorshift64): the waits differ from run to run only
// by the machine's timing, never the verdict.
static uint64_t rng = 0x9e3779b97f4a7c15u;
static unsigned next_random(unsigned below) {
    return (unsigned)(test_rng(&rng) % below);
}

// Writer passes as the writer makes them: calibrate, then convert what was recorded, including
// events recorded during the pass, after the point just added; passes back to back (buffers
// filling fast) or apart, over many calibration points. Every value converted keeps its ns
// to the end, the mapping never goes back (raw value by raw value around each one converted
// past the last point: the anchors) and stays within the tolerance of the clock. A point's
// line past it once had the slope of the few ticks from an anchor to it, and the capture's
// times ran off by seconds within a few points.
#define PASS_SAMPLES 4096
static void test_writer_passes(void) {
    static sample s[PASS_SAMPLES];
    static int64_t converted_ns[PASS_SAMPLES];
    for (int round = 0; round < 2; round++) { // the second as in a fork child: restarted
        mt_clock_restart();
        mt_clock_settle();
        int n = 0, pending = 0; // s[pending, n) are recorded, not converted yet
        // Over 20 calibration periods, and on a loaded machine (this process off the core
        // for most of them) as long as it takes to record enough values.
        int64_t end = mt_clock_now() + 20 * CALIBRATION_NS;
        while (n < PASS_SAMPLES - 8 && (mt_clock_now() < end || n < 512)) {
            static const int64_t waits[] = {0, 2000, 50000, 300000, CALIBRATION_NS / 3};
            busy_until(mt_clock_now() + waits[next_random(5)]);
            for (int k = next_random(3); k > 0; k--, n++) { // recorded between passes
                s[n].before = mt_clock_now();
                s[n].raw = mt_clock_raw();
                s[n].after = mt_clock_now();
            }
            mt_clock_calibrate();
            for (int k = next_random(3); k > 0; k--, n++) { // recorded during the pass
                s[n].before = mt_clock_now();
                s[n].raw = mt_clock_raw();
                s[n].after = mt_clock_now();
            }
            for (; pending < n; pending++)
                converted_ns[pending] = mt_clock_to_ns(s[pending].raw);
        }
        int kept = 0, within = 0, never_back = 1;
        for (int i = 0; i < n; i++) {
            int64_t ns = mt_clock_to_ns(s[i].raw);
            kept += ns == converted_ns[i];
            within += ns >= s[i].before - TOLERANCE_NS && ns <= s[i].after + TOLERANCE_NS;
            int64_t prev = mt_clock_to_ns(s[i].raw - 256);
            for (int64_t r = s[i].raw - 255; r <= s[i].raw + 256; r++) {
                int64_t at = mt_clock_to_ns(r);
                never_back &= at >= prev;
                prev = at;
            }
            if (i > 0 && s[i].raw >= s[i - 1].raw)
                never_back &= ns >= mt_clock_to_ns(s[i - 1].raw);
        }
        CHECK(n > 100);
        CHECK_EQ_I64(kept, n);
        CHECK_EQ_I64(within, n);
        CHECK(never_back);
    }
}

// Without a usable TSC the raw clock is already the core's nanoseconds.
static void test_without_tsc(void) {
    bool tsc = mt_clock_tsc;
    mt_clock_tsc = false;
    mt_clock_restart();
    mt_clock_settle();
    int64_t before = mt_clock_now(), raw = mt_clock_raw(), after = mt_clock_now();
    CHECK(raw >= before && raw <= after);
    CHECK_EQ_I64(mt_clock_to_ns(raw), raw);
    mt_clock_tsc = tsc;
}

int main(void) {
    mt_clock_init();
    printf("source: %s\n", mt_clock_uses_tsc() ? "TSC" : "clock_gettime");
    test_mapping();
    test_converted_before_a_point();
    test_writer_passes();
    test_without_tsc();
    CHECK_DONE();
}
