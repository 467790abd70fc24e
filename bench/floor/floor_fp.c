// SPDX-License-Identifier: MIT
// The floor of full-stack tracing (issue 14's "bare shim"): an LD_PRELOAD library whose
// malloc, calloc, realloc and free walk the caller's frame pointers into a per-thread array
// and record nothing. A tracer that also writes every event can only be slower, so its
// ratio to native on a workload bounds what any target for that workload can ask. Built for
// bench/run.sh (mode `floor-fp`), run on the _fp workloads, whose frames it can follow; on
// the others its walk stops early and costs less than a full stack would.
#define _GNU_SOURCE
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#define MAX_FRAMES 256

void* __libc_malloc(size_t size);
void* __libc_calloc(size_t n, size_t size);
void* __libc_realloc(void* p, size_t size);
void __libc_free(void* p);

static __thread uintptr_t stack_lo, stack_hi;
static __thread int busy; // pthread_getattr_np allocates: no walk meanwhile
static __thread uintptr_t pcs[MAX_FRAMES];
static __thread volatile int depth; // the walk's result, kept so it is not optimised away

// The thread's stack bounds, so that a frame pointer is followed only inside them.
static int know_stack(void) {
    if (stack_hi)
        return 1;
    if (busy)
        return 0;
    busy = 1;
    pthread_attr_t a;
    void* base;
    size_t size;
    if (pthread_getattr_np(pthread_self(), &a) == 0) {
        if (pthread_attr_getstack(&a, &base, &size) == 0) {
            stack_lo = (uintptr_t)base;
            stack_hi = (uintptr_t)base + size;
        }
        pthread_attr_destroy(&a);
    }
    busy = 0;
    return stack_hi != 0;
}

static __attribute__((noinline)) void walk(void) {
    if (!know_stack())
        return;
    const uintptr_t* fp = __builtin_frame_address(0);
    int n = 0;
    while (n < MAX_FRAMES) {
        uintptr_t at = (uintptr_t)fp;
        if (at < stack_lo || at + 16 > stack_hi || (at & 7))
            break;
        uintptr_t pc = fp[1];
        if (!pc)
            break;
        pcs[n++] = pc;
        const uintptr_t* next = (const uintptr_t*)fp[0];
        if (next <= fp)
            break;
        fp = next;
    }
    depth = n;
}

void* malloc(size_t size) {
    void* p = __libc_malloc(size);
    walk();
    return p;
}

void* calloc(size_t n, size_t size) {
    void* p = __libc_calloc(n, size);
    walk();
    return p;
}

void* realloc(void* old, size_t size) {
    void* p = __libc_realloc(old, size);
    walk();
    return p;
}

void free(void* p) {
    __libc_free(p);
}
