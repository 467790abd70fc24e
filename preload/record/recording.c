// SPDX-License-Identifier: MIT
// Start and stop (recording.h). The signal handler is async-signal-safe: atomics and
// clock_gettime only; it allocates nothing and writes nothing to the capture. The writer
// thread reads the toggles it noted and writes them as "recording" ranges.
#include "recording.h"

#include "clock.h"
#include "config.h"
#include "core.h"

#include <errno.h>
#include <signal.h>
#include <string.h>

_Atomic int mt_events_off;

static bool controlled;
static _Atomic bool delay_pending;
static _Atomic bool finish_asked; // MEMTRACE_LEAK_SIGNAL came

// Toggle i noted its time in toggle_ts[i % TOGGLE_RING]; the writer reads toggles up to
// toggles_done, and only when no handler is half-way (begun == done).
#define TOGGLE_RING 64
static _Atomic uint64_t toggles_begun, toggles_done;
static _Atomic int64_t toggle_ts[TOGGLE_RING];
static uint64_t seen;   // writer only: toggles already turned into ranges
static bool seen_on;    // writer only: recording as of `seen`
static bool need_first; // writer only: the capture's first poll is still to be done

static void toggle(void) {
    uint64_t i = atomic_fetch_add(&toggles_begun, 1);
    atomic_store(&toggle_ts[i % TOGGLE_RING], mt_clock_now());
    atomic_fetch_xor(&mt_events_off, MT_OFF_STOPPED);
    atomic_fetch_add(&toggles_done, 1);
}

// The delayed start, once: by the first hook past the time (recording.h), or by the writer.
static void start_after_delay(void) {
    if (atomic_exchange(&delay_pending, false) && (atomic_load(&mt_events_off) & MT_OFF_STOPPED))
        toggle();
}

int mt_recording_off_slow(int off) {
    if (!(off & MT_OFF_STOPPED) || !atomic_load_explicit(&delay_pending, memory_order_relaxed) ||
        mt_clock_now() < (int64_t)mt_cfg.delay_ms * 1000000)
        return off;
    start_after_delay();
    return atomic_load(&mt_events_off);
}

static void on_toggle_signal(int sig) {
    (void)sig;
    int saved = errno;
    toggle();
    errno = saved;
}

static void on_leak_signal(int sig) {
    (void)sig;
    atomic_store(&finish_asked, true);
}

bool mt_recording_finish_asked(void) {
    return atomic_exchange(&finish_asked, false);
}

static void install(int sig, void (*handler)(int)) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = handler;
    sa.sa_flags = SA_RESTART; // the program's interrupted calls go on, as without us
    sigemptyset(&sa.sa_mask);
    sigaction(sig, &sa, NULL);
}

bool mt_recording_controlled(void) {
    return controlled;
}

void mt_recording_init(void) {
    bool stopped = mt_cfg.start_stopped || mt_cfg.delay_ms > 0;
    controlled = stopped || mt_cfg.toggle_signal > 0;
    if (stopped)
        atomic_store(&mt_events_off, MT_OFF_STOPPED);
    atomic_store(&delay_pending, mt_cfg.delay_ms > 0);
    // Only when asked for: an unset MEMTRACE_START and MEMTRACE_SIGNAL leave every signal's
    // disposition as the program has it. A handler the program installs later replaces ours.
    int sig = mt_cfg.toggle_signal;
    if (sig < 0 && mt_cfg.start_stopped)
        sig = SIGUSR2;
    if (sig > 0)
        install(sig, on_toggle_signal);
    if (mt_cfg.leak_signal > 0 && mt_cfg.leak_signal != sig)
        install(mt_cfg.leak_signal, on_leak_signal);
}

void mt_recording_capture_start(void) {
    seen = atomic_load(&toggles_done);
    seen_on = !(atomic_load(&mt_events_off) & MT_OFF_STOPPED);
}

void mt_recording_poll(int64_t now, bool first, mt_recording_edge_fn edge, void* ud) {
    if (!controlled)
        return;
    if (atomic_load(&delay_pending) && now >= (int64_t)mt_cfg.delay_ms * 1000000)
        start_after_delay();
    need_first |= first;
    uint64_t done = atomic_load(&toggles_done);
    if (done != atomic_load(&toggles_begun))
        return; // a handler is half-way: next time
    if (need_first) {
        need_first = false;
        if (seen_on)
            edge(true, 0, ud);
    }
    // More than TOGGLE_RING toggles between two commits: the oldest times are gone.
    if (done - seen > TOGGLE_RING) {
        uint64_t skipped = done - TOGGLE_RING - seen;
        seen_on ^= skipped & 1;
        seen += skipped;
    }
    for (; seen < done; seen++) {
        seen_on = !seen_on;
        edge(seen_on, atomic_load(&toggle_ts[seen % TOGGLE_RING]), ud);
    }
}
