// SPDX-License-Identifier: MIT
// A heap's aggregates: what one replay of all its events gives the reports that ask the
// same question every time (summary, leaks, stats, top, the peak flame graph): the heap's
// totals, per callsite the bytes and blocks live at the peak and at the end, allocated,
// and the temporaries; per thread its totals; the size histogram. Computed by that replay
// (profile.h with the measures below observing it) and stored in the capture on first
// open when the handle may write it (docs/capture-format.md, "Aggregates"), so later
// reports read them and touch no event. Stored aggregates are used only when they are
// those of the capture's events as they are now (a fingerprint of the chunks' headers)
// and add up (every sum checked); else the events are replayed, with a note for people in
// err ("the stored aggregates are damaged (why); reading the events") when they were of
// these events but did not add up.
#ifndef MR_AGGREGATES_H
#define MR_AGGREGATES_H

#include "profile.h"
#include "replay.h"
#include "u64map.h"

#include "memtrace/capture.h"
#include "memtrace/sampling.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

// Power-of-two size classes: bucket 0 holds size 0, bucket k >= 1 holds [2^(k-1), 2^k).
#define MR_AGG_NBUCKETS 65

typedef struct mr_agg_thread {
    uint32_t tid;
    uint64_t allocations, bytes, frees, temporary, live_bytes, live_blocks; // live: at the end
} mr_agg_thread;

// ---- the measures of events, not of callsites (one observer of a replay)

typedef struct mr_alloc_key {
    uint64_t size;
    uint32_t callsite;
    bool set;
} mr_alloc_key;

typedef struct mr_measures {
    mr_u64map temporary;    // callsite -> temporary frees of its blocks
    mr_agg_thread* threads; // in order of first event
    size_t nthreads, capthreads;
    mr_u64map tid_index; // tid -> index into threads
    uint32_t cached_tid;
    size_t cached_index;
    uint64_t hist_count[MR_AGG_NBUCKETS], hist_bytes[MR_AGG_NBUCKETS];
    uint64_t frees, temporaries;
    mr_alloc_key last_alloc, first_alloc; // heaptrack's rule (aggregates.c, is_temporary)
    // A sampled capture's allocations are read weighed: their requested sizes' powers of
    // two for the histogram come from these (memtrace/sampling.h), for the capture sizes_of.
    const mt_capture* sizes_of;
    uint64_t sample_bytes; // 0: not sampled
    mt_sample_sizes sizes;
} mr_measures;

int mr_aggregates_measures_init(mr_measures* m);
// An mr_replay_fn (ud: the measures); counts each event. Returns 0 or -ENOMEM.
int mr_aggregates_measures_observe(mr_replay* r, const mt_event* ev, const mr_block* freed,
                                   void* ud);
void mr_aggregates_measures_free(mr_measures* m);

// ---- aggregates

typedef struct mr_aggregates {
    mr_profile peak;        // the default query's profile at the peak (mr_profile_is_default)
    uint64_t* temporary;    // per row of peak: the temporary frees of its blocks
    mr_agg_thread* threads; // by tid
    size_t nthreads;
    uint64_t hist_count[MR_AGG_NBUCKETS], hist_bytes[MR_AGG_NBUCKETS];
    uint64_t frees, temporaries; // free events; temporary frees in all
} mr_aggregates;

// Process-wide, set before reading: false never reads stored aggregates nor stores any
// (memreport --replay, and --skip-corrupt, whose figures leave chunks out). Default true.
void mr_aggregates_enable(bool on);
bool mr_aggregates_enabled(void);

// A heap's aggregates: stored ones when valid, else from a replay (progress: the label of
// its progress indicator, or NULL), stored when the handle may write (silently not when
// it may not). Returns 0 (err: empty as the caller left it, or the note of damaged stored
// ones), or a negative errno with the reason in err (as mr_profile_build).
int mr_aggregates_get(mt_capture* cap, int heap, const char* progress, mr_aggregates* out,
                      char* err, size_t errlen);
void mr_aggregates_free(mr_aggregates* a);
// The same for a profile from the checkpoints (checkpoints.h): aggregates whose checkpoints
// are stored, computed again with them when they are not and the handle may write. Returns
// 0 (*fingerprint: of the events, as the checkpoints are stored under), 1 when there are
// none to use (either with a note in err as mr_aggregates_get), or a negative errno with the
// reason in err.
int mr_aggregates_checkpointed(mt_capture* cap, int heap, const char* progress, mr_aggregates* out,
                               uint64_t* fingerprint, char* err, size_t errlen);

// mr_profile_build_moments' shortcut: the n queries answered from the heap's aggregates
// when every one is a default query (profile.h) and the aggregates are stored, or can be
// stored now. Returns 0 (out[] filled), 1 when the queries need a replay (either with a
// note in err as mr_aggregates_get), or a negative errno with the reason in err.
int mr_aggregates_answer(mt_capture* cap, const mr_query* qs, size_t n, mr_profile* out, char* err,
                         size_t errlen);

// The bytes stored and their reading back (tests compare them with a replay). encode
// returns a malloc'd buffer or NULL; decode returns 0, -ENOMEM, or -EPROTO with what does
// not add up in why.
#define MR_AGGREGATES_FORMAT 1
uint8_t* mr_aggregates_encode(const mr_aggregates* a, size_t* len);
int mr_aggregates_decode(const uint8_t* p, size_t len, int heap, mr_aggregates* out, char* why,
                         size_t whylen);

#endif
