// SPDX-License-Identifier: MIT
// Event timestamps. On x86-64 with an invariant TSC, hooks read the TSC (a few ns) instead
// of clock_gettime (about 25 ns on a kvm-clock VM, the largest single cost of a hook); the
// writer maps ticks to CLOCK_MONOTONIC nanoseconds with calibration points it takes every
// few milliseconds (piecewise linear, so the mapping is continuous and monotonic).
#ifndef MT_CLOCK_H
#define MT_CLOCK_H

#include <stdbool.h>
#include <stdint.h>

// CLOCK_MONOTONIC nanoseconds since the last mt_clock_zero (the capture's start).
int64_t mt_clock_now(void);
void mt_clock_zero(void);

// Decides the source once at start-up (invariant TSC or not); mt_clock_restart then takes
// the first calibration point when the capture starts.
void mt_clock_init(void);
bool mt_clock_uses_tsc(void);

// The raw event clock: TSC ticks, or ns since the capture started without a usable TSC.
static inline int64_t mt_clock_raw(void);

// Writer side: adds a calibration point (call every few ms) and converts raw values to ns
// since the capture started. Single-threaded (the writer).
void mt_clock_calibrate(void);
int64_t mt_clock_to_ns(int64_t raw);
// Capture start (also in a fork child): the first calibration point, ns restart at 0.
void mt_clock_restart(void);
// Writer side, before converting anything: takes the second point (waiting until 200 us after
// the first if need be), so the program never waits for calibration.
void mt_clock_settle(void);

// ---- inline implementation

extern bool mt_clock_tsc;

static inline int64_t mt_clock_raw(void) {
#if defined(__x86_64__)
    if (mt_clock_tsc)
        return (int64_t)__builtin_ia32_rdtsc();
#endif
    return mt_clock_now();
}

#endif
