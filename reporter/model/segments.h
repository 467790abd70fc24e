// SPDX-License-Identifier: MIT
// A heap's events cut at its checkpoints (checkpoints.h) into segments, replayed several at
// once, each on a thread and a reader (mt_capture_open_reader) of its own from the
// checkpoint at its start: a pass over every event on every core. A report keeps what it
// needs of each segment apart and puts the segments' parts together in order; each event's
// callback sees what one replay from the start would show it (the freed block, the counters).
// Used only where the checkpoints are (never with memreport --replay or --skip-corrupt).
#ifndef MR_SEGMENTS_H
#define MR_SEGMENTS_H

#include "replay.h"

#include "memtrace/capture.h"

#include <stddef.h>
#include <stdint.h>

typedef struct mr_segments {
    mt_capture* cap;
    int heap;
    uint64_t fingerprint; // of the events, the checkpoints' own
    // Segment i replays the events in (start[i], start[i + 1]], the last one to the end.
    uint64_t* start;
    size_t n;
} mr_segments;

// Process-wide: replay on at most n threads (0, the default: one per CPU this process may
// run on). Tests take more than the CPUs.
void mr_segments_threads(size_t n);

// The heap's segments, its checkpoints computed and stored first when they are not and the
// handle may write (mr_aggregates_checkpointed; progress: its indicator's label or NULL).
// Returns 0, 1 when there are none to use (damaged ones: the note in err), or a negative
// errno with the reason in err.
int mr_segments_plan(mt_capture* cap, int heap, const char* progress, mr_segments* s, char* err,
                     size_t errlen);
// What a run does with the events.
typedef struct mr_segments_job {
    // After each event of segment i, with uds[i], on the thread replaying it.
    mr_replay_fn fn;
    void* const* uds;
    const char* progress; // optional: the label of an indicator of the segments done
} mr_segments_job;

// Replays every segment. Returns 0; 1 when the segments cannot give one replay's results
// (a damaged checkpoint, a corrupt event chunk, no reader: the note in err), and the caller
// drops what it kept and replays the events the usual way, which words what is wrong with
// them; or -ENOMEM (fn's or the run's), with the reason in err. Below 3 threads the
// segments are replayed in turn, in one pipelined replay from the start (replay.h).
int mr_segments_run(const mr_segments* s, const mr_segments_job* job, char* err, size_t errlen);
void mr_segments_free(mr_segments* s);

#endif
