// SPDX-License-Identifier: MIT
// Threads that allocate without pause until the program is killed (check_killed_busy.py):
// each thread makes blocks of SIZE + 0..15 bytes and frees them, and counts each block in a
// file shared with the checker once malloc has returned. After a SIGKILL the capture must
// hold every counted block (and at most one more per thread: made, not yet counted).
// With `new-stacks`, each block comes from a call stack never seen before (the tracer's
// callsite table grows at every call, under its lock), as a program that forks children off
// a large one keeps writing its parent's stacks.
// Usage: killed_busy THREADS COUNTS_FILE [new-stacks]; prints "ready PID" once every thread
// runs.
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

enum { SIZE = 4000, MAX_THREADS = 64 };
static _Atomic uint64_t* counts; // one per thread, in the shared file
static _Atomic int running;
static int new_stacks;

enum { DEPTH = 24 }; // 2^24 stacks: more than a run makes

static char* step(uint64_t path, int depth, size_t size);
static volatile int lefts, rights;

// Two frames with return addresses of their own (the counts keep the compiler from folding
// them into one, or the call into a jump): the path of calls names the block.
__attribute__((noinline)) static char* left(uint64_t path, int depth, size_t size) {
    char* p = step(path, depth, size);
    lefts++;
    return p;
}

__attribute__((noinline)) static char* right(uint64_t path, int depth, size_t size) {
    char* p = step(path, depth, size);
    rights++;
    return p;
}

__attribute__((noinline)) static char* step(uint64_t path, int depth, size_t size) {
    if (!depth)
        return malloc(size);
    return path & 1 ? left(path >> 1, depth - 1, size) : right(path >> 1, depth - 1, size);
}

static void* allocate(void* arg) {
    _Atomic uint64_t* count = arg;
    atomic_fetch_add(&running, 1);
    for (uint64_t i = 0;; i++) {
        // volatile: the pair is not optimized away
        char* volatile p = new_stacks ? step(i, DEPTH, SIZE + i % 16) : malloc(SIZE + i % 16);
        atomic_store_explicit(count, i + 1, memory_order_relaxed);
        free(p);
    }
    return NULL;
}

int main(int argc, char** argv) {
    bool args = argc == 3 || (argc == 4 && !strcmp(argv[3], "new-stacks"));
    new_stacks = argc == 4;
    int threads = args ? atoi(argv[1]) : 0;
    int fd = args ? open(argv[2], O_RDWR | O_CREAT | O_TRUNC, 0600) : -1;
    size_t len = MAX_THREADS * sizeof *counts;
    if (threads < 1 || threads > MAX_THREADS || fd < 0 || ftruncate(fd, (off_t)len) != 0) {
        fprintf(stderr, "usage: killed_busy THREADS(1-%d) COUNTS_FILE [new-stacks]\n", MAX_THREADS);
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
