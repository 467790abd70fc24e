// SPDX-License-Identifier: MIT
// The stack-making library of test_unwind_cache (unwind_cache_lib.c).
#ifndef UNWIND_CACHE_LIB_H
#define UNWIND_CACHE_LIB_H

#include <stdint.h>

typedef void (*uc_cb)(void* ctx);

typedef struct uc_job {
    uc_cb cb; // called at the bottom of every stack
    void* ctx;
    unsigned iterations, paths;
    uint64_t seed;
    unsigned calls; // set by uc_run: how many times cb was called
} uc_job;

// How many times the bottom of a path calls back (1 to 3).
static inline unsigned uc_leaf_calls(uint64_t path) {
    return 1 + (unsigned)(path >> 62) % 3;
}

// A thread's start routine: `iterations` stacks, each one of `paths` at random.
__attribute__((visibility("default"))) void* uc_run(void* job);

#endif
