// SPDX-License-Identifier: MIT
// Event replay: the one place that turns the event stream into live blocks and totals.
#include "replay.h"

#include "memtrace/schema.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

// What one heap may allocate in all (mr_replay_share_limit).
static uint64_t alloc_limit = MT_EVENT_SIZE_MAX;
static size_t alloc_sharers = 1;

void mr_replay_share_limit(size_t n) {
    alloc_sharers = n ? n : 1;
    alloc_limit = MT_EVENT_SIZE_MAX / alloc_sharers;
}

int mr_replay_init(mr_replay* r, mt_capture* cap, int heap) {
    memset(r, 0, sizeof *r);
    r->cap = cap;
    r->heap = heap;
    return mr_heapmap_init(&r->live);
}

uint64_t mr_replay_alloc_limit(void) {
    return alloc_limit;
}

void mr_replay_totals(const mr_replay* r, mr_heap_totals* t) {
    *t = (mr_heap_totals){.heap = r->heap,
                          .events = r->events,
                          .allocations = r->allocations,
                          .frees = r->frees,
                          .unmatched_frees = r->unmatched_frees,
                          .bytes_allocated = r->bytes_allocated,
                          .live_bytes = r->live_bytes,
                          .live_blocks = r->live.count,
                          .peak_bytes = r->peak_bytes,
                          .peak_seq = r->peak_seq,
                          .peak_ts = r->peak_ts,
                          .last_seq = r->last_seq,
                          .first_ts = r->first_ts,
                          .last_ts = r->last_ts};
}

void mr_replay_free(mr_replay* r) {
    mr_heapmap_free(&r->live);
}

uint64_t mr_replay_key(const mt_event* ev) {
    bool annotated = ev->kind == MT_KIND_CUSTOM_ALLOC || ev->kind == MT_KIND_CUSTOM_FREE;
    return annotated ? ev->addr | MR_REPLAY_ANNOTATED : ev->addr;
}

// h: the hash of the event's key in the live table (mr_heapmap_prefetch).
static int apply(mr_replay* r, const mt_event* ev, uint64_t h, mr_block* freed, bool* has_freed) {
    *has_freed = false;
    if (r->events == 0)
        r->first_ts = ev->ts;
    r->events++;
    r->last_seq = ev->seq;
    r->last_ts = ev->ts;
    if (mt_kind_is_alloc(ev->kind)) {
        // Every byte sum of a report is at most what the heap allocated in all, so bounding
        // that one bounds them all (sizes are at most 2^63-1: memtrace/event.h).
        if (ev->size > alloc_limit - r->bytes_allocated)
            return -EOVERFLOW;
        mr_block b = {.addr = mr_replay_key(ev),
                      .size = ev->size,
                      .callsite = ev->callsite,
                      .tid = r->tag ? r->tag(r->tag_ud, ev) : ev->tid};
        mr_block old;
        bool had;
        if (mr_heapmap_put_hashed(&r->live, &b, h, &old, &had))
            return -ENOMEM;
        // An address allocated twice without a free in between means a free was missed
        // (e.g. made by untraced code); the old block is gone either way.
        if (had) {
            r->live_bytes -= old.size;
            *freed = old;
            *has_freed = true;
        }
        r->allocations++;
        r->bytes_allocated += ev->size;
        r->live_bytes += ev->size;
        if (r->live_bytes > r->peak_bytes) {
            r->peak_bytes = r->live_bytes;
            r->peak_seq = ev->seq;
            r->peak_ts = ev->ts;
        }
    } else if (mt_kind_is_free(ev->kind)) {
        r->frees++;
        if (mr_heapmap_take_hashed(&r->live, mr_replay_key(ev), h, freed)) {
            r->live_bytes -= freed->size;
            *has_freed = true;
        } else {
            r->unmatched_frees++;
        }
    }
    return 0;
}

int mr_replay_apply(mr_replay* r, const mt_event* ev, mr_block* freed, bool* has_freed) {
    return apply(r, ev, mr_heapmap_hash(&r->live, mr_replay_key(ev)), freed, has_freed);
}

void mr_replay_describe(mr_replay* r, int rc, const mt_event* ev) {
    if (rc == -EOVERFLOW && alloc_sharers > 1)
        snprintf(r->err, sizeof r->err,
                 "corrupt capture: the allocations sum to over (2^63-1)/%zu bytes (its share"
                 " of the %zu processes read together) at event seq %llu",
                 alloc_sharers, alloc_sharers, (unsigned long long)ev->seq);
    else if (rc == -EOVERFLOW)
        snprintf(r->err, sizeof r->err,
                 "corrupt capture: the allocations sum to over 2^63-1 bytes at event seq %llu",
                 (unsigned long long)ev->seq);
    else
        snprintf(r->err, sizeof r->err, "out of memory");
}

// A callback's failure is its own, not the capture's: say what it was, unless the callback
// already put its message into r->err.
static void describe_callback_error(mr_replay* r, int rc) {
    if (r->err[0])
        return;
    snprintf(r->err, sizeof r->err, "%s", rc == -ENOMEM ? "out of memory" : strerror(-rc));
}

int mr_replay_run(mr_replay* r, uint64_t stop_seq, mr_replay_fn fn, void* ud) {
    mt_event_iter* it = NULL;
    int rc = mt_capture_iter_open_after(r->cap, r->heap, r->after_seq, &it);
    if (rc) {
        snprintf(r->err, sizeof r->err, "%s", it ? mt_capture_iter_error(it) : "corrupt capture");
        mt_capture_iter_close(it);
        return rc;
    }
    // Reading LOOKAHEAD events ahead and prefetching their hash slots turns the replay from
    // one cache miss per event (large live sets) into overlapping misses.
    enum { LOOKAHEAD = 16 };
    mt_event ring[LOOKAHEAD];
    uint64_t hash[LOOKAHEAD]; // of each ring[i].addr
    size_t head = 0, queued = 0;
    int more = 1;
    for (;;) {
        while (more == 1 && queued < LOOKAHEAD) {
            size_t i = (head + queued) % LOOKAHEAD;
            if ((more = mt_capture_iter_next(it, &ring[i])) == 1) {
                hash[i] = mr_heapmap_prefetch(&r->live, mr_replay_key(&ring[i]));
                queued++;
            }
        }
        if (more < 0) {
            rc = more;
            break;
        }
        if (queued == 0) {
            rc = 0;
            break;
        }
        mt_event ev = ring[head];
        uint64_t h = hash[head];
        head = (head + 1) % LOOKAHEAD;
        queued--;
        if (ev.seq > stop_seq) {
            rc = 0;
            break;
        }
        mr_block freed;
        bool has_freed;
        if ((rc = apply(r, &ev, h, &freed, &has_freed))) {
            mr_replay_describe(r, rc, &ev);
            rc = rc == -EOVERFLOW ? -EPROTO : rc;
            break;
        }
        if (fn && (rc = fn(r, &ev, has_freed ? &freed : NULL, ud))) {
            if (rc < 0)
                describe_callback_error(r, rc);
            break;
        }
        rc = 0;
    }
    if (rc < 0 && !r->err[0])
        snprintf(r->err, sizeof r->err, "%s", mt_capture_iter_error(it));
    mt_capture_iter_close(it);
    return rc;
}
