// SPDX-License-Identifier: MIT
// A program whose main thread sleeps while 4 threads allocate, for attach/sleep_test.py: an
// attach and a detach made during the sleep must not shorten it. Prints "sleeping" when the
// threads run, then "slept SECONDS left N" (the sleep's length on the monotonic clock and what
// sleep() returned) and exits 0, whatever the sleep did: the test judges.
//   sleep_prog SECONDS
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#define THREADS 4

static atomic_int stop;

// Blocks from stacks of varying depth: new stacks keep the tracer's writer busy, so the
// detach waits for it.
static __attribute__((noinline)) void* alloc_at_depth(int depth, size_t size) {
    if (depth > 0) {
        void* p = alloc_at_depth(depth - 1, size);
        __asm__ volatile("" ::: "memory"); // not a tail call
        return p;
    }
    return malloc(size);
}

static void* work(void* arg) {
    unsigned seed = (unsigned)(size_t)arg;
    while (!atomic_load(&stop))
        free(alloc_at_depth(rand_r(&seed) % 20, 1 + rand_r(&seed) % 4096));
    return NULL;
}

int main(int argc, char** argv) {
    unsigned seconds = argc > 1 ? (unsigned)atoi(argv[1]) : 10;
    pthread_t t[THREADS];
    for (int i = 0; i < THREADS; i++)
        if (pthread_create(&t[i], NULL, work, (void*)(size_t)(i + 1)) != 0)
            return 1;
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    printf("sleeping\n");
    fflush(stdout);
    unsigned left = sleep(seconds);
    clock_gettime(CLOCK_MONOTONIC, &b);
    atomic_store(&stop, 1);
    for (int i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);
    printf("slept %.3f left %u\n", (double)(b.tv_sec - a.tv_sec) + (b.tv_nsec - a.tv_nsec) / 1e9,
           left);
    return 0;
}
