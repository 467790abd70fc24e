// SPDX-License-Identifier: MIT
// Cross-thread benchmark workload: `bench_xt THREADS` runs THREADS threads in a ring; each
// allocates blocks (same stacks, sizes and per-pair work as bench_st) and hands them through
// a lock-free single-producer/single-consumer queue to the next thread, which frees them.
// Every free is therefore cross-thread. Prints its exact counts and ns per pair on one line.
#include "workload.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>

#define QCAP 1024 // power of two

typedef struct queue {
    _Alignas(64) _Atomic uint64_t head; // next slot to pop (consumer-owned)
    _Alignas(64) _Atomic uint64_t tail; // next slot to push (producer-owned)
    _Alignas(64) void* slot[QCAP];
} queue;

typedef struct worker {
    pthread_t thread;
    int index;
    queue* in;  // filled by the previous thread, drained here
    queue* out; // drained by the next thread
    _Atomic int* upstream_done;
    _Atomic int done; // this thread made all its blocks
    uint64_t rng;
    uint64_t todo;
    uint64_t mallocs, frees;
    unsigned work;
} worker;

static int q_push(queue* q, void* p) {
    uint64_t t = atomic_load_explicit(&q->tail, memory_order_relaxed);
    if (t - atomic_load_explicit(&q->head, memory_order_acquire) == QCAP)
        return 0;
    q->slot[t % QCAP] = p;
    atomic_store_explicit(&q->tail, t + 1, memory_order_release);
    return 1;
}

static void* q_pop(queue* q) {
    uint64_t h = atomic_load_explicit(&q->head, memory_order_relaxed);
    if (h == atomic_load_explicit(&q->tail, memory_order_acquire))
        return NULL;
    void* p = q->slot[h % QCAP];
    atomic_store_explicit(&q->head, h + 1, memory_order_release);
    return p;
}

static void wait_a_little(unsigned spins) {
    if (spins < 16) {
        sched_yield();
    } else {
        struct timespec ts = {0, 20000};
        nanosleep(&ts, NULL);
    }
}

static int free_one(worker* w) {
    void* p = q_pop(w->in);
    if (!p)
        return 0;
    free(p);
    w->frees++;
    return 1;
}

static uint64_t xt_leaf(void* arg) {
    worker* w = arg;
    uint64_t acc = 0;
    for (int i = 0; i < BENCH_OPS_PER_LEAF && w->todo; i++, w->todo--) {
        uint64_t r = rng_next(&w->rng);
        size_t size = pick_size(r);
        void* p = malloc(size);
        if (!p) {
            fprintf(stderr, "bench_xt: out of memory\n");
            exit(1);
        }
        w->mallocs++;
        touch(p, size, r);
        acc += burn(r, w->work);
        // A full queue means the next thread is behind (descheduled: more threads than
        // cores): free our own inbound meanwhile so that the ring can never deadlock, and
        // wait without burning the CPU the others need when there is nothing to do.
        for (unsigned spins = 0; !q_push(w->out, p); spins++)
            if (!free_one(w))
                wait_a_little(spins);
        // Up to two frees per malloc: the consumer catches up after a pause, so the queue stays
        // short and threads seldom wait.
        if (free_one(w))
            free_one(w);
    }
    return acc;
}

// Frees what is still coming after this thread made all its blocks.
static uint64_t drain_leaf(void* arg) {
    worker* w = arg;
    for (unsigned spins = 0;; spins++) {
        if (free_one(w)) {
            spins = 0;
            continue;
        }
        if (atomic_load_explicit(w->upstream_done, memory_order_acquire)) {
            while (free_one(w)) {
            }
            return 0;
        }
        wait_a_little(spins);
    }
}

static void* worker_main(void* arg) {
    worker* w = arg;
    uint64_t acc = 0;
    while (w->todo) {
        uint64_t id = rng_next(&w->rng) % BENCH_STACKS;
        // 16..26 recursion frames + worker_main, the leaf, start_thread and clone3 = 20..30.
        acc += bench_descend(id, 16, xt_leaf, w);
    }
    atomic_store_explicit(&w->done, 1, memory_order_release);
    acc += bench_descend(rng_next(&w->rng) % BENCH_STACKS, 16, drain_leaf, w);
    bench_sink = acc;
    return NULL;
}

int main(int argc, char** argv) {
    int nthreads = argc > 1 ? atoi(argv[1]) : 2;
    if (nthreads < 1 || nthreads > 64) {
        fprintf(stderr, "usage: bench_xt [THREADS (1-64, default 2)]\n");
        return 1;
    }
    bench_settings cfg = bench_settings_load();
    // Static storage: the workload's own bookkeeping must not show up as heap events.
    static queue queues[64];
    static worker workers[64];
    uint64_t pairs = cfg.events / 2;
    for (int i = 0; i < nthreads; i++) {
        worker* w = &workers[i];
        w->index = i;
        w->in = &queues[i];
        w->out = &queues[(i + 1) % nthreads];
        w->upstream_done = &workers[(i + nthreads - 1) % nthreads].done;
        w->rng = cfg.seed + 0x9E3779B97F4A7C15ull * (uint64_t)i;
        w->todo = pairs / (uint64_t)nthreads + (i == 0 ? pairs % (uint64_t)nthreads : 0);
        w->work = cfg.work;
    }

    uint64_t t0 = now_ns();
    for (int i = 0; i < nthreads; i++) {
        int err = pthread_create(&workers[i].thread, NULL, worker_main, &workers[i]);
        if (err) {
            fprintf(stderr, "bench_xt: pthread_create: %s\n", strerror(err));
            return 1;
        }
    }
    uint64_t mallocs = 0, frees = 0;
    for (int i = 0; i < nthreads; i++) {
        pthread_join(workers[i].thread, NULL);
        mallocs += workers[i].mallocs;
        frees += workers[i].frees;
    }
    uint64_t elapsed = now_ns() - t0;

    uint64_t npairs = mallocs ? mallocs : 1;
    printf("bench_xt: threads=%d mallocs=%llu frees=%llu events=%llu elapsed_ns=%llu "
           "ns_per_pair=%.1f work=%u\n",
           nthreads, (unsigned long long)mallocs, (unsigned long long)frees,
           (unsigned long long)(mallocs + frees), (unsigned long long)elapsed,
           (double)elapsed / (double)npairs, cfg.work);
    return 0;
}
