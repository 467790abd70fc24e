// SPDX-License-Identifier: MIT
// The live heap of each process of a tree over time, on one wall-clock axis (plot of a
// directory or several captures): each process's heap_timeline.h series moved by the time
// its capture started after the earliest one (meta start_realtime_ns), in buckets shared by
// all, and the stacked sum sampled at every time a series has a point; the sum's peak is
// exact: the highest sum of the processes' live bytes over their events merged in time.
#ifndef MR_PROCS_TIMELINE_H
#define MR_PROCS_TIMELINE_H

#include "capture_set.h"
#include "heap_timeline.h"

#include <stddef.h>
#include <stdint.h>

typedef struct mr_proc_series {
    const mr_process* proc;
    int64_t offset;     // ns from the common origin to the capture's ts 0
    int64_t end;        // ns on the common axis: offset + the capture's duration
    mr_heap_timeline t; // its heap series, peak and peak_ts on the common axis
} mr_proc_series;

typedef struct mr_procs_timeline {
    int64_t origin_ns;     // wall clock of time 0: the earliest start (0 when none says)
    int64_t duration;      // ns: the latest end
    mr_proc_series* procs; // s->procs' order
    size_t n;
    // The stack, sampled at every time a process has a point or ends: values[k * n + i] is
    // process i's live bytes at times[k] (held from its last point, 0 after its end).
    int64_t* times;
    uint64_t* values;
    size_t ntimes;
    // The highest sum of live bytes over every event of every process in time order (events
    // of two processes at the same nanosecond in tree order; a process drops to 0 after its
    // end), and a time it was reached.
    uint64_t total_peak;
    int64_t total_peak_ts;
} mr_procs_timeline;

// What went wrong, and in which process's capture (its path, owned by the set).
typedef struct mr_procs_error {
    const char* path;
    char msg[512];
} mr_procs_error;

// Builds the timeline of every process of s with `buckets` buckets across the common
// axis. Returns 0, or a negative errno with the reason in *err.
int mr_procs_timeline_build(const mr_capture_set* s, int64_t buckets, mr_procs_timeline* t,
                            mr_procs_error* err);
void mr_procs_timeline_free(mr_procs_timeline* t);

// The moment the processes together held the most: what a report of a process tree shows
// as its peak (a sum of each process's own peak, reached at different moments, is not one).
typedef struct mr_procs_moment {
    uint64_t peak; // the highest sum of the processes' live bytes (total_peak)
    int64_t ts;    // when, in ns on the common axis
    // For s->procs[i], the time on its own capture's axis to ask it about (MR_AT_TIME):
    // at[i] < 0 when it was not running then (not started yet, or ended: nothing live).
    int64_t* at;
    // and the first of its events stamped at[i] that came after the peak in the sum's
    // order (mr_query.before_seq; 0: none did), so that two events of one nanosecond are
    // told apart as the peak was;
    uint64_t* before_seq;
    // and its live bytes then: its share of the peak (the shares sum to it).
    uint64_t* live;
    size_t n;
} mr_procs_moment;

// Finds it from a timeline of s (mr_procs_timeline_build). Returns 0, or a negative errno
// with the reason in *err.
int mr_procs_timeline_moment_find(const mr_capture_set* s, mr_procs_moment* m, mr_procs_error* err);
void mr_procs_timeline_moment_free(mr_procs_moment* m);

#endif
