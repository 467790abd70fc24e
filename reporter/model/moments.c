// SPDX-License-Identifier: MIT
// Live bytes per callsite at each bucket's highest moment (moments.h), in one replay: a
// bucket's candidate is known only when it ends, so the callsites changed since its
// highest moment so far keep their values at that moment.
#include "moments.h"

#include "heapmap.h"
#include "leak_kinds.h"
#include "replay.h"
#include "u64map.h"

#include "memtrace/schema.h"
#include "memtrace/vec.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// Each callsite's live values now, at the last candidate recorded, and before its first
// change since the bucket's provisional candidate.
typedef struct cs_state {
    uint32_t callsite;
    bool dirty;               // changed since the last candidate recorded
    uint64_t undo_epoch;      // == tracker.epoch: ubytes/ublocks hold its provisional values
    uint64_t bytes, blocks;   // live now
    uint64_t sbytes, sblocks; // at the last candidate recorded
    uint64_t ubytes, ublocks; // at the bucket's provisional candidate
    uint64_t abytes, acount;  // allocated in the bucket being read (with edges)
} cs_state;

// One replay. The bucket being read has a provisional candidate (its highest moment so
// far); the callsites changed since then keep their values at it (the undo list), so when
// the bucket ends its candidate's values are known without a second pass.
typedef struct tracker {
    mr_moments* m;
    // callsite -> 1 + its state (0: none yet): an array over the capture's callsite ids,
    // and a map for ids beyond them (only a damaged capture has those)
    uint32_t* dense;
    size_t ndense;
    mr_u64map index;
    cs_state* cs;
    size_t ncs, cap;
    uint32_t* dirty; // states changed since the last candidate recorded, first change first
    size_t ndirty, dcap;
    uint32_t* undo; // states changed since the provisional candidate, first change first
    size_t nundo, ucap;
    uint64_t epoch;       // of the provisional candidate; bumped to empty the undo list
    size_t cur;           // the bucket being read
    uint64_t max, at_seq; // its provisional candidate: live bytes, the event after which
    int64_t at_ts;
    uint64_t prev_live, prev_seq; // after the previous event
    int64_t prev_ts;
    bool edges;
    uint32_t tid;   // 0, or the only thread whose blocks count
    mr_u64map tids; // with edges: the threads seen, each one's allocations
    uint32_t last_tid;
    uint64_t* last_allocs; // last_tid's count in tids
    uint32_t* allocated;   // states with allocations in the bucket being read
    size_t nallocated, alcap;
    // With edges: the leak scan's verdicts (allocation seq -> kind), for the replay's tags.
    mr_u64map verdicts;
} tracker;

static size_t bucket_of(const mr_moments* m, int64_t ts) {
    if (ts <= m->t0)
        return 0;
    uint64_t k = (uint64_t)(ts - m->t0) / (uint64_t)m->width;
    return k < m->nbuckets ? (size_t)k : m->nbuckets - 1;
}

static cs_state* state_of(tracker* t, uint32_t callsite) {
    if (callsite < t->ndense && t->dense[callsite])
        return &t->cs[t->dense[callsite] - 1];
    uint64_t* i = callsite < t->ndense ? NULL : mr_u64map_get(&t->index, callsite);
    if (i)
        return &t->cs[*i - 1];
    if (t->ncs >= UINT32_MAX || mt_vec_grow(&t->cs, &t->cap, t->ncs + 1, sizeof *t->cs))
        return NULL;
    if (callsite < t->ndense)
        t->dense[callsite] = (uint32_t)(t->ncs + 1);
    else if (mr_u64map_put(&t->index, callsite, t->ncs + 1))
        return NULL;
    t->cs[t->ncs] = (cs_state){.callsite = callsite, .undo_epoch = t->epoch - 1};
    return &t->cs[t->ncs++];
}

// Before a callsite's values change: keeps them for the provisional candidate and marks
// the state changed since the last candidate recorded.
static int touch(tracker* t, cs_state* s) {
    uint32_t i = (uint32_t)(s - t->cs);
    if (s->undo_epoch != t->epoch) {
        if (mt_vec_grow(&t->undo, &t->ucap, t->nundo + 1, sizeof *t->undo))
            return -ENOMEM;
        s->undo_epoch = t->epoch;
        s->ubytes = s->bytes;
        s->ublocks = s->blocks;
        t->undo[t->nundo++] = i;
    }
    if (!s->dirty) {
        if (mt_vec_grow(&t->dirty, &t->dcap, t->ndirty + 1, sizeof *t->dirty))
            return -ENOMEM;
        s->dirty = true;
        t->dirty[t->ndirty++] = i;
    }
    return 0;
}

// The state after the previous event becomes the provisional candidate.
static void provisional(tracker* t, uint64_t live, uint64_t seq, int64_t ts) {
    t->max = live;
    t->at_seq = seq;
    t->at_ts = ts;
    t->epoch++;
    t->nundo = 0;
}

// The bucket being read ends: its provisional candidate is its candidate. A new one (not
// the previous bucket's) records the callsites whose values then differ from the last
// recorded ones; those changed after it stay dirty for the next.
static int close_bucket(tracker* t) {
    mr_moments* m = t->m;
    if (m->n == 0 || m->seq[m->n - 1] != t->at_seq) {
        uint32_t k = (uint32_t)m->n++;
        m->seq[k] = t->at_seq;
        m->ts[k] = t->at_ts;
        m->bytes[k] = t->max;
        for (size_t i = 0; i < t->ndirty; i++) {
            cs_state* s = &t->cs[t->dirty[i]];
            bool later = s->undo_epoch == t->epoch; // changed after the candidate
            uint64_t bytes = later ? s->ubytes : s->bytes;
            uint64_t blocks = later ? s->ublocks : s->blocks;
            s->dirty = false;
            if (bytes == s->sbytes && blocks == s->sblocks)
                continue;
            if (mt_vec_grow(&m->values, &m->cap, m->nvalues + 1, sizeof *m->values))
                return -ENOMEM;
            m->values[m->nvalues++] = (mr_moment_value){k, s->callsite, bytes, blocks};
            s->sbytes = bytes;
            s->sblocks = blocks;
        }
        t->ndirty = 0;
        for (size_t i = 0; i < t->nundo; i++) { // dirty again, in the order they changed
            cs_state* s = &t->cs[t->undo[i]];
            if (!s->dirty) {
                s->dirty = true;
                t->dirty[t->ndirty++] = t->undo[i]; // fits: undo is a subset of dirty
            }
        }
    }
    m->bucket_moment[t->cur] = (uint32_t)(m->n - 1);
    for (size_t i = 0; i < t->nallocated; i++) {
        cs_state* s = &t->cs[t->allocated[i]];
        if (mt_vec_grow(&m->allocs, &m->acap, m->nallocs + 1, sizeof *m->allocs))
            return -ENOMEM;
        m->allocs[m->nallocs++] =
            (mr_moment_value){(uint32_t)t->cur, s->callsite, s->abytes, s->acount};
        s->abytes = s->acount = 0;
    }
    t->nallocated = 0;
    return 0;
}

// With edges: the state now (after the previous event, before the bucket being read) is
// the moment of the edge `k`; a state already recorded at the same event is reused.
static int record_edge(tracker* t, size_t k) {
    mr_moments* m = t->m;
    if (m->n && m->seq[m->n - 1] == t->prev_seq) {
        m->edge_moment[k] = (uint32_t)(m->n - 1);
        return 0;
    }
    uint32_t at = (uint32_t)m->n++;
    m->seq[at] = t->prev_seq;
    m->ts[at] = t->prev_ts;
    m->bytes[at] = t->prev_live;
    m->edge_moment[k] = at;
    for (size_t i = 0; i < t->ndirty; i++) {
        cs_state* s = &t->cs[t->dirty[i]];
        s->dirty = false;
        if (s->bytes == s->sbytes && s->blocks == s->sblocks)
            continue;
        if (mt_vec_grow(&m->values, &m->cap, m->nvalues + 1, sizeof *m->values))
            return -ENOMEM;
        m->values[m->nvalues++] = (mr_moment_value){at, s->callsite, s->bytes, s->blocks};
        s->sbytes = s->bytes;
        s->sblocks = s->blocks;
    }
    t->ndirty = 0;
    return 0;
}

// Buckets up to k: each one after the current starts with the state carried in.
static int enter(tracker* t, size_t k) {
    while (t->cur < k) {
        int e = close_bucket(t);
        if (e)
            return e;
        t->cur++;
        provisional(t, t->prev_live, t->prev_seq, t->prev_ts);
        if (t->edges && (e = record_edge(t, t->cur)))
            return e;
    }
    return 0;
}

// With edges, the replay keeps in each block's tid field (mr_replay.tag) the bucket it was
// allocated in, its leak kind and whether it is of the thread asked for: the ends are then
// read from the replay's live blocks, at no cost per event.
#define TAG_BUCKET 0xffffu
#define TAG_KIND_SHIFT 16
#define TAG_MINE (1u << 19)

static uint32_t tag(void* ud, const mt_event* ev) {
    tracker* t = ud;
    size_t k = bucket_of(t->m, ev->ts); // the bucket on_event counts the allocation in
    k = k > t->cur ? k : t->cur;
    uint64_t* kind = t->verdicts.count ? mr_u64map_get(&t->verdicts, ev->seq) : NULL;
    return (uint32_t)k | (uint32_t)(kind ? *kind : 0) << TAG_KIND_SHIFT |
           (!t->tid || ev->tid == t->tid ? TAG_MINE : 0);
}

static int by_bucket_callsite_kind(const void* a, const void* b) {
    const mr_moment_end *x = a, *y = b;
    if (x->bucket != y->bucket)
        return x->bucket < y->bucket ? -1 : 1;
    if (x->callsite != y->callsite)
        return x->callsite < y->callsite ? -1 : 1;
    return (x->kind > y->kind) - (x->kind < y->kind);
}

// With edges, after the last event: the blocks still live (of the thread asked for) summed
// per (bucket, callsite, kind), in that order.
static int ends(tracker* t, const mr_replay* r) {
    mr_moments* m = t->m;
    mr_u64map at; // (bucket, kind, callsite) -> 1 + its index in m->ends
    if (mr_u64map_init(&at))
        return -ENOMEM;
    size_t cap = 0;
    mr_block b;
    int e = 0;
    for (size_t i = 0; e == 0 && mr_heapmap_next(&r->live, &i, &b);) {
        if (!(b.tid & TAG_MINE))
            continue;
        uint32_t bucket = b.tid & TAG_BUCKET, kind = (b.tid & ~TAG_MINE) >> TAG_KIND_SHIFT;
        uint64_t key = (uint64_t)bucket << 35 | (uint64_t)kind << 32 | b.callsite;
        uint64_t* k = mr_u64map_get(&at, key);
        if (!k) {
            if (mt_vec_grow(&m->ends, &cap, m->nends + 1, sizeof *m->ends) ||
                mr_u64map_put(&at, key, m->nends + 1)) {
                e = -ENOMEM;
                break;
            }
            m->ends[m->nends++] = (mr_moment_end){bucket, b.callsite, (int)kind, 0, 0};
            k = mr_u64map_get(&at, key);
        }
        m->ends[*k - 1].bytes += b.size;
        m->ends[*k - 1].blocks++;
    }
    mr_u64map_free(&at);
    if (e == 0 && m->nends)
        qsort(m->ends, m->nends, sizeof *m->ends, by_bucket_callsite_kind);
    return e;
}

static int on_event(mr_replay* r, const mt_event* ev, const mr_block* freed, void* ud) {
    tracker* t = ud;
    int e = enter(t, bucket_of(t->m, ev->ts));
    cs_state* s;
    if (e == 0 && t->edges && (ev->tid != t->last_tid || !t->last_allocs)) {
        t->last_tid = ev->tid;
        if (!mr_u64map_get(&t->tids, ev->tid) && mr_u64map_put(&t->tids, ev->tid, 0))
            return -ENOMEM;
        t->last_allocs = mr_u64map_get(&t->tids, ev->tid);
    }
    if (e == 0 && t->edges && mt_kind_is_alloc(ev->kind))
        (*t->last_allocs)++;
    if (t->tid && freed && !(t->edges ? freed->tid & TAG_MINE : freed->tid == t->tid))
        freed = NULL; // another thread's block
    bool mine = !t->tid || ev->tid == t->tid;
    if (e == 0 && freed) {
        if (!(s = state_of(t, freed->callsite)) || touch(t, s))
            return -ENOMEM;
        s->bytes -= freed->size;
        s->blocks--;
    }
    if (e == 0 && mine && mt_kind_is_alloc(ev->kind)) {
        if (!(s = state_of(t, ev->callsite)) || touch(t, s))
            return -ENOMEM;
        s->bytes += ev->size;
        s->blocks++;
        if (t->edges && s->acount++ == 0) {
            if (mt_vec_grow(&t->allocated, &t->alcap, t->nallocated + 1, sizeof *t->allocated))
                return -ENOMEM;
            t->allocated[t->nallocated++] = (uint32_t)(s - t->cs);
        }
        s->abytes += ev->size;
    }
    if (e == 0 && r->live_bytes > t->max)
        provisional(t, r->live_bytes, ev->seq, ev->ts);
    t->prev_live = r->live_bytes;
    t->prev_seq = ev->seq;
    t->prev_ts = ev->ts;
    return e;
}

// With edges: the threads seen and their allocations, in tid order. 0 or -ENOMEM.
static int list_threads(tracker* t) {
    mr_moments* m = t->m;
    m->tids = malloc((t->tids.count + 1) * sizeof *m->tids);
    m->tid_allocs = malloc((t->tids.count + 1) * sizeof *m->tid_allocs);
    if (!m->tids || !m->tid_allocs)
        return -ENOMEM;
    uint64_t tid, n;
    for (size_t i = 0; mr_u64map_next(&t->tids, &i, &tid, &n); m->threads++) {
        size_t k = m->threads; // insertion: a few threads, or a few thousand
        for (; k > 0 && m->tids[k - 1] > tid; k--) {
            m->tids[k] = m->tids[k - 1];
            m->tid_allocs[k] = m->tid_allocs[k - 1];
        }
        m->tids[k] = (uint32_t)tid;
        m->tid_allocs[k] = n;
    }
    return 0;
}

int mr_moments_build(mt_capture* cap, int heap, uint32_t tid, int64_t end, size_t buckets,
                     bool edges, mr_moments* m, char* err, size_t errlen) {
    // The ends keep a block's bucket in 16 bits.
    *m = (mr_moments){.t0 = 0, .nbuckets = buckets ? buckets : 1};
    if (edges && m->nbuckets > 0xffff)
        m->nbuckets = 0xffff;
    m->width = end > 0 ? (int64_t)((uint64_t)end / m->nbuckets + 1) : 1;
    m->bucket_moment = calloc(m->nbuckets, sizeof *m->bucket_moment);
    // A candidate per bucket, and with edges one per edge.
    size_t most = edges ? 2 * m->nbuckets + 1 : m->nbuckets;
    m->seq = malloc(most * sizeof *m->seq);
    m->ts = malloc(most * sizeof *m->ts);
    m->bytes = malloc(most * sizeof *m->bytes);
    if (edges)
        m->edge_moment = calloc(m->nbuckets + 1, sizeof *m->edge_moment);
    tracker t = {.m = m, .epoch = 1, .edges = edges, .tid = tid}; // bucket 0's candidate: before
                                                                  // any event
    int64_t max_frame, max_callsite;
    if (mt_capture_stack_ids(cap, &max_frame, &max_callsite) || max_callsite < 0)
        max_callsite = 0;
    t.ndense = (size_t)max_callsite + 1;
    t.dense = calloc(t.ndense, sizeof *t.dense);
    int e = t.dense && m->bucket_moment && m->seq && m->ts && m->bytes && (!edges || m->edge_moment)
                ? 0
                : -ENOMEM;
    if (e == 0 && edges)
        e = record_edge(&t, 0);
    if (e == 0 && edges && (e = mr_u64map_init(&t.verdicts)) == 0) {
        m->scanned = mr_leak_kinds_scan_complete(cap, m->why_unscanned, sizeof m->why_unscanned);
        if (m->scanned && (e = mr_leak_kinds_verdicts_load(cap, &t.verdicts)) && e != -ENOMEM) {
            snprintf(err, errlen, "the leak table is damaged");
            e = -EPROTO;
        }
    }
    if (e == 0 && (e = mr_u64map_init(&t.tids)) == 0 && (e = mr_u64map_init(&t.index)) == 0) {
        mr_replay r;
        if ((e = mr_replay_init(&r, cap, heap)) == 0 && edges) {
            r.tag = tag;
            r.tag_ud = &t;
        }
        if (e == 0 && (e = mr_replay_run(&r, UINT64_MAX, on_event, &t)) == 0)
            e = enter(&t, m->nbuckets - 1);
        if (e == 0)
            e = close_bucket(&t);
        if (e == 0 && edges)
            e = record_edge(&t, m->nbuckets);
        if (e == 0 && edges)
            e = ends(&t, &r);
        if (e == 0 && edges)
            e = list_threads(&t);
        m->events = r.events;
        if (e && e != -ENOMEM)
            snprintf(err, errlen, "%s", r.err);
        mr_replay_free(&r);
        mr_u64map_free(&t.index);
    }
    mr_u64map_free(&t.tids);
    mr_u64map_free(&t.verdicts);
    free(t.dense);
    free(t.cs);
    free(t.dirty);
    free(t.undo);
    free(t.allocated);
    if (e == -ENOMEM)
        snprintf(err, errlen, "out of memory");
    if (e)
        mr_moments_free(m);
    return e;
}
