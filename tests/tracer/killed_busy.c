// SPDX-License-Identifier: MIT
// Threads that allocate without pause until the program is killed (check_killed_busy.py):
// each thread makes blocks of SIZE + 0..15 bytes and frees them, and counts each block in a
// file shared with the checker once malloc has returned. After a SIGKILL the capture must
// hold every counted block (and at most one more per thread: made, not yet counted).
// Usage: killed_busy THREADS COUNTS_FILE; prints "ready PID" once every thread runs.
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

enum { SIZE = 4000, MAX_THREADS = 64 };
static _Atomic uint64_t* counts; // one per thread, in the shared file
static _Atomic int running;

static void* allocate(void* arg) {
    _Atomic uint64_t* count = arg;
    atomic_fetch_add(&running, 1);
    for (uint64_t i = 0;; i++) {
        char* volatile p = malloc(SIZE + i % 16); // volatile: the pair is not optimized away
        atomic_store_explicit(count, i + 1, memory_order_relaxed);
        free(p);
    }
    return NULL;
}

int main(int argc, char** argv) {
    int threads = argc == 3 ? atoi(argv[1]) : 0;
    int fd = argc == 3 ? open(argv[2], O_RDWR | O_CREAT | O_TRUNC, 0600) : -1;
    size_t len = MAX_THREADS * sizeof *counts;
    if (threads < 1 || threads > MAX_THREADS || fd < 0 || ftruncate(fd, (off_t)len) != 0) {
        fprintf(stderr, "usage: killed_busy THREADS(1-%d) COUNTS_FILE\n", MAX_THREADS);
        return 2;
    }
    counts = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (counts == MAP_FAILED)
        return 2;
    for (int t = 0; t < threads; t++) {
        pthread_t id;
        if (pthread_create(&id, NULL, allocate, (void*)&counts[t]) != 0)
            return 2;
    }
    while (atomic_load(&running) < threads)
        usleep(1000);
    printf("ready %d\n", (int)getpid());
    fflush(stdout);
    for (;;)
        pause();
}
