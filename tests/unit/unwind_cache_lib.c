// SPDX-License-Identifier: MIT
// Deep, varied stacks for test_unwind_cache, in a library of their own: the test executable
// holds the tracer's code, whose frames the unwinder drops, so the stacks it checks must be
// made of other modules' frames from the thread's start down. Built without frame pointers;
// the steps have frames of different kinds (small, large, alloca with RBP as frame base).
#include "unwind_cache_lib.h"

#include <alloca.h>
#include <stdint.h>
#include <string.h>

static uint64_t descend(const uc_job* j, uint64_t path, int level, int depth);

#define UC_STEP(n, k)                                                                              \
    __attribute__((noinline, noclone)) static uint64_t step##n(const uc_job* j, uint64_t path,     \
                                                               int level, int depth) {             \
        return descend(j, path, level + 1, depth) * (k) + (uint64_t)level;                         \
    }
UC_STEP(0, 3)
UC_STEP(1, 5)

// A large frame.
__attribute__((noinline, noclone)) static uint64_t step2(const uc_job* j, uint64_t path, int level,
                                                         int depth) {
    volatile char buf[700];
    buf[level % 700] = (char)path;
    return descend(j, path, level + 1, depth) * 7 + (uint64_t)buf[level % 700];
}

// A frame whose size varies: RBP is its frame base.
__attribute__((noinline, noclone)) static uint64_t step3(const uc_job* j, uint64_t path, int level,
                                                         int depth) {
    size_t n = 16 + (size_t)(level * 24) % 64;
    char* p = alloca(n);
    memset(p, level, n);
    __asm__ volatile("" : : "r"(p) : "memory");
    return descend(j, path, level + 1, depth) * 11 + (uint64_t)p[n - 1];
}

__attribute__((noinline, noclone)) static uint64_t descend(const uc_job* j, uint64_t path,
                                                           int level, int depth) {
    if (level >= depth) {
        // A leaf that allocates in a loop: the same stack walked again right after itself.
        for (unsigned r = 0; r < uc_leaf_calls(path); r++)
            j->cb(j->ctx);
        return 1;
    }
    switch ((path >> (2 * (level % 30))) & 3) {
    case 0:
        return step0(j, path, level, depth) + 1;
    case 1:
        return step1(j, path, level, depth) + 2;
    case 2:
        return step2(j, path, level, depth) + 3;
    default:
        return step3(j, path, level, depth) + 4;
    }
}

static uint64_t rng_next(uint64_t* s) {
    uint64_t x = *s;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *s = x;
    return x * 0x2545F4914F6CDD1Dull;
}

volatile uint64_t uc_sink;

void* uc_run(void* arg) {
    uc_job* j = arg;
    uint64_t s = j->seed | 1, acc = 0;
    for (unsigned i = 0; i < j->iterations; i++) {
        // Paths in groups of 16 share their depth and all but their two outermost levels:
        // stacks alike from the leaf up, apart only far from it.
        uint64_t id = rng_next(&s) % j->paths;
        uint64_t path = ((id / 16 + 1) * 0x9E3779B97F4A7C15ull & ~0xfull) | (id % 16);
        // 2..61 frames deep: most fit a kept walk, some are too deep for one.
        int depth = 2 + (int)((path >> 40) % 60);
        acc += descend(j, path, 0, depth);
        j->calls += uc_leaf_calls(path);
    }
    uc_sink = acc;
    return NULL;
}
