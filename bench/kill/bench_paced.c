// SPDX-License-Identifier: MIT
// A workload for bench/kill/kill.py: THREADS threads, each making one malloc (and the free of
// a block before) every PERIOD_US microseconds, busy-waiting between them, or as fast as they
// can with PERIOD_US 0. Each thread counts what it made in a shared file mapping, which
// outlives a SIGKILL, and the main thread writes the total made every millisecond into a
// timeline there: what a kill lost is the time from the moment the total was what the
// capture holds to the kill.
// The main thread never allocates after the start.
// Usage: bench_paced COUNT_FILE [PERIOD_US] [THREADS]
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

// The file: word 0 is the number of timeline entries written; thread i counts at word
// 8 * (1 + i) (a cache line each); the timeline starts at byte TIMELINE, one (CLOCK_MONOTONIC
// ns, total made) pair each millisecond.
#define MAX_THREADS 64
#define TIMELINE 8192
#define ENTRIES (1 << 20)
#define FILE_SIZE (TIMELINE + ENTRIES * 16)

static _Atomic uint64_t* shared;
static int64_t period, start;

static int64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void* work(void* arg) {
    _Atomic uint64_t* made = &shared[8 * (1 + (uintptr_t)arg)];
    void* pool[64] = {0};
    for (uint64_t i = 1;; i++) {
        unsigned k = i % 64;
        free(pool[k]);
        pool[k] = malloc(period ? 64 : 16 + k * 8);
        atomic_store_explicit(made, i, memory_order_release);
        while (period && now_ns() < start + (int64_t)i * period)
            ;
    }
    return NULL;
}

int main(int argc, char** argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: bench_paced COUNT_FILE [PERIOD_US] [THREADS]\n");
        return 2;
    }
    period = (argc > 2 ? atoi(argv[2]) : 100) * 1000LL;
    int threads = argc > 3 ? atoi(argv[3]) : 1;
    if (threads < 1 || threads > MAX_THREADS) {
        fprintf(stderr, "bench_paced: 1 to %d threads\n", MAX_THREADS);
        return 2;
    }
    int fd = open(argv[1], O_RDWR | O_CREAT | O_TRUNC, 0600);
    if (fd < 0 || ftruncate(fd, FILE_SIZE) != 0) {
        perror(argv[1]);
        return 1;
    }
    shared = mmap(NULL, FILE_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (shared == MAP_FAILED) {
        perror("mmap");
        return 1;
    }
    start = now_ns();
    for (int i = 0; i < threads; i++) {
        pthread_t t;
        if (pthread_create(&t, NULL, work, (void*)(uintptr_t)i) != 0) {
            perror("pthread_create");
            return 1;
        }
    }
    _Atomic uint64_t* timeline = &shared[TIMELINE / 8];
    for (uint64_t n = 0; n < ENTRIES; n++) {
        uint64_t total = 0;
        for (int i = 0; i < threads; i++)
            total += atomic_load_explicit(&shared[8 * (1 + i)], memory_order_acquire);
        atomic_store(&timeline[2 * n], (uint64_t)now_ns());
        atomic_store(&timeline[2 * n + 1], total);
        atomic_store(&shared[0], n + 1);
        struct timespec ms = {0, 1000000};
        nanosleep(&ms, NULL);
    }
    return 0;
}
