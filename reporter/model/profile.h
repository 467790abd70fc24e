// SPDX-License-Identifier: MIT
// The aggregation model every view shares: one replay of a heap gives, per callsite (and
// per thread when asked), the blocks live at a chosen moment (the peak, a time), the
// blocks still live at the end (heaptrack's "leaked") and the allocations made over a time
// range. Views group these rows by stack, function or thread with the symbols (symbols.h);
// none replays the capture for its own totals. A view with event-level measures of its own
// (temporaries, a size histogram) observes the same replay through mr_query.observe.
#ifndef MR_PROFILE_H
#define MR_PROFILE_H

#include "replay.h"

#include "memtrace/capture.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum mr_moment {
    MR_AT_PEAK, // after the event that first reached the heap's highest live bytes
                // within from..to (the state entering the range is a candidate too)
    MR_AT_TIME, // after the last event at or before `at`
    MR_AT_END,  // after the last event: what was never freed
} mr_moment;

typedef struct mr_query {
    int heap;         // MT_HEAP_LIBC, MT_HEAP_NPU
    mr_moment moment; // the moment of the live metrics
    int64_t at;       // MR_AT_TIME: ns since start (steps for an NPU heap)
    // MR_AT_TIME: and before the event of this seq, one stamped `at` (0: no such bound).
    uint64_t before_seq;
    int64_t from, to; // allocations counted when from <= ts <= to; MR_AT_PEAK's bounds
    uint32_t tid;     // 0: every thread; else only this thread's blocks and allocations
    // The live and end metrics count only the blocks allocated within from..to (at the
    // end: the range's leaks); else every block.
    bool range_blocks;
    // Only the end metrics are asked (leaks, top --metric leaked): where that answers
    // sooner, the other metrics of rows and sums may be left 0.
    bool ends_only;
    bool by_thread; // one row per (callsite, thread) instead of per callsite
    // Optional: called after the model counted each event (ud: observe_ud); a negative
    // errno stops the build with it (worded in r->err first if the observer likes).
    mr_replay_fn observe;
    void* observe_ud;
    const char* progress; // optional: the label of a progress indicator on a terminal
} mr_query;

// Every heap event, the whole run, rows per callsite: what a view asks when it says nothing.
#define MR_QUERY_INIT(heap_id)                                                                     \
    { .heap = (heap_id), .moment = MR_AT_PEAK, .from = INT64_MIN, .to = INT64_MAX }

// The metrics of one callsite (one thread of it with by_thread).
typedef struct mr_profile_row {
    uint32_t callsite;
    uint32_t tid;        // 0 unless by_thread
    uint64_t live_bytes; // live at the moment
    uint64_t live_blocks;
    uint64_t end_bytes; // still live at the end
    uint64_t end_blocks;
    uint64_t alloc_bytes; // allocated in the range
    uint64_t alloc_count;
} mr_profile_row;

typedef struct mr_profile {
    mr_profile_row* rows; // callsites with something in a metric, by callsite (then tid)
    size_t nrows;
    // The moment: its event's seq (0: before any event) and time; the heap's live bytes
    // and blocks then, of the selected thread(s) (the sums of the rows).
    uint64_t moment_seq;
    int64_t moment_ts;
    uint64_t live_bytes, live_blocks;
    // Sums of the rows' other metrics.
    uint64_t end_bytes, end_blocks;
    uint64_t alloc_bytes, alloc_count;
    // The whole heap, whatever the query: its peak (seq 0 without allocations), its events
    // and time span.
    uint64_t peak_bytes, peak_seq;
    int64_t peak_ts;
    uint64_t events;
    int64_t first_ts, last_ts;
    mr_heap_totals heap; // all of the above and more, of the whole heap at its end
} mr_profile;

// Replays the heap once: a row's live metrics are saved lazily when it first changes after
// a candidate moment (each new peak, each event up to `at`). Returns 0, or a negative errno with
// the reason in err (-ENOMEM "out of memory", -EPROTO a corrupt capture). On success err is
// as the caller left it (empty), or holds a note for people: stored aggregates or
// checkpoints found damaged, and the events read instead (aggregates.h, checkpoints.h).
int mr_profile_build(mt_capture* cap, const mr_query* q, mr_profile* p, char* err, size_t errlen);

// Several moments from the same one replay: out[k] is what mr_profile_build(qs[k]) gives.
// The n queries (1 <= n <= MR_PROFILE_MAX_MOMENTS) may differ only in moment and at; the
// rest (heap, thread, range, observer, progress) is qs[0]'s. Returns as mr_profile_build,
// or -EINVAL when the queries cannot share a replay; out[] is left empty on failure.
#define MR_PROFILE_MAX_MOMENTS 16
int mr_profile_build_moments(mt_capture* cap, const mr_query* qs, size_t n, mr_profile* out,
                             char* err, size_t errlen);
void mr_profile_free(mr_profile* p);
// A query the heap's aggregates answer (aggregates.h): the whole run, every thread, rows
// per callsite, no observer, at the peak or the end.
bool mr_profile_is_default(const mr_query* q);
// The profile at the peak or end (moment) from p, a profile built at the peak of a default
// query: the same as mr_profile_build gives. Returns 0 or -ENOMEM.
int mr_profile_moment_of(const mr_profile* peak, mr_moment moment, mr_profile* out);

// The metrics a view can weigh stacks and functions by.
typedef enum mr_metric {
    MR_METRIC_LIVE_BYTES,
    MR_METRIC_LIVE_BLOCKS,
    MR_METRIC_ALLOC_BYTES,
    MR_METRIC_ALLOC_COUNT,
    MR_METRIC_END_BYTES,
    MR_METRIC_END_BLOCKS,
} mr_metric;
#define MR_NMETRICS 6 // the number of mr_metric values, for arrays indexed by them

uint64_t mr_profile_row_value(const mr_profile_row* r, mr_metric m);

#endif
