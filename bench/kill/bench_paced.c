// SPDX-License-Identifier: MIT
// A paced workload for bench/kill/kill.py: one malloc (and the free of the block before)
// every PERIOD_US microseconds, busy-waiting between them, and after each malloc the number
// made so far in a shared file mapping, which outlives a SIGKILL. What a kill lost is that
// number minus the allocations in the capture.
// Usage: bench_paced COUNT_FILE [PERIOD_US]
#include <fcntl.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

static int64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int main(int argc, char** argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: bench_paced COUNT_FILE [PERIOD_US]\n");
        return 2;
    }
    int64_t period = (argc > 2 ? atoi(argv[2]) : 100) * 1000LL;
    int fd = open(argv[1], O_RDWR | O_CREAT | O_TRUNC, 0600);
    if (fd < 0 || ftruncate(fd, 4096) != 0) {
        perror(argv[1]);
        return 1;
    }
    _Atomic uint64_t* made = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (made == MAP_FAILED) {
        perror("mmap");
        return 1;
    }
    void* prev = NULL;
    int64_t start = now_ns();
    for (uint64_t i = 1;; i++) {
        void* p = malloc(64);
        free(prev);
        prev = p;
        atomic_store_explicit(made, i, memory_order_release);
        while (now_ns() < start + (int64_t)i * period)
            ;
    }
}
