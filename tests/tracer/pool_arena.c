// SPDX-License-Identifier: MIT
// A pool allocator annotated with memtrace.h, with known truth: a 1 MiB arena from malloc,
// ten 10,000 B blocks reported in it (100,000 B, the first at the arena's base address),
// reported free, then the arena freed. The heap's peak is 1,048,576 + 100,000 = 1,148,576 B
// (heaptrack counts its annotations the same way); every block is allocated by pool_alloc.
// `pool_arena NAME` names the pool's heap NAME first; `pool_arena NAME keep` frees nothing,
// the arena held by a global until the end (the leak scan's "still reachable").
#include "memtrace.h"

#include <stdlib.h>
#include <string.h>

#define ARENA (1 << 20)
#define BLOCKS 10
#define BLOCK 10000

static char* arena;
static size_t used;

__attribute__((noinline)) static void* pool_alloc(size_t n) {
    void* p = arena + used;
    used += n;
    memtrace_report_alloc(p, n);
    return p;
}

__attribute__((noinline)) static void pool_free(void* p) {
    memtrace_report_free(p);
}

int main(int argc, char** argv) {
    if (argc > 1)
        memtrace_report_heap_name(argv[1]);
    arena = malloc(ARENA);
    if (!arena)
        return 1;
    void* blocks[BLOCKS];
    for (int i = 0; i < BLOCKS; i++)
        blocks[i] = pool_alloc(BLOCK);
    if (argc > 2 && !strcmp(argv[2], "keep"))
        return 0;
    for (int i = 0; i < BLOCKS; i++)
        pool_free(blocks[i]);
    free(arena);
    return 0;
}
