// SPDX-License-Identifier: MIT
// Replays a heap's events in seq order, keeping the live blocks and the running totals
// every report needs (live bytes, peak, counts). Reports hook in with a per-event callback
// and keep their own per-callsite aggregates; memory stays bounded by the live set.
#ifndef MR_REPLAY_H
#define MR_REPLAY_H

#include "heapmap.h"

#include "memtrace/capture.h"

#include <stdint.h>

typedef struct mr_replay {
    mt_capture* cap;
    int heap;
    mr_heapmap live;
    uint64_t live_bytes;
    uint64_t peak_bytes;
    uint64_t peak_seq; // seq of the event that first reached peak_bytes (0: no allocation)
    int64_t peak_ts;
    uint64_t events;
    uint64_t allocations;
    uint64_t frees;
    uint64_t unmatched_frees; // frees of blocks allocated before tracing began
    uint64_t bytes_allocated;
    uint64_t last_seq;
    int64_t first_ts, last_ts;
    uint64_t after_seq; // mr_replay_run reads the events after it only (a checkpoint's state)
    // Optional: what a new block keeps in its tid field instead of the allocating thread's
    // id (a reader's own mark of the block, given back as freed->tid and in live).
    uint32_t (*tag)(void* ud, const mt_event* ev);
    void* tag_ud;
    // Optional: mr_replay_run keeps the live-block table on a thread of its own, a batch of
    // events ahead of the callback (what a replay of many events spends most in is that
    // table's cache misses; the callback's work then runs beside it, on another core). The
    // counters are exact at every callback, the table only after the events whose count
    // (r->events) is a multiple of live_exact_every (0: never before the end) and at the
    // end; when the callback stops the run, the table may hold events after it. Not with
    // tag, nor for a heap of fewer events than mr_replay_pipeline_after says (a thread and
    // its hand-overs cost more than they save there). The results are those of the plain
    // replay.
    bool pipelined;
    uint64_t live_exact_every;
    char err[256];
} mr_replay;

// A heap's counters after a replay to its end: mr_replay's, without its table of blocks.
typedef struct mr_heap_totals {
    int heap;
    uint64_t events, allocations, frees, unmatched_frees, bytes_allocated;
    uint64_t live_bytes, live_blocks; // at the end
    uint64_t peak_bytes, peak_seq;
    int64_t peak_ts;
    uint64_t last_seq;
    int64_t first_ts, last_ts;
} mr_heap_totals;

// The live table's key of an event's block: its address, with MR_REPLAY_ANNOTATED set for
// the blocks a program reports itself (memtrace_report_alloc/free). They live apart from
// the allocator's: a pool's block at its malloc'ed arena's base address ends no block, and
// free() never ends a reported one. Both count in the live bytes, as heaptrack counts them.
// A user-space address never has bit 63 set.
#define MR_REPLAY_ANNOTATED (UINT64_C(1) << 63)
uint64_t mr_replay_key(const mt_event* ev);

// Called after each event is applied. For a free, `freed` is the block it released (NULL
// when the address was not live); for an allocation, the block it replaced at the same
// address (a free the tracer missed), usually NULL. Return non-zero to stop.
typedef int (*mr_replay_fn)(mr_replay* r, const mt_event* ev, const mr_block* freed, void* ud);

int mr_replay_init(mr_replay* r, mt_capture* cap, int heap);
// Applies events with seq <= stop_seq (UINT64_MAX: all). Returns 0, the callback's
// non-zero value, or a negative errno with the message in r->err. A callback failing with
// a negative errno may word it in r->err first; otherwise the errno is worded there
// ("out of memory" for -ENOMEM).
int mr_replay_run(mr_replay* r, uint64_t stop_seq, mr_replay_fn fn, void* ud);
// Applies one event read by the caller (events in seq order, as mr_replay_run reads them),
// for a reader that follows a capture still being written. freed and has_freed as
// mr_replay_fn's `freed`. Returns 0, -ENOMEM, or -EOVERFLOW when the heap's allocations would
// sum to over its limit (mr_replay_share_limit: a corrupt capture).
int mr_replay_apply(mr_replay* r, const mt_event* ev, mr_block* freed, bool* has_freed);
// Every byte sum of a report is at most what a heap allocated in all, so a heap that
// allocates over 2^63-1 bytes is refused (-EOVERFLOW) and no sum wraps. A report over n
// processes sums theirs: from this call on, each heap may allocate (2^63-1)/n bytes (1: a
// capture read alone). capture_set.c says how many it opened.
void mr_replay_share_limit(size_t n);
// The most a heap may allocate in all now (mr_replay_share_limit).
uint64_t mr_replay_alloc_limit(void);
// Process-wide: a pipelined replay (mr_replay.pipelined) runs pipelined only on a heap of at
// least this many events (default MR_REPLAY_PIPELINE_EVENTS; tests take 0).
#define MR_REPLAY_PIPELINE_EVENTS (UINT64_C(1) << 16)
void mr_replay_pipeline_after(uint64_t events);
void mr_replay_totals(const mr_replay* r, mr_heap_totals* t);
// Words an error of mr_replay_apply on ev into r->err.
void mr_replay_describe(mr_replay* r, int rc, const mt_event* ev);
void mr_replay_free(mr_replay* r);

#endif
