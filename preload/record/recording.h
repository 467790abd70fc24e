// SPDX-License-Identifier: MIT
// Whether heap calls are recorded as events right now, process-wide: off before a start
// (MEMTRACE_START=stopped, MEMTRACE_DELAY_MS), toggled by a signal (MEMTRACE_SIGNAL), or
// off for good once the capture reached MEMTRACE_MAX_MB. Calls are still counted while
// off. The hooks read one atomic; the signal handler only flips it and notes the time; the
// writer turns those notes into the capture's "recording" ranges (docs/tracer.md).
#ifndef MT_RECORDING_H
#define MT_RECORDING_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

// Non-zero: hooks record no event. Bits: MT_OFF_STOPPED (start/stop), MT_OFF_FULL (max size).
extern _Atomic int mt_events_off;
enum { MT_OFF_STOPPED = 1, MT_OFF_FULL = 2 };

// For a hook that found mt_events_off non-zero (`off`): starts a delayed start whose time
// has come (the first heap call after it is recorded, whether or not the writer thread got
// to run), and returns mt_events_off as it is then.
int mt_recording_off_slow(int off);

// At initialisation, after mt_config_load: starts stopped if asked, and installs the toggle
// signal's handler only when MEMTRACE_START=stopped or MEMTRACE_SIGNAL asks for one, and
// MEMTRACE_LEAK_SIGNAL's when set.
void mt_recording_init(void);
// Whether MEMTRACE_LEAK_SIGNAL came since the last call: the writer then finishes the
// capture, with its leak scan, while the program goes on (docs/leaks.md).
bool mt_recording_finish_asked(void);
// Whether start/stop is in use (the capture then says so, and has "recording" ranges).
bool mt_recording_controlled(void);

// A capture starts (before its writer thread): its windows are counted from the state now.
void mt_recording_capture_start(void);
// Writer thread, at each commit: `edge` is called for each start (begin true) and stop since
// the last call, with its time; first call of a capture: a begin at 0 if recording. Also
// starts recording when MEMTRACE_DELAY_MS is over.
typedef void (*mt_recording_edge_fn)(bool begin, int64_t ts, void* ud);
void mt_recording_poll(int64_t now, bool first, mt_recording_edge_fn edge, void* ud);

#endif
