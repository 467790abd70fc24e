// SPDX-License-Identifier: MIT
// A heap's checkpoints: every so many events (mr_checkpoints_interval), the state of its
// replay then (the counters and every live block), the allocations so far per callsite and
// the highest live bytes since the checkpoint before, stored with the heap's aggregates
// when those are computed (docs/capture-format.md, "Checkpoints"). A profile at chosen
// times of the whole run (--at, flow's moments) then costs one checkpoint and the events
// after it up to the last time asked, one at the peak of a range at most three checkpoints
// and the events near its ends and its peak; what either needs of the whole run
// (allocated, live at the end, the peak) comes from the aggregates. Used only where the aggregates
// are: never with memreport --replay or --skip-corrupt, nor on a capture memreport may not write
// that has none stored.
#ifndef MR_CHECKPOINTS_H
#define MR_CHECKPOINTS_H

#include "aggregates.h"
#include "profile.h"
#include "replay.h"
#include "u64map.h"
#include "varbytes.h"

#include "memtrace/capture.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define MR_CHECKPOINTS_FORMAT 3
// The events between two checkpoints (bench/scale/results.txt: the size against the time).
#define MR_CHECKPOINTS_EVENTS (UINT64_C(4) << 20)

// Process-wide, for the checkpoints computed from now on: a checkpoint after every `events`
// events (0: MEMREPORT_CHECKPOINT_EVENTS from the environment when set, else
// MR_CHECKPOINTS_EVENTS). Tests make them dense on small captures this way.
void mr_checkpoints_every(uint64_t events);
uint64_t mr_checkpoints_interval(void);

// The allocations of a callsite (counts and bytes), over some part of the run.
typedef struct mr_alloc_sum {
    uint32_t callsite;
    uint64_t count, bytes;
} mr_alloc_sum;

// ---- storing them, while a replay computes the aggregates

typedef struct mr_checkpoints_writer {
    mt_capture* cap;
    int heap;
    uint64_t fingerprint; // of the events (mt_capture_aggregate_fingerprint)
    uint64_t every;
    int64_t ts_max;   // the latest time of the events so far
    int64_t ts_min;   // the earliest time of the events since the last checkpoint
    bool failed;      // a checkpoint could not be stored: the set is not whole
    mr_block* blocks; // scratch: a part of the live blocks, by address, and the sort's
    size_t capblocks;
    mr_varbuf encoded; // the last checkpoint's bytes, its memory kept for the next
    // The most bytes live after one of the events since the last checkpoint, the first
    // event at it (high_seq 0: no event yet).
    uint64_t high_bytes, high_seq;
    int64_t high_ts;
    // The allocations so far per callsite: an array over the capture's callsite ids, maps
    // for ids beyond them (only a damaged capture has those).
    mr_alloc_sum* allocated;
    size_t nallocated;
    mr_u64map stray_count, stray_bytes;
} mr_checkpoints_writer;

// Removes the heap's stored checkpoints and readies w. Returns 0, or -EROFS / -EIO /
// -ENOMEM (then nothing is stored and w holds nothing).
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
// seq. encode writes them into buf (its bytes replaced, its memory reused; the caller frees
// buf->p) and returns buf->p, or NULL (buf then emptied); load returns 0, -ENOMEM, or
// -EPROTO with what is wrong in why.
uint8_t* mr_checkpoints_encode(const mr_replay* r, mr_block** blocks, size_t* capblocks,
                               mr_varbuf* buf, size_t* len);
int mr_checkpoints_load(const uint8_t* p, size_t len, uint64_t seq, mr_replay* r, char* why,
                        size_t whylen);

// mr_profile_build_moments' shortcut for queries over the whole run, every thread, rows
// per callsite, no observer, at least one at a time (the others at the peak or the end):
// answered from the heap's aggregates and the replay from the last checkpoint before the
// earliest time. Returns 0 (out[] filled), 1 when the queries need a full replay (other
// queries, or no checkpoints to use; damaged ones with a note in err, "the stored
// checkpoints are damaged (why); reading the events"), or a negative errno with the reason
// in err.
int mr_checkpoints_answer(mt_capture* cap, const mr_query* qs, size_t n, mr_profile* out, char* err,
                          size_t errlen);

// The checkpoints a range's events lie between. The events in (inside_from, inside_to] are
// all stamped within the range: a range's report takes them from those two checkpoints
// (what was allocated between them, the most bytes live after one of them: high_*) and
// replays the others only.
typedef struct mr_range_span {
    uint64_t fingerprint; // of the events, the checkpoints' own
    uint64_t stop_seq;    // the last event that may be stamped at or before to (UINT64_MAX: all)
    uint64_t inside_from, inside_to; // inside_to 0: no two such checkpoints
    uint64_t high_bytes, high_seq;   // of the events inside
    int64_t high_ts;
} mr_range_span;

// For mr_profile_build_moments: one query over a time range (from..to, either end set) at
// its peak, every thread, rows per callsite, no observer. Returns 0 with the heap's
// aggregates in *a (the whole run: live at the end, the totals), r initialised at the last
// checkpoint whose events are all stamped before from (the state the range's peak starts
// from) and *span; 1 when the query is not one of those or there are no checkpoints to use
// (damaged ones: the note in err); or a negative errno with the reason in err.
int mr_checkpoints_range(mt_capture* cap, const mr_query* q, mr_aggregates* a, mr_replay* r,
                         mr_range_span* span, char* err, size_t errlen);
// r initialised with the state after event seq: the checkpoint at or before it, then the
// events up to seq. Returns 0, 1 when the checkpoint is damaged (the note in err; r is then
// empty), or a negative errno with the reason in err (r freed).
int mr_checkpoints_state(mt_capture* cap, int heap, uint64_t fingerprint, uint64_t seq,
                         mr_replay* r, char* err, size_t errlen);
// What was allocated per callsite after checkpoint from_seq up to checkpoint to_seq: *out
// (malloc'd, by callsite) and *n. Returns as mr_checkpoints_state.
int mr_checkpoints_allocated(mt_capture* cap, int heap, uint64_t fingerprint, uint64_t from_seq,
                             uint64_t to_seq, mr_alloc_sum** out, size_t* n, char* err,
                             size_t errlen);

#endif
