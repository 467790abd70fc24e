// SPDX-License-Identifier: MIT
// Live bytes per callsite at each bucket's highest moment (moments.h): one replay finds
// the candidates, a second one records each callsite's changes between them.
#include "moments.h"

#include "replay.h"
#include "u64map.h"

#include "memtrace/schema.h"
#include "memtrace/vec.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// ---- pass 1: each bucket's highest moment

typedef struct peaks {
    mr_moments* m;
    uint64_t* max;      // per bucket: the highest live bytes
    uint64_t* at;       // per bucket: the seq after which they were live
    size_t cur;         // the bucket of the latest event
    uint64_t prev_live; // live bytes and seq after the previous event
    uint64_t prev_seq;
} peaks;

static size_t bucket_of(const mr_moments* m, int64_t ts) {
    if (ts <= m->t0)
        return 0;
    uint64_t k = (uint64_t)(ts - m->t0) / (uint64_t)m->width;
    return k < m->nbuckets ? (size_t)k : m->nbuckets - 1;
}

// Buckets up to k start with the state carried in from the previous event.
static void enter(peaks* p, size_t k) {
    while (p->cur < k) {
        p->cur++;
        p->max[p->cur] = p->prev_live;
        p->at[p->cur] = p->prev_seq;
    }
}

static int on_peak(mr_replay* r, const mt_event* ev, const mr_block* freed, void* ud) {
    (void)freed;
    peaks* p = ud;
    enter(p, bucket_of(p->m, ev->ts));
    if (r->live_bytes > p->max[p->cur]) {
        p->max[p->cur] = r->live_bytes;
        p->at[p->cur] = ev->seq;
    }
    p->prev_live = r->live_bytes;
    p->prev_seq = ev->seq;
    return 0;
}

// The distinct candidates (bucket seqs never decrease) and each bucket's index among them.
static int candidates(mr_moments* m, const peaks* p) {
    m->seq = malloc(m->nbuckets * sizeof *m->seq);
    m->ts = malloc(m->nbuckets * sizeof *m->ts);
    m->bytes = malloc(m->nbuckets * sizeof *m->bytes);
    if (!m->seq || !m->ts || !m->bytes)
        return -ENOMEM;
    for (size_t k = 0; k < m->nbuckets; k++) {
        if (m->n == 0 || m->seq[m->n - 1] != p->at[k]) {
            m->seq[m->n] = p->at[k];
            m->bytes[m->n] = p->max[k];
            m->ts[m->n] = 0; // the time of its event, filled by pass 2
            m->n++;
        }
        m->bucket_moment[k] = (uint32_t)(m->n - 1);
    }
    return 0;
}

// ---- pass 2: each callsite's values at the candidates

typedef struct cs_state {
    uint32_t callsite;
    bool dirty;
    uint64_t bytes, blocks;   // live now
    uint64_t sbytes, sblocks; // at the last candidate recorded
} cs_state;

typedef struct tracker {
    mr_moments* m;
    mr_u64map index; // callsite -> 1 + its state
    cs_state* cs;
    size_t ncs, cap;
    uint32_t* dirty; // states changed since the last candidate
    size_t ndirty, dcap;
    size_t next; // the next candidate to record
} tracker;

static cs_state* state_of(tracker* t, uint32_t callsite) {
    uint64_t* i = mr_u64map_get(&t->index, callsite);
    if (i)
        return &t->cs[*i - 1];
    if (mt_vec_grow(&t->cs, &t->cap, t->ncs + 1, sizeof *t->cs) ||
        mr_u64map_put(&t->index, callsite, t->ncs + 1))
        return NULL;
    t->cs[t->ncs] = (cs_state){.callsite = callsite};
    return &t->cs[t->ncs++];
}

static int touch(tracker* t, cs_state* s) {
    if (s->dirty)
        return 0;
    if (mt_vec_grow(&t->dirty, &t->dcap, t->ndirty + 1, sizeof *t->dirty))
        return -ENOMEM;
    s->dirty = true;
    t->dirty[t->ndirty++] = (uint32_t)(s - t->cs);
    return 0;
}

// Records the callsites whose values differ from their last recorded ones.
static int record(tracker* t, uint32_t moment) {
    mr_moments* m = t->m;
    for (size_t i = 0; i < t->ndirty; i++) {
        cs_state* s = &t->cs[t->dirty[i]];
        s->dirty = false;
        if (s->bytes == s->sbytes && s->blocks == s->sblocks)
            continue;
        if (mt_vec_grow(&m->values, &m->cap, m->nvalues + 1, sizeof *m->values))
            return -ENOMEM;
        m->values[m->nvalues++] = (mr_moment_value){moment, s->callsite, s->bytes, s->blocks};
        s->sbytes = s->bytes;
        s->sblocks = s->blocks;
    }
    t->ndirty = 0;
    return 0;
}

static int on_value(mr_replay* r, const mt_event* ev, const mr_block* freed, void* ud) {
    (void)r;
    tracker* t = ud;
    cs_state* s;
    if (freed) {
        if (!(s = state_of(t, freed->callsite)) || touch(t, s))
            return -ENOMEM;
        s->bytes -= freed->size;
        s->blocks--;
    }
    if (mt_kind_is_alloc(ev->kind)) {
        if (!(s = state_of(t, ev->callsite)) || touch(t, s))
            return -ENOMEM;
        s->bytes += ev->size;
        s->blocks++;
    }
    while (t->next < t->m->n && t->m->seq[t->next] == ev->seq) {
        t->m->ts[t->next] = ev->ts;
        int e = record(t, (uint32_t)t->next++);
        if (e)
            return e;
    }
    return 0;
}

static int replay(mt_capture* cap, int heap, mr_replay_fn fn, void* ud, char* err, size_t errlen) {
    mr_replay r;
    int e = mr_replay_init(&r, cap, heap);
    if (e == 0)
        e = mr_replay_run(&r, UINT64_MAX, fn, ud);
    if (e)
        snprintf(err, errlen, "%s", e == -ENOMEM ? "out of memory" : r.err);
    mr_replay_free(&r);
    return e;
}

int mr_moments_build(mt_capture* cap, int heap, int64_t end, size_t buckets, mr_moments* m,
                     char* err, size_t errlen) {
    *m = (mr_moments){.t0 = 0, .nbuckets = buckets ? buckets : 1};
    m->width = end > 0 ? (int64_t)((uint64_t)end / m->nbuckets + 1) : 1;
    peaks p = {.m = m};
    p.max = calloc(m->nbuckets, sizeof *p.max);
    p.at = calloc(m->nbuckets, sizeof *p.at);
    m->bucket_moment = calloc(m->nbuckets, sizeof *m->bucket_moment);
    int e = p.max && p.at && m->bucket_moment ? 0 : -ENOMEM;
    if (e == 0 && (e = replay(cap, heap, on_peak, &p, err, errlen)) == 0) {
        enter(&p, m->nbuckets - 1);
        e = candidates(m, &p);
    }
    free(p.max);
    free(p.at);
    tracker t = {.m = m};
    if (e == 0 && (e = mr_u64map_init(&t.index)) == 0) {
        while (t.next < m->n && m->seq[t.next] == 0)
            t.next++; // before any event: nothing is live
        e = replay(cap, heap, on_value, &t, err, errlen);
        mr_u64map_free(&t.index);
    }
    free(t.cs);
    free(t.dirty);
    if (e == -ENOMEM)
        snprintf(err, errlen, "out of memory");
    if (e)
        mr_moments_free(m);
    return e;
}

void mr_moments_free(mr_moments* m) {
    free(m->bucket_moment);
    free(m->seq);
    free(m->ts);
    free(m->bytes);
    free(m->values);
    *m = (mr_moments){0};
}
