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
} uc_job;

// A thread's start routine: `iterations` stacks, each one of `paths` at random.
__attribute__((visibility("default"))) void* uc_run(void* job);

#endif
