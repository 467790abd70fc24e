// SPDX-License-Identifier: MIT
// Live bytes per callsite at candidate moments, for a view that answers "what was live at
// the highest point of any time range" without the capture (memray's temporal flame
// graph). The run is cut into equal time buckets; each bucket's candidate is the moment of
// its highest live bytes (the state carried into the bucket counts, so an empty bucket has
// one too). The highest point of a range of buckets is then one of their candidates. Per
// callsite, only the changes of its live values from one candidate to the next are kept.
// Asked for, the states at the buckets' edges are moments too (a moment's values exact at
// those times), each bucket's allocations per callsite are kept (a range of whole buckets
// then has its exact allocations), and so are the blocks still live at the end per bucket
// of their allocation and leak kind (a range's leaks).
#ifndef MR_MOMENTS_H
#define MR_MOMENTS_H

#include "memtrace/capture.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

// A callsite's live bytes and blocks from candidate `moment` on (until its next change).
typedef struct mr_moment_value {
    uint32_t moment, callsite;
    uint64_t bytes, blocks;
} mr_moment_value;

// Blocks live at the end allocated in `bucket` at `callsite`, of leak kind `kind` (the
// capture's leak scan's verdict; MT_LEAK_UNCLASSIFIED without one).
typedef struct mr_moment_end {
    uint32_t bucket, callsite;
    int kind;
    uint64_t bytes, blocks;
} mr_moment_end;

typedef struct mr_moments {
    int64_t t0, width; // bucket k spans [t0 + k * width, t0 + (k + 1) * width)
    size_t nbuckets;
    uint32_t* bucket_moment; // bucket -> its candidate
    // The candidates, distinct and in seq order: the event after which (seq 0: before any
    // event), its time and the heap's live bytes then.
    size_t n;
    uint64_t* seq;
    int64_t* ts;
    uint64_t* bytes;
    // Changes, by moment: a callsite's values at moment k are those of its last change at
    // or before k, 0 before its first. Read them (and allocs) through mr_moments_cursor:
    // moments read from the capture leave both where they are stored (values and allocs
    // NULL, their counts set), since they are most of a stored answer's tens of MB.
    mr_moment_value* values;
    size_t nvalues, cap;
    // With edges: edge_moment[k] (k = 0..nbuckets) is the moment of the state before
    // bucket k's first event (edge nbuckets: after the last event), and allocs holds per
    // bucket (its `moment` field) each callsite's allocated bytes and count in it, in
    // bucket order. NULL and empty without edges.
    uint32_t* edge_moment;
    mr_moment_value* allocs;
    size_t nallocs, acap;
    // With edges: the distinct thread ids of the events, and each one's allocations (all
    // threads', whatever the build's thread), in tid order.
    size_t threads;
    uint64_t events; // the heap's, all threads'
    uint32_t* tids;
    uint64_t* tid_allocs;
    // With edges: the blocks live at the end, in (bucket, callsite, kind) order; whether
    // the capture's leak scan gave their kinds, or why not.
    mr_moment_end* ends;
    size_t nends;
    bool scanned;
    char why_unscanned[256];
    struct mr_moments_stored* stored; // where values and allocs lie when not in memory
} mr_moments;

// The values (or with `allocs`, the allocations) of m in order, however m holds them.
typedef struct mr_moments_cursor {
    const mr_moment_value* v; // in memory
    size_t i, n;
    uint64_t limit;         // of a moment (bucket) index
    struct mr_varstream* s; // read from where they are stored
} mr_moments_cursor;
// Returns 0 or -ENOMEM (the cursor closed).
int mr_moments_cursor_open(const mr_moments* m, bool allocs, mr_moments_cursor* c);
// The next one: 1, 0 after the last, or a negative errno (-EPROTO: bytes that changed since
// they were checked, or could not be read).
int mr_moments_cursor_next(mr_moments_cursor* c, mr_moment_value* v);
void mr_moments_cursor_close(mr_moments_cursor* c);
// Process-wide: how many bytes of stored moments a cursor reads at a time (0: 64 KiB).
// Tests make it small, so that values straddle the windows.
void mr_moments_read_window(size_t bytes);

// One replay of the heap over `buckets` (>= 1; with edges at most 65535) buckets spanning
// [0, end] ns (or steps), with the edges' moments, the buckets' allocations and the ends
// when `edges`. tid (0: all) keeps the values, allocations and ends of that thread's blocks
// only (as memreport top --thread); the candidates stay the whole heap's highest moments.
// Returns 0, or a negative errno with the reason in err.
int mr_moments_build(mt_capture* cap, int heap, uint32_t tid, int64_t end, size_t buckets,
                     bool edges, mr_moments* m, char* err, size_t errlen);
void mr_moments_free(mr_moments* m);

// mr_moments_build's answer stored in the capture (moments_stored.c): read when stored for
// these events and this query, else built and stored when the handle may write (as the
// aggregates are, aggregates.h; never with mr_aggregates_enable(false)). Returns 0 (err:
// empty, or the note of damaged stored moments, which were replaced), or as
// mr_moments_build.
int mr_moments_get(mt_capture* cap, int heap, uint32_t tid, int64_t end, size_t buckets, bool edges,
                   mr_moments* m, char* err, size_t errlen);

// The bytes stored and their reading back (tests compare them with a replay). encode
// returns a malloc'd buffer or NULL; decode returns 0, 1 when they answer another query,
// -ENOMEM, or -EPROTO with what does not add up in why.
#define MR_MOMENTS_FORMAT 1
// Table derived's key for the moments of (tid, buckets, edges): kind 1 in the top byte.
// The bytes hold the query too, checked when read.
int64_t mr_moments_key(uint32_t tid, size_t buckets, bool edges);
uint8_t* mr_moments_encode(const mr_moments* m, uint32_t tid, int64_t end, bool edges, size_t* len);
int mr_moments_decode(const uint8_t* p, size_t len, uint32_t tid, int64_t end, size_t buckets,
                      bool edges, mr_moments* m, char* why, size_t whylen);

#endif
