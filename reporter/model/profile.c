// SPDX-License-Identifier: MIT
// The aggregation model (profile.h): live blocks at a moment and at the end, and
// allocations over a range, per callsite, from one replay.
#include "profile.h"

#include "messages.h"
#include "u64map.h"

#include "memtrace/schema.h"
#include "memtrace/vec.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// While replaying, a row's end_* hold its blocks live now and live_* its blocks live at
// the latest candidate moment ("mark"): saved when the row first changes after a mark,
// so marking is O(1) however many rows there are (the peak moves often).
typedef struct builder {
    const mr_query* q;
    mr_profile* p;
    mr_u64map index; // row key -> row index
    size_t cap;
    uint64_t* saved_at; // per row: the mark its live_* were saved at
    size_t saved_cap;
    uint32_t* recent; // RECENT slots: 1 + a row used lately (0: none), so most events
                      // skip the map

    uint64_t mark;    // marks so far
    bool past_moment; // MR_AT_TIME: an event stamped after `at` was seen
    uint64_t progress_total;
} builder;

static uint64_t row_key(const builder* b, uint32_t callsite, uint32_t tid) {
    return b->q->by_thread ? (uint64_t)callsite << 32 | tid : callsite;
}

// The index of the row of (callsite, tid) in the map, made if new; SIZE_MAX when out of
// memory.
static size_t row_index(builder* b, uint32_t callsite, uint32_t tid) {
    uint64_t key = row_key(b, callsite, tid);
    uint64_t* at = mr_u64map_get(&b->index, key);
    mr_profile* p = b->p;
    size_t i;
    if (at) {
        i = (size_t)*at;
    } else {
        if (mt_vec_grow(&p->rows, &b->cap, p->nrows + 1, sizeof *p->rows) ||
            mt_vec_grow(&b->saved_at, &b->saved_cap, p->nrows + 1, sizeof *b->saved_at) ||
            mr_u64map_put(&b->index, key, p->nrows))
            return SIZE_MAX;
        i = p->nrows++;
        p->rows[i] = (mr_profile_row){.callsite = callsite, .tid = b->q->by_thread ? tid : 0};
        b->saved_at[i] = b->mark;
    }
    return i;
}

// A direct-mapped cache of rows by (callsite, tid). Its slot hash is weak but checked
// (the row must match): a capture that makes it miss only falls back to the map.
#define RECENT (1u << 16)

// The index of the row of (callsite, tid), or SIZE_MAX when out of memory.
static size_t find_row(builder* b, uint32_t callsite, uint32_t tid) {
    uint32_t want_tid = b->q->by_thread ? tid : 0;
    uint32_t slot = (callsite * 0x9e3779b1u ^ want_tid * 0x85ebca77u) >> 16;
    uint32_t hint = b->recent[slot];
    if (hint && b->p->rows[hint - 1].callsite == callsite && b->p->rows[hint - 1].tid == want_tid)
        return hint - 1;
    size_t i = row_index(b, callsite, tid);
    if (i != SIZE_MAX)
        b->recent[slot] = (uint32_t)(i + 1);
    return i;
}

// The row of (callsite, tid), with its live_* brought up to the latest mark.
static mr_profile_row* row_of(builder* b, uint32_t callsite, uint32_t tid) {
    size_t i = find_row(b, callsite, tid);
    if (i == SIZE_MAX)
        return NULL;
    mr_profile_row* r = &b->p->rows[i];
    if (b->saved_at[i] != b->mark) {
        r->live_bytes = r->end_bytes;
        r->live_blocks = r->end_blocks;
        b->saved_at[i] = b->mark;
    }
    return r;
}

static bool wanted(const builder* b, uint32_t tid) {
    return b->q->tid == 0 || b->q->tid == tid;
}

// The state after this event is a candidate moment.
static void mark(builder* b, const mt_event* ev) {
    b->mark++;
    b->p->moment_seq = ev->seq;
    b->p->moment_ts = ev->ts;
}

// Counts one event into its rows: the block a free released (or an allocation replaced),
// an allocation (and its bytes in the range).
static int count(builder* b, const mt_event* ev, const mr_block* freed) {
    mr_profile_row* row;
    if (freed && wanted(b, freed->tid)) { // freed, or replaced by an allocation
        if (!(row = row_of(b, freed->callsite, freed->tid)))
            return -ENOMEM;
        row->end_bytes -= freed->size;
        row->end_blocks--;
    }
    if (mt_kind_is_alloc(ev->kind) && wanted(b, ev->tid)) {
        if (!(row = row_of(b, ev->callsite, ev->tid)))
            return -ENOMEM;
        row->end_bytes += ev->size;
        row->end_blocks++;
        if (ev->ts >= b->q->from && ev->ts <= b->q->to) {
            row->alloc_bytes += ev->size;
            row->alloc_count++;
        }
    }
    return 0;
}

static int on_event(mr_replay* r, const mt_event* ev, const mr_block* freed, void* ud) {
    builder* b = ud;
    const mr_query* q = b->q;
    if (q->moment == MR_AT_TIME && ev->ts > q->at)
        b->past_moment = true; // the moment is the state before the first such event
    int rc = count(b, ev, freed);
    if (rc)
        return rc;
    if ((q->moment == MR_AT_PEAK && r->peak_seq == ev->seq) ||
        (q->moment == MR_AT_TIME && !b->past_moment))
        mark(b, ev);
    if (q->progress && (r->events & 0xfffff) == 0 && b->progress_total)
        mr_progress(q->progress, (double)r->events / (double)b->progress_total);
    return q->observe ? q->observe(r, ev, freed, q->observe_ud) : 0;
}

static int cmp_rows(const void* a, const void* b) {
    const mr_profile_row *x = a, *y = b;
    if (x->callsite != y->callsite)
        return x->callsite < y->callsite ? -1 : 1;
    return (x->tid > y->tid) - (x->tid < y->tid);
}

// Brings every row's live_* to the last mark, drops the rows with nothing in any metric
// (allocated outside the range, freed before the moment), sums the rest, sorts them.
static void finish(builder* b) {
    mr_profile* p = b->p;
    size_t n = 0;
    for (size_t i = 0; i < p->nrows; i++) {
        mr_profile_row* r = &p->rows[i];
        if (b->q->moment == MR_AT_END || b->saved_at[i] != b->mark) {
            r->live_bytes = r->end_bytes;
            r->live_blocks = r->end_blocks;
        }
        if (!r->live_blocks && !r->end_blocks && !r->alloc_count)
            continue;
        p->live_bytes += r->live_bytes;
        p->live_blocks += r->live_blocks;
        p->end_bytes += r->end_bytes;
        p->end_blocks += r->end_blocks;
        p->alloc_bytes += r->alloc_bytes;
        p->alloc_count += r->alloc_count;
        p->rows[n++] = *r;
    }
    p->nrows = n;
    if (n > 1)
        qsort(p->rows, n, sizeof *p->rows, cmp_rows);
}

int mr_profile_build(mt_capture* cap, const mr_query* q, mr_profile* p, char* err, size_t errlen) {
    memset(p, 0, sizeof *p);
    builder b = {.q = q, .p = p};
    if (q->progress)
        b.progress_total = (uint64_t)mt_capture_meta_int(cap, "events_written", 0);
    mr_replay r;
    b.recent = calloc(RECENT, sizeof *b.recent);
    if (!b.recent || mr_u64map_init(&b.index) || mr_replay_init(&r, cap, q->heap)) {
        mr_u64map_free(&b.index);
        free(b.recent);
        snprintf(err, errlen, "out of memory");
        return -ENOMEM;
    }
    int rc = mr_replay_run(&r, UINT64_MAX, on_event, &b);
    if (q->progress)
        mr_progress(q->progress, -1);
    if (rc) {
        snprintf(err, errlen, "%s", r.err[0] ? r.err : "corrupt capture");
        rc = rc < 0 ? rc : -EPROTO;
    } else {
        if (q->moment == MR_AT_END) {
            p->moment_seq = r.last_seq;
            p->moment_ts = r.last_ts;
        } else if (q->moment == MR_AT_TIME) {
            p->moment_ts = q->at;
        }
        finish(&b);
        p->peak_bytes = r.peak_bytes;
        p->peak_seq = r.peak_seq;
        p->peak_ts = r.peak_ts;
        p->events = r.events;
        p->first_ts = r.first_ts;
        p->last_ts = r.last_ts;
    }
    mr_replay_free(&r);
    mr_u64map_free(&b.index);
    free(b.saved_at);
    free(b.recent);
    if (rc)
        mr_profile_free(p);
    return rc;
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
    case MR_METRIC_END_BYTES:
        return r->end_bytes;
    case MR_METRIC_END_BLOCKS:
        return r->end_blocks;
    }
    return 0;
}
