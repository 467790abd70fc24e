// SPDX-License-Identifier: MIT
// A heap's events replayed in segments between its checkpoints, several at once
// (segments.h).
#include "segments.h"

#include "aggregates.h"
#include "checkpoints.h"
#include "messages.h"

#include "memtrace/vec.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// Fewer threads than this replay the segments in turn (mr_segments_run).
enum { MIN_THREADS = 3 };

static size_t max_threads;

void mr_segments_threads(size_t n) {
    max_threads = n;
}

static size_t thread_count(size_t segments) {
    size_t n = max_threads;
    if (!n) {
        cpu_set_t set;
        n = sched_getaffinity(0, sizeof set, &set) == 0 ? (size_t)CPU_COUNT(&set) : 1;
    }
    n = n ? n : 1;
    return n < segments ? n : segments;
}

void mr_segments_free(mr_segments* s) {
    free(s->start);
    memset(s, 0, sizeof *s);
}

int mr_segments_plan(mt_capture* cap, int heap, const char* progress, mr_segments* s, char* err,
                     size_t errlen) {
    memset(s, 0, sizeof *s);
    mr_aggregates a;
    uint64_t fingerprint;
    int rc = mr_aggregates_checkpointed(cap, heap, progress, &a, &fingerprint, err, errlen);
    if (rc)
        return rc;
    mr_aggregates_free(&a);
    // The checkpoints from the last back to the one at seq 0, then in seq order.
    size_t cap_start = 0;
    uint64_t below = INT64_MAX;
    for (;;) {
        uint64_t seq;
        size_t len;
        rc = mt_capture_checkpoint_before(cap, heap, MR_CHECKPOINTS_FORMAT, fingerprint, below,
                                          &seq, NULL, &len);
        if (rc != 1)
            break;
        if (MT_VEC_RESERVE(&s->start, &cap_start, s->n + 1)) {
            rc = -ENOMEM;
            break;
        }
        s->start[s->n++] = seq;
        if (seq == 0)
            break;
        below = seq - 1;
    }
    if (rc < 0 || s->n < 2 || s->start[s->n - 1] != 0) { // one segment: nothing to share out
        mr_segments_free(s);
        if (rc == -ENOMEM)
            snprintf(err, errlen, "out of memory");
        return rc == -ENOMEM ? rc : 1;
    }
    for (size_t i = 0; i < s->n / 2; i++) {
        uint64_t t = s->start[i];
        s->start[i] = s->start[s->n - 1 - i];
        s->start[s->n - 1 - i] = t;
    }
    s->cap = cap;
    s->heap = heap;
    s->fingerprint = fingerprint;
    return 0;
}

// ---- the run: each worker takes the next segment not yet taken, in order

typedef struct run {
    const mr_segments* s;
    const mr_segments_job* job;
    size_t threads;
    atomic_bool stop; // a segment failed: the others end at their next event
    pthread_mutex_t lock;
    pthread_cond_t finished_cond;
    size_t next, nfinished;
    int rc;        // of the first segment (in order) that failed
    size_t failed; // that segment (n: none)
    char err[256];
} run;

typedef struct worker {
    run* x;
    mt_capture* reader;
    pthread_t thread;
} worker;

typedef struct segment_ud {
    run* x;
    void* ud;
} segment_ud;

static int on_event(mr_replay* r, const mt_event* ev, const mr_block* freed, void* ud) {
    segment_ud* u = ud;
    if (atomic_load_explicit(&u->x->stop, memory_order_relaxed))
        return -ECANCELED;
    return u->x->job->fn(r, ev, freed, u->ud);
}

// Replays segment i from the checkpoint at its start. Returns 0, 1 (a damaged checkpoint),
// the callback's value or a negative errno, the reason in err.
static int replay_segment(run* x, mt_capture* reader, size_t i, char* err, size_t errlen) {
    const mr_segments* s = x->s;
    mr_replay r;
    int rc = mr_checkpoints_state(reader, s->heap, s->fingerprint, s->start[i], &r, err, errlen);
    if (rc)
        return rc;
    segment_ud u = {x, x->job->uds[i]};
    rc = mr_replay_run(&r, i + 1 < s->n ? s->start[i + 1] : UINT64_MAX, on_event, &u);
    if (rc)
        snprintf(err, errlen, "%s", r.err);
    mr_replay_free(&r);
    return rc;
}

// Records segment i's failure (under x->lock); the first in order is the one said.
static void fail(run* x, size_t i, int rc, const char* err) {
    if (i < x->failed) {
        x->failed = i;
        x->rc = rc;
        snprintf(x->err, sizeof x->err, "%s", err);
    }
    atomic_store(&x->stop, true);
}

static void* worker_main(void* arg) {
    worker* w = arg;
    run* x = w->x;
    pthread_mutex_lock(&x->lock);
    while (!atomic_load(&x->stop) && x->next < x->s->n) {
        size_t i = x->next++;
        pthread_mutex_unlock(&x->lock);
        char err[256] = "";
        int rc = replay_segment(x, w->reader, i, err, sizeof err);
        pthread_mutex_lock(&x->lock);
        if (rc && rc != -ECANCELED) // ECANCELED: stopped for another's failure, said there
            fail(x, i, rc, err);
        x->nfinished++;
        pthread_cond_signal(&x->finished_cond);
    }
    pthread_mutex_unlock(&x->lock);
    return NULL;
}

// Starts w's thread, which takes no signals (memreport's SIGINT stays on the main thread).
static bool start(worker* w) {
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    bool ok = pthread_create(&w->thread, NULL, worker_main, w) == 0;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    return ok;
}

// On the calling thread until every segment begun has finished, showing the progress.
static void wait_segments(run* x, size_t started) {
    const char* progress = x->job->progress;
    pthread_mutex_lock(&x->lock);
    while (x->nfinished < x->next || (started && !atomic_load(&x->stop) && x->next < x->s->n)) {
        pthread_cond_wait(&x->finished_cond, &x->lock);
        if (progress)
            mr_messages_progress(progress, (double)x->nfinished / (double)x->s->n);
    }
    pthread_mutex_unlock(&x->lock);
    if (progress)
        mr_messages_progress(progress, -1);
}

// ---- on fewer threads: the segments in turn, in one replay from the start

typedef struct in_turn {
    const mr_segments* s;
    const mr_segments_job* job;
    size_t i;       // the segment of the events now
    uint64_t total; // events, for the progress
} in_turn;

static int in_turn_event(mr_replay* r, const mt_event* ev, const mr_block* freed, void* ud) {
    in_turn* t = ud;
    while (t->i + 1 < t->s->n && ev->seq > t->s->start[t->i + 1])
        t->i++;
    if ((r->events & 0xfffff) == 0 && t->job->progress && t->total)
        mr_messages_progress(t->job->progress, (double)r->events / (double)t->total);
    return t->job->fn(r, ev, freed, t->job->uds[t->i]);
}

static int run_in_turn(const mr_segments* s, const mr_segments_job* job, char* err, size_t errlen) {
    mr_replay r;
    mt_heap_span span;
    in_turn t = {s, job, 0, mt_capture_heap_span(s->cap, s->heap, &span) < 0 ? 0 : span.events};
    int rc = mr_replay_init(&r, s->cap, s->heap);
    r.pipelined = true;
    if (!rc)
        rc = mr_replay_run(&r, UINT64_MAX, in_turn_event, &t);
    if (job->progress)
        mr_messages_progress(job->progress, -1);
    snprintf(err, errlen, "%s", rc == -ENOMEM ? "out of memory" : r.err);
    mr_replay_free(&r);
    return rc == 0 || rc == -ENOMEM ? rc : 1;
}

int mr_segments_run(const mr_segments* s, const mr_segments_job* job, char* err, size_t errlen) {
    run x = {.s = s, .job = job, .threads = thread_count(s->n), .failed = s->n};
    // A pipelined replay keeps two cores busy already (replay.h): segments at once would add
    // their checkpoints' loads and a table each, and save no time on two.
    if (x.threads < MIN_THREADS)
        return run_in_turn(s, job, err, errlen);
    size_t started = 0;
    worker* w = calloc(x.threads, sizeof *w);
    bool locks = w && !pthread_mutex_init(&x.lock, NULL);
    if (!locks || pthread_cond_init(&x.finished_cond, NULL)) {
        if (locks)
            pthread_mutex_destroy(&x.lock);
        free(w);
        snprintf(err, errlen, "out of memory");
        return -ENOMEM;
    }
    int rc = 0;
    for (size_t i = 0; i < x.threads && !rc; i++) {
        w[i].x = &x;
        if ((rc = mt_capture_open_reader(s->cap, &w[i].reader)) == 0 && start(&w[i]))
            started++;
        else
            rc = rc ? rc : -EAGAIN;
    }
    if (rc) { // the threads started end after the event they are at
        atomic_store(&x.stop, true);
        snprintf(err, errlen, "no thread or reader of its own for each segment (%s)",
                 strerror(-rc));
    }
    wait_segments(&x, started);
    for (size_t i = 0; i < started; i++)
        pthread_join(w[i].thread, NULL);
    for (size_t i = 0; i < x.threads; i++)
        mt_capture_close(w[i].reader);
    pthread_cond_destroy(&x.finished_cond);
    pthread_mutex_destroy(&x.lock);
    free(w);
    if (!rc && x.failed < s->n) {
        rc = x.rc;
        snprintf(err, errlen, "%s", x.err);
    }
    // Only running out of memory is final: anything else the usual replay says in its words.
    return rc == 0 || rc == -ENOMEM ? rc : 1;
}
