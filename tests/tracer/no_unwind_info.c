// SPDX-License-Identifier: MIT
// Code without unwind info that keeps frame pointers (built with -fno-asynchronous-unwind-tables
// -fno-omit-frame-pointer, as JIT code and some embedded builds are), called from code with
// unwind info (no_unwind_info_main.c). noinfo_paths allocates from PATHS paths, each a fixed
// sequence of f0..f3 calls, ALLOCS times per path in a loop at the bottom, the paths taken in
// turn so that a path's stack is walked again after others. It prints each path as
// "path ID f.. f.." (outermost first); path ID allocates 1000 + ID bytes.
#include "no_unwind_info.h"

#include <stdio.h>
#include <stdlib.h>

#define PATHS 24
#define ALLOCS 40
#define ROUNDS 4 // each path is taken ROUNDS times, ALLOCS / ROUNDS allocations each time

static void* blocks[PATHS * ALLOCS];
static int nblocks;
static volatile int sink;

static int path_depth(int id) {
    return 3 + id % 5;
}

// The function called at level `level` of path id: two bits of a hash of the id.
static int path_step(int id, int level) {
    unsigned h = (unsigned)(id + 1) * 2654435761u;
    return (int)(h >> (2 * level + 8)) & 3;
}

static void descend(int id, int level);

__attribute__((noinline, noclone)) static void leaf(int id) {
    for (int i = 0; i < ALLOCS / ROUNDS; i++)
        blocks[nblocks++] = malloc(1000 + (size_t)id);
    sink++;
}

#define STEP(n)                                                                                    \
    __attribute__((noinline, noclone)) static void f##n(int id, int level) {                       \
        descend(id, level + 1);                                                                    \
        sink += n; /* no tail call: the frame stays on the stack */                                \
    }
STEP(0)
STEP(1)
STEP(2)
STEP(3)

__attribute__((noinline, noclone)) static void descend(int id, int level) {
    if (level == path_depth(id))
        leaf(id);
    else
        switch (path_step(id, level)) {
        case 0:
            f0(id, level);
            break;
        case 1:
            f1(id, level);
            break;
        case 2:
            f2(id, level);
            break;
        default:
            f3(id, level);
            break;
        }
    sink++; // no tail call either
}

void noinfo_paths(void) {
    for (int id = 0; id < PATHS; id++) {
        printf("path %d", id);
        for (int level = 0; level < path_depth(id); level++)
            printf(" f%d", path_step(id, level));
        printf("\n");
    }
    fflush(stdout);
    for (int round = 0; round < ROUNDS; round++)
        for (int id = 0; id < PATHS; id++)
            descend(id, 0);
    for (int i = 0; i < nblocks; i++)
        free(blocks[i]);
}

// Called through an indirect call site that also calls code with unwind info. Its locals
// keep its stack pointer below its frame pointer: libunwind's unw_step then takes a wrong one
// for its caller (with SP = RBP it happens to be right).
void* noinfo_callback_block;
void noinfo_callback(int n) {
    volatile char local[64];
    local[0] = (char)n;
    noinfo_callback_block = malloc(2100 + (size_t)n + (size_t)(local[0] - n));
    sink++;
}

// A thread's start routine (start_thread also starts threads with unwind info).
void* noinfo_thread(void* arg) {
    volatile char local[64];
    local[0] = 0;
    void* p = malloc(3100 + (size_t)local[0]);
    sink++;
    free(p);
    return arg;
}
