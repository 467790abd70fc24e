// SPDX-License-Identifier: MIT
// The aggregation model (profile.h): live blocks at a moment and allocations over a range,
// per callsite, from one replay.
#include "profile.h"

#include "replay.h"
#include "u64map.h"

#include "memtrace/schema.h"
#include "memtrace/vec.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct builder {
    const mr_query* q;
    mr_profile* p;
    mr_u64map index; // row key -> row index
    size_t cap;
    bool snapshot_taken;
} builder;

static uint64_t row_key(const builder* b, uint32_t callsite, uint32_t tid) {
    return b->q->by_thread ? (uint64_t)callsite << 32 | tid : callsite;
}

static mr_profile_row* row_of(builder* b, uint32_t callsite, uint32_t tid) {
    uint64_t key = row_key(b, callsite, tid);
    uint64_t* at = mr_u64map_get(&b->index, key);
    if (at)
        return &b->p->rows[*at];
    mr_profile* p = b->p;
    if (mt_vec_grow(&p->rows, &b->cap, p->nrows + 1, sizeof *p->rows) ||
        mr_u64map_put(&b->index, key, p->nrows))
        return NULL;
    mr_profile_row* r = &p->rows[p->nrows++];
    *r = (mr_profile_row){.callsite = callsite, .tid = b->q->by_thread ? tid : 0};
    return r;
}

static bool wanted(const builder* b, uint32_t tid) {
    return b->q->tid == 0 || b->q->tid == tid;
}

// Adds the blocks live now to the rows' live metrics.
static int snapshot(builder* b, const mr_replay* r) {
    b->snapshot_taken = true;
    b->p->moment_seq = r->last_seq;
    b->p->moment_ts = r->last_ts;
    const mr_block* blk;
    for (size_t i = 0; mr_heapmap_next(&r->live, &i, &blk);) {
        if (!wanted(b, blk->tid))
            continue;
        mr_profile_row* row = row_of(b, blk->callsite, blk->tid);
        if (!row)
            return -ENOMEM;
        row->live_bytes += blk->size;
        row->live_blocks++;
        b->p->live_bytes += blk->size;
        b->p->live_blocks++;
    }
    return 0;
}

static int on_event(mr_replay* r, const mt_event* ev, const mr_block* freed, void* ud) {
    (void)freed;
    builder* b = ud;
    if (mt_kind_is_alloc(ev->kind) && ev->ts >= b->q->from && ev->ts <= b->q->to &&
        wanted(b, ev->tid)) {
        mr_profile_row* row = row_of(b, ev->callsite, ev->tid);
        if (!row)
            return -ENOMEM;
        row->alloc_bytes += ev->size;
        row->alloc_count++;
        b->p->alloc_bytes += ev->size;
        b->p->alloc_count++;
    }
    if (ev->seq == b->p->moment_seq && b->q->moment != MR_AT_END && !b->snapshot_taken)
        return snapshot(b, r);
    return 0;
}

// The seq of the query's moment, found by a first pass (0 when before every event).
static int find_moment(mt_capture* cap, const mr_query* q, uint64_t* seq, char* err,
                       size_t errlen) {
    *seq = 0;
    if (q->moment == MR_AT_END)
        return 0;
    mr_replay r;
    if (mr_replay_init(&r, cap, q->heap)) {
        snprintf(err, errlen, "out of memory");
        return -ENOMEM;
    }
    int rc = 0;
    if (q->moment == MR_AT_PEAK) {
        rc = mr_replay_run(&r, UINT64_MAX, NULL, NULL);
        *seq = r.peak_seq;
    } else {
        mt_event_iter* it = NULL;
        mt_event ev;
        if ((rc = mt_event_iter_open(cap, q->heap, &it)) == 0)
            while ((rc = mt_event_iter_next(it, &ev)) == 1 && ev.ts <= q->at)
                *seq = ev.seq;
        if (rc < 0)
            snprintf(r.err, sizeof r.err, "%s", it ? mt_event_iter_error(it) : "corrupt capture");
        mt_event_iter_close(it);
    }
    if (rc < 0)
        snprintf(err, errlen, "%s", r.err);
    mr_replay_free(&r);
    return rc < 0 ? rc : 0;
}

static int cmp_rows(const void* a, const void* b) {
    const mr_profile_row *x = a, *y = b;
    if (x->callsite != y->callsite)
        return x->callsite < y->callsite ? -1 : 1;
    return (x->tid > y->tid) - (x->tid < y->tid);
}

int mr_profile_build(mt_capture* cap, const mr_query* q, mr_profile* p, char* err, size_t errlen) {
    memset(p, 0, sizeof *p);
    int rc = find_moment(cap, q, &p->moment_seq, err, errlen);
    if (rc)
        return rc;
    builder b = {.q = q, .p = p};
    mr_replay r;
    if (mr_u64map_init(&b.index) || mr_replay_init(&r, cap, q->heap)) {
        mr_u64map_free(&b.index);
        snprintf(err, errlen, "out of memory");
        return -ENOMEM;
    }
    rc = mr_replay_run(&r, UINT64_MAX, on_event, &b);
    if (rc == 0 && !b.snapshot_taken && (q->moment == MR_AT_END || p->moment_seq == 0)) {
        // The end, or a moment before the first event (nothing live yet).
        if (q->moment == MR_AT_END)
            rc = snapshot(&b, &r);
    }
    if (q->moment == MR_AT_TIME)
        p->moment_ts = q->at;
    if (rc < 0)
        snprintf(err, errlen, "%s", rc == -ENOMEM ? "out of memory" : r.err);
    p->peak_bytes = r.peak_bytes;
    p->peak_seq = r.peak_seq;
    p->peak_ts = r.peak_ts;
    p->events = r.events;
    p->first_ts = r.first_ts;
    p->last_ts = r.last_ts;
    mr_replay_free(&r);
    mr_u64map_free(&b.index);
    if (rc < 0) {
        mr_profile_free(p);
        return rc;
    }
    qsort(p->rows, p->nrows, sizeof *p->rows, cmp_rows);
    return 0;
}

void mr_profile_free(mr_profile* p) {
    free(p->rows);
    memset(p, 0, sizeof *p);
}

uint64_t mr_profile_row_value(const mr_profile_row* r, mr_metric m) {
    switch (m) {
    case MR_METRIC_LIVE_BYTES:
        return r->live_bytes;
    case MR_METRIC_LIVE_BLOCKS:
        return r->live_blocks;
    case MR_METRIC_ALLOC_BYTES:
        return r->alloc_bytes;
    case MR_METRIC_ALLOC_COUNT:
        return r->alloc_count;
    }
    return 0;
}
