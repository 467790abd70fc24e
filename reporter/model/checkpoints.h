// SPDX-License-Identifier: MIT
// A heap's checkpoints: every so many events (mr_checkpoints_interval), the state of its
// replay then (the counters and every live block), stored with the heap's aggregates when
// those are computed (docs/capture-format.md, "Checkpoints"). A profile at chosen times of
// the whole run (--at, flow's moments) then costs one checkpoint and the events after it
// up to the last time asked; what it needs of the whole run (allocated, live at the end,
// the peak) comes from the aggregates. Used only where the aggregates are: never with
// memreport --replay or --skip-corrupt, nor on a capture memreport may not write that has
// none stored.
#ifndef MR_CHECKPOINTS_H
#define MR_CHECKPOINTS_H

#include "aggregates.h"
#include "profile.h"
#include "replay.h"

#include "memtrace/capture.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define MR_CHECKPOINTS_FORMAT 1
// The events between two checkpoints (bench/scale/results.txt: the size against the time).
#define MR_CHECKPOINTS_EVENTS (UINT64_C(4) << 20)

// Process-wide, for the checkpoints computed from now on: a checkpoint after every `events`
// events (0: MEMREPORT_CHECKPOINT_EVENTS from the environment when set, else
// MR_CHECKPOINTS_EVENTS). Tests make them dense on small captures this way.
void mr_checkpoints_every(uint64_t events);
uint64_t mr_checkpoints_interval(void);

// ---- storing them, while a replay computes the aggregates

typedef struct mr_checkpoints_writer {
    mt_capture* cap;
    int heap;
    uint64_t fingerprint; // of the events (mt_capture_aggregate_fingerprint)
    uint64_t every;
    int64_t ts_max;   // the latest time of the events so far
    int64_t ts_min;   // the earliest time of the events since the last checkpoint
    bool failed;      // a checkpoint could not be stored: the set is not whole
    mr_block* blocks; // scratch: the live blocks, by address
    size_t capblocks;
} mr_checkpoints_writer;

// Removes the heap's stored checkpoints and readies w. Returns 0, or -EROFS / -EIO (then
// nothing is stored).
int mr_checkpoints_begin(mr_checkpoints_writer* w, mt_capture* cap, int heap, uint64_t fingerprint);
// An mr_replay_fn (ud: the writer): stores the state after every w->every events. Never
// stops the replay: a checkpoint that cannot be stored leaves the set not whole.
int mr_checkpoints_observe(mr_replay* r, const mt_event* ev, const mr_block* freed, void* ud);
// After a replay of every event: stores the state before any (seq 0), which says the set is
// whole. Returns 0, or a negative errno when it is not.
int mr_checkpoints_end(mr_checkpoints_writer* w);
void mr_checkpoints_writer_free(mr_checkpoints_writer* w);

// Whether the heap's checkpoints of these events are stored, whole.
bool mr_checkpoints_present(mt_capture* cap, int heap, uint64_t fingerprint);

// The stored bytes of the replay's state (blocks: scratch, grown as needed), and that
// state put back into r (initialised, empty) from them: r then replays the events after
// seq. encode returns a malloc'd buffer or NULL; load returns 0, -ENOMEM, or -EPROTO with
// what is wrong in why.
uint8_t* mr_checkpoint_encode(const mr_replay* r, mr_block** blocks, size_t* capblocks,
                              size_t* len);
int mr_checkpoint_load(const uint8_t* p, size_t len, uint64_t seq, mr_replay* r, char* why,
                       size_t whylen);

// mr_profile_build_moments' shortcut for queries over the whole run, every thread, rows
// per callsite, no observer, at least one at a time (the others at the peak or the end):
// answered from the heap's aggregates and the replay from the last checkpoint before the
// earliest time. Returns 0 (out[] filled), 1 when the queries need a full replay (other
// queries, or no checkpoints to use), or a negative errno with the reason in err.
int mr_checkpoints_answer(mt_capture* cap, const mr_query* qs, size_t n, mr_profile* out, char* err,
                          size_t errlen);

// For mr_profile_build_moments: one query over a time range (from..to, either end set) at
// its peak, every thread, rows per callsite, no observer. Returns 0 with the heap's
// aggregates in *a (the whole run: live at the end, the totals), r initialised at the last
// checkpoint whose events are all stamped before from (the state the range's peak starts
// from) and *stop_seq the last event that may be stamped at or before to (UINT64_MAX: up to
// the end); 1 when the query is not one of those or there are no checkpoints to use
// (damaged ones said on stderr); or a negative errno with the reason in err.
int mr_checkpoints_range(mt_capture* cap, const mr_query* q, mr_aggregates* a, mr_replay* r,
                         uint64_t* stop_seq, char* err, size_t errlen);

#endif
