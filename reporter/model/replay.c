// SPDX-License-Identifier: MIT
// Event replay: the one place that turns the event stream into live blocks and totals.
#include "replay.h"

#include "memtrace/schema.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
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
// The counters every event moves, and those an allocation adds to (after the block it
// replaced, if any, was taken off live_bytes).
static void count_event(mr_replay* r, const mt_event* ev) {
    if (r->events == 0)
        r->first_ts = ev->ts;
    r->events++;
    r->last_seq = ev->seq;
    r->last_ts = ev->ts;
}

static void count_allocation(mr_replay* r, const mt_event* ev) {
    r->allocations++;
    r->bytes_allocated += ev->size;
    r->live_bytes += ev->size;
    if (r->live_bytes > r->peak_bytes) {
        r->peak_bytes = r->live_bytes;
        r->peak_seq = ev->seq;
        r->peak_ts = ev->ts;
    }
}

static int apply(mr_replay* r, const mt_event* ev, uint64_t h, mr_block* freed, bool* has_freed) {
    *has_freed = false;
    count_event(r, ev);
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
        count_allocation(r, ev);
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

// ---- the pipelined run (mr_replay.pipelined): a worker applies batches of events to the
// live-block table in order, the calling thread reads the events, keeps the counters and
// calls the callback a batch behind. Each thread does what apply() does in one.

enum { BATCH = 4096, NBATCHES = 4 };

static uint64_t pipeline_events = MR_REPLAY_PIPELINE_EVENTS;

void mr_replay_pipeline_after(uint64_t events) {
    pipeline_events = events;
}

// Whether r's heap has events enough to be worth a thread (the chunks' counts).
static bool worth_pipelining(const mr_replay* r) {
    mt_heap_span span;
    return pipeline_events == 0 ||
           (mt_capture_heap_span(r->cap, r->heap, &span) >= 0 && span.events >= pipeline_events);
}

// What the table did with an event, for the counters' half.
typedef struct applied {
    mr_block freed;
    int rc; // 0, or -ENOMEM: the table could not take the block
    bool has_freed;
} applied;

typedef struct batch {
    mt_event ev[BATCH];
    applied out[BATCH];
    size_t n;
    bool sync; // its last event's callback reads the table: no later event is applied before
} batch;

typedef struct pipeline {
    mr_replay* r;
    batch* b;                 // NBATCHES of them, used in turn
    uint64_t submitted, done; // batches handed to the worker and applied, from the start
    bool stop;
    pthread_mutex_t lock;
    pthread_cond_t to_worker, to_main;
    pthread_t worker;
} pipeline;

// The table's half of apply(), on the worker, prefetching LOOKAHEAD events ahead.
static void apply_table(mr_replay* r, batch* b) {
    enum { LOOKAHEAD = 16 };
    uint64_t hash[LOOKAHEAD];
    size_t n = b->n;
    for (size_t i = 0; i < n && i < LOOKAHEAD; i++)
        hash[i] = mr_heapmap_prefetch(&r->live, mr_replay_key(&b->ev[i]));
    for (size_t i = 0; i < n; i++) {
        uint64_t h = hash[i % LOOKAHEAD];
        if (i + LOOKAHEAD < n)
            hash[i % LOOKAHEAD] =
                mr_heapmap_prefetch(&r->live, mr_replay_key(&b->ev[i + LOOKAHEAD]));
        const mt_event* ev = &b->ev[i];
        applied* a = &b->out[i];
        a->rc = 0;
        a->has_freed = false;
        if (mt_kind_is_alloc(ev->kind)) {
            mr_block blk = {.addr = mr_replay_key(ev),
                            .size = ev->size,
                            .callsite = ev->callsite,
                            .tid = ev->tid};
            if (mr_heapmap_put_hashed(&r->live, &blk, h, &a->freed, &a->has_freed))
                a->rc = -ENOMEM;
        } else if (mt_kind_is_free(ev->kind)) {
            a->has_freed = mr_heapmap_take_hashed(&r->live, mr_replay_key(ev), h, &a->freed);
        }
    }
}

// The counters' half of apply(), on the calling thread: the same results, from what the
// table did (a).
static int apply_counters(mr_replay* r, const mt_event* ev, const applied* a, mr_block* freed,
                          bool* has_freed) {
    *has_freed = false;
    count_event(r, ev);
    bool alloc = mt_kind_is_alloc(ev->kind);
    if (alloc && ev->size > alloc_limit - r->bytes_allocated)
        return -EOVERFLOW;
    if (alloc && a->rc)
        return a->rc;
    if ((alloc || mt_kind_is_free(ev->kind)) && a->has_freed) {
        r->live_bytes -= a->freed.size;
        *freed = a->freed;
        *has_freed = true;
    }
    if (alloc) {
        count_allocation(r, ev);
    } else if (mt_kind_is_free(ev->kind)) {
        r->frees++;
        r->unmatched_frees += !a->has_freed;
    }
    return 0;
}

static void* worker_main(void* arg) {
    pipeline* p = arg;
    pthread_mutex_lock(&p->lock);
    for (;;) {
        while (!p->stop && p->done == p->submitted)
            pthread_cond_wait(&p->to_worker, &p->lock);
        if (p->stop)
            break;
        batch* b = &p->b[p->done % NBATCHES];
        pthread_mutex_unlock(&p->lock);
        apply_table(p->r, b);
        pthread_mutex_lock(&p->lock);
        p->done++;
        pthread_cond_signal(&p->to_main);
    }
    pthread_mutex_unlock(&p->lock);
    return NULL;
}

// Starts the worker. Returns false (nothing to free) when it cannot: the plain run then.
static bool pipeline_start(pipeline* p, mr_replay* r) {
    *p = (pipeline){.r = r};
    if (!(p->b = malloc(NBATCHES * sizeof *p->b)))
        return false;
    if (pthread_mutex_init(&p->lock, NULL)) {
        free(p->b);
        return false;
    }
    if (pthread_cond_init(&p->to_worker, NULL)) {
        pthread_mutex_destroy(&p->lock);
        free(p->b);
        return false;
    }
    if (pthread_cond_init(&p->to_main, NULL)) {
        pthread_cond_destroy(&p->to_worker);
        pthread_mutex_destroy(&p->lock);
        free(p->b);
        return false;
    }
    // The worker takes no signals (memreport live's SIGINT must reach the main thread).
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int failed = pthread_create(&p->worker, NULL, worker_main, p);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (failed) {
        pthread_cond_destroy(&p->to_main);
        pthread_cond_destroy(&p->to_worker);
        pthread_mutex_destroy(&p->lock);
        free(p->b);
        return false;
    }
    return true;
}

static void pipeline_end(pipeline* p) {
    pthread_mutex_lock(&p->lock);
    p->stop = true;
    pthread_cond_signal(&p->to_worker);
    pthread_mutex_unlock(&p->lock);
    pthread_join(p->worker, NULL);
    pthread_cond_destroy(&p->to_main);
    pthread_cond_destroy(&p->to_worker);
    pthread_mutex_destroy(&p->lock);
    free(p->b);
}

// Reads the next batch of events (up to stop_seq, or to the next event whose count is a
// multiple of live_exact_every) into b. Returns the iterator's last answer (1: more may come).
static int fill(mr_replay* r, mt_event_iter* it, uint64_t stop_seq, uint64_t* read, batch* b) {
    b->n = 0;
    b->sync = false;
    while (b->n < BATCH) {
        int more = mt_capture_iter_next(it, &b->ev[b->n]);
        if (more != 1)
            return more;
        if (b->ev[b->n].seq > stop_seq)
            return 0;
        b->n++;
        if (r->live_exact_every && ++*read % r->live_exact_every == 0) {
            b->sync = true;
            break;
        }
    }
    return 1;
}

static int run_pipelined(mr_replay* r, mt_event_iter* it, uint64_t stop_seq, mr_replay_fn fn,
                         void* ud, pipeline* p) {
    uint64_t consumed = 0, read = r->events;
    bool holding = false; // a sync batch is out: no later one goes before its callbacks ran
    int more = 1;
    for (;;) {
        while (more == 1 && !holding && p->submitted - consumed < NBATCHES) {
            batch* b = &p->b[p->submitted % NBATCHES];
            more = fill(r, it, stop_seq, &read, b);
            if (b->n == 0)
                break;
            pthread_mutex_lock(&p->lock);
            p->submitted++;
            pthread_cond_signal(&p->to_worker);
            pthread_mutex_unlock(&p->lock);
            holding = b->sync;
        }
        if (consumed == p->submitted)
            break;
        pthread_mutex_lock(&p->lock);
        while (p->done == consumed)
            pthread_cond_wait(&p->to_main, &p->lock);
        pthread_mutex_unlock(&p->lock);
        batch* b = &p->b[consumed % NBATCHES];
        for (size_t i = 0; i < b->n; i++) {
            mr_block freed;
            bool has_freed;
            const mt_event* ev = &b->ev[i];
            int rc = apply_counters(r, ev, &b->out[i], &freed, &has_freed);
            if (rc) {
                mr_replay_describe(r, rc, ev);
                return rc == -EOVERFLOW ? -EPROTO : rc;
            }
            if (fn && (rc = fn(r, ev, has_freed ? &freed : NULL, ud))) {
                if (rc < 0)
                    describe_callback_error(r, rc);
                return rc;
            }
        }
        consumed++;
        holding &= !b->sync;
    }
    return more < 0 ? more : 0;
}

int mr_replay_run(mr_replay* r, uint64_t stop_seq, mr_replay_fn fn, void* ud) {
    mt_event_iter* it = NULL;
    int rc = mt_capture_iter_open_after(r->cap, r->heap, r->after_seq, &it);
    if (rc) {
        snprintf(r->err, sizeof r->err, "%s", it ? mt_capture_iter_error(it) : "corrupt capture");
        mt_capture_iter_close(it);
        return rc;
    }
    pipeline p;
    if (r->pipelined && !r->tag && worth_pipelining(r) && pipeline_start(&p, r)) {
        rc = run_pipelined(r, it, stop_seq, fn, ud, &p);
        pipeline_end(&p);
        if (rc < 0 && !r->err[0])
            snprintf(r->err, sizeof r->err, "%s", mt_capture_iter_error(it));
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
