// SPDX-License-Identifier: MIT
// Profiles per thread from the checkpoints and a counting pass (threads_profile.h).
#include "threads_profile.h"

#include "aggregates.h"
#include "checkpoints.h"
#include "messages.h"
#include "u64map.h"

#include "memtrace/schema.h"
#include "memtrace/vec.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// The allocations by (callsite, thread) while counting: for the first threads, an array of
// sums over the capture's callsite ids each, while they fit in DENSE_BYTES; every other
// pair (more threads, a damaged capture's stray callsite ids) through a map. The arrays are
// what keeps counting cheap: a map's lookup per allocation costs as much as decoding it.
// Rows are made from the sums once every event is counted.
enum { DENSE_BYTES = 16 << 20, TID_CACHE = 64 };

typedef struct sum {
    uint64_t count, bytes;
} sum;

typedef struct thread_sums {
    uint32_t tid;
    sum* by_callsite; // over callsite ids; NULL: this thread's pairs are in the map
} thread_sums;

typedef struct table {
    const mr_query* q;
    size_t ncallsites; // callsite ids below it have a place in a thread's array
    thread_sums* threads;
    size_t nthreads, capthreads, ndense;
    mr_u64map thread_of; // tid -> index into threads
    mr_u64map pairs;     // (tid << 32 | callsite) -> index into strays
    mr_profile_row* strays;
    size_t nstrays, capstrays;
    // The threads of recent lookups, by tid % TID_CACHE: 1 + the index, 0: none.
    uint32_t cache_tid[TID_CACHE];
    size_t cache_index[TID_CACHE];
    mr_profile_row* rows; // once counted: by callsite, then tid
    size_t nrows;
} table;

static int table_init(table* t, mt_capture* cap, const mr_query* q) {
    memset(t, 0, sizeof *t);
    t->q = q;
    int64_t max_frame, max_callsite;
    if (mt_capture_stack_ids(cap, &max_frame, &max_callsite) || max_callsite < 0)
        max_callsite = 0;
    t->ncallsites = (size_t)max_callsite + 1;
    if (mr_u64map_init(&t->thread_of))
        return -ENOMEM;
    if (mr_u64map_init(&t->pairs)) {
        mr_u64map_free(&t->thread_of);
        return -ENOMEM;
    }
    return 0;
}

static void table_free(table* t) {
    for (size_t i = 0; i < t->nthreads; i++)
        free(t->threads[i].by_callsite);
    free(t->threads);
    free(t->strays);
    free(t->rows);
    mr_u64map_free(&t->thread_of);
    mr_u64map_free(&t->pairs);
}

static thread_sums* thread_at(table* t, uint32_t tid) {
    size_t c = tid % TID_CACHE;
    if (t->cache_index[c] && t->cache_tid[c] == tid)
        return &t->threads[t->cache_index[c] - 1];
    uint64_t* i = mr_u64map_get(&t->thread_of, tid);
    if (!i) {
        if (MT_VEC_RESERVE(&t->threads, &t->capthreads, t->nthreads + 1) ||
            mr_u64map_put(&t->thread_of, tid, t->nthreads))
            return NULL;
        thread_sums* th = &t->threads[t->nthreads];
        *th = (thread_sums){.tid = tid};
        if ((t->ndense + 1) * t->ncallsites * sizeof *th->by_callsite <= DENSE_BYTES &&
            (th->by_callsite = calloc(t->ncallsites, sizeof *th->by_callsite)))
            t->ndense++;
        i = mr_u64map_get(&t->thread_of, tid);
        t->nthreads++;
    }
    t->cache_tid[c] = tid;
    t->cache_index[c] = (size_t)*i + 1;
    return &t->threads[*i];
}

// Counts an allocation of (callsite, tid). Returns 0 or -ENOMEM.
static int add(table* t, uint32_t callsite, uint32_t tid, uint64_t size) {
    thread_sums* th = thread_at(t, tid);
    if (!th)
        return -ENOMEM;
    if (th->by_callsite && callsite < t->ncallsites) {
        th->by_callsite[callsite].count++;
        th->by_callsite[callsite].bytes += size;
        return 0;
    }
    uint64_t key = (uint64_t)tid << 32 | callsite;
    uint64_t* i = mr_u64map_get(&t->pairs, key);
    if (!i) {
        if (MT_VEC_RESERVE(&t->strays, &t->capstrays, t->nstrays + 1) ||
            mr_u64map_put(&t->pairs, key, t->nstrays))
            return -ENOMEM;
        t->strays[t->nstrays] = (mr_profile_row){.callsite = callsite, .tid = tid};
        i = mr_u64map_get(&t->pairs, key);
        t->nstrays++;
    }
    t->strays[*i].alloc_count++;
    t->strays[*i].alloc_bytes += size;
    return 0;
}

static int by_callsite_tid(const void* a, const void* b) {
    const mr_profile_row *x = a, *y = b;
    if (x->callsite != y->callsite)
        return x->callsite < y->callsite ? -1 : 1;
    return (x->tid > y->tid) - (x->tid < y->tid);
}

// The rows of every pair that allocated, by callsite then tid. Returns 0 or -ENOMEM.
static int make_rows(table* t) {
    size_t n = t->nstrays;
    for (size_t i = 0; i < t->nthreads; i++)
        for (size_t c = 0; t->threads[i].by_callsite && c < t->ncallsites; c++)
            n += t->threads[i].by_callsite[c].count != 0;
    if (n && !(t->rows = malloc(n * sizeof *t->rows)))
        return -ENOMEM;
    for (size_t i = 0; i < t->nthreads; i++) {
        const thread_sums* th = &t->threads[i];
        for (size_t c = 0; th->by_callsite && c < t->ncallsites; c++)
            if (th->by_callsite[c].count)
                t->rows[t->nrows++] = (mr_profile_row){.callsite = (uint32_t)c,
                                                       .tid = th->tid,
                                                       .alloc_count = th->by_callsite[c].count,
                                                       .alloc_bytes = th->by_callsite[c].bytes};
        free(t->threads[i].by_callsite); // counted: only the rows are read from now
        t->threads[i].by_callsite = NULL;
    }
    if (t->nstrays)
        memcpy(&t->rows[t->nrows], t->strays, t->nstrays * sizeof *t->strays);
    t->nrows += t->nstrays;
    if (t->nrows > 1)
        qsort(t->rows, t->nrows, sizeof *t->rows, by_callsite_tid);
    return 0;
}

// The row of (callsite, tid), or NULL.
static mr_profile_row* row_at(table* t, uint32_t callsite, uint32_t tid) {
    size_t lo = 0, hi = t->nrows;
    mr_profile_row key = {.callsite = callsite, .tid = tid};
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (by_callsite_tid(&t->rows[mid], &key) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < t->nrows && !by_callsite_tid(&t->rows[lo], &key) ? &t->rows[lo] : NULL;
}

// Counts every allocation of the heap into its row (profile.c: the rows of a whole-run
// query are the (callsite, thread) pairs that allocated). Returns 0, 1 when the events are
// not those the aggregates counted, or a negative errno with the reason in err.
static int count_allocations(table* t, mt_capture* cap, const mr_aggregates* a, char* err,
                             size_t errlen) {
    const mr_query* q = t->q;
    mt_event_iter* it = NULL;
    int rc = mt_capture_iter_open(cap, q->heap, &it);
    if (rc) {
        snprintf(err, errlen, "%s", it ? mt_capture_iter_error(it) : "corrupt capture");
        mt_capture_iter_close(it);
        return rc;
    }
    uint64_t events = 0, total = a->peak.heap.events;
    mt_event ev;
    bool oom = false;
    while (!oom && (rc = mt_capture_iter_next(it, &ev)) == 1) {
        if ((++events & 0xfffff) == 0 && q->progress && total)
            mr_messages_progress(q->progress, (double)events / (double)total);
        if (!mt_kind_is_alloc(ev.kind) || (q->tid && ev.tid != q->tid))
            continue;
        oom = add(t, ev.callsite, q->by_thread ? ev.tid : 0, ev.size) != 0;
    }
    if (q->progress)
        mr_messages_progress(q->progress, -1);
    if (oom || (rc == 0 && make_rows(t))) {
        snprintf(err, errlen, "out of memory");
        rc = -ENOMEM;
    } else if (rc < 0) {
        snprintf(err, errlen, "%s", mt_capture_iter_error(it));
    } else {
        rc = events == total ? 0 : 1;
    }
    mt_capture_iter_close(it);
    return rc;
}

// Adds the blocks live after event seq to their rows' live values (end: their end values).
// Returns 0, 1 when the checkpoints are damaged (the note in err) or a block has no row
// (not the events counted), or a negative errno with the reason in err.
static int tally(table* t, mt_capture* cap, uint64_t fingerprint, uint64_t seq, bool end, char* err,
                 size_t errlen) {
    mr_replay r;
    int rc = mr_checkpoints_state(cap, t->q->heap, fingerprint, seq, &r, err, errlen);
    if (rc)
        return rc;
    mr_block b;
    for (size_t i = 0; !rc && mr_heapmap_next(&r.live, &i, &b);) {
        if (t->q->tid && b.tid != t->q->tid)
            continue;
        mr_profile_row* row = row_at(t, b.callsite, t->q->by_thread ? b.tid : 0);
        if (!row) {
            rc = 1;
        } else if (end) {
            row->end_bytes += b.size;
            row->end_blocks++;
        } else {
            row->live_bytes += b.size;
            row->live_blocks++;
        }
    }
    mr_replay_free(&r);
    return rc;
}

// The profile from the table, as profile.c's finish() and build() leave it.
static void fill(table* t, const mr_aggregates* a, mr_moment moment, mr_profile* p) {
    const mr_heap_totals* h = &a->peak.heap;
    for (size_t i = 0; i < t->nrows; i++) {
        mr_profile_row* r = &t->rows[i];
        if (moment == MR_AT_END) {
            r->live_bytes = r->end_bytes;
            r->live_blocks = r->end_blocks;
        }
        p->live_bytes += r->live_bytes;
        p->live_blocks += r->live_blocks;
        p->end_bytes += r->end_bytes;
        p->end_blocks += r->end_blocks;
        p->alloc_bytes += r->alloc_bytes;
        p->alloc_count += r->alloc_count;
    }
    p->rows = t->rows; // taken over
    p->nrows = t->nrows;
    t->rows = NULL;
    t->nrows = 0;
    if (moment == MR_AT_END) {
        p->moment_seq = h->last_seq;
        p->moment_ts = h->last_ts;
    } else if (h->peak_seq) { // no allocation: no peak, the state before any event
        p->moment_seq = h->peak_seq;
        p->moment_ts = h->peak_ts;
    }
    p->peak_bytes = h->peak_bytes;
    p->peak_seq = h->peak_seq;
    p->peak_ts = h->peak_ts;
    p->events = h->events;
    p->first_ts = h->first_ts;
    p->last_ts = h->last_ts;
    p->heap = *h;
}

int mr_threads_profile_answer(mt_capture* cap, const mr_query* q, mr_profile* out, char* err,
                              size_t errlen) {
    if ((q->moment != MR_AT_PEAK && q->moment != MR_AT_END) || q->from != INT64_MIN ||
        q->to != INT64_MAX || (!q->tid && !q->by_thread) || q->observe || q->range_blocks)
        return 1;
    mr_aggregates a;
    uint64_t fingerprint;
    int rc = mr_aggregates_checkpointed(cap, q->heap, q->progress, &a, &fingerprint, err, errlen);
    if (rc)
        return rc;
    const mr_heap_totals* h = &a.peak.heap;
    table t;
    if (table_init(&t, cap, q)) {
        mr_aggregates_free(&a);
        snprintf(err, errlen, "out of memory");
        return -ENOMEM;
    }
    rc = count_allocations(&t, cap, &a, err, errlen);
    if (!rc && q->moment == MR_AT_PEAK && h->peak_seq)
        rc = tally(&t, cap, fingerprint, h->peak_seq, false, err, errlen);
    if (!rc && h->live_blocks)
        rc = tally(&t, cap, fingerprint, h->last_seq, true, err, errlen);
    if (!rc) {
        memset(out, 0, sizeof *out);
        fill(&t, &a, q->moment, out);
    }
    table_free(&t);
    mr_aggregates_free(&a);
    return rc;
}
