// SPDX-License-Identifier: MIT
// Allocations through an xmalloc wrapper from three callers, for tests/reports/e2e_sites.py:
// stats and plot --sites label each row by the caller, not by xmalloc. Every block is kept.
//   build_index   30000 B   1 block
//   load_table     6000 B   3 blocks of 2000
//   arena_alloc     700 B   named like an allocator, but called from main only: keeps its name
//   parse_args      100 B   1 block
#include <stdlib.h>

void* volatile sink[8];

__attribute__((noinline)) void* xmalloc(size_t n) {
    void* p = malloc(n);
    if (!p)
        abort();
    return p;
}

__attribute__((noinline)) void parse_args(void) {
    sink[0] = xmalloc(100);
}

__attribute__((noinline)) void load_table(void) {
    for (int i = 0; i < 3; i++)
        sink[1 + i] = xmalloc(2000);
}

__attribute__((noinline)) void build_index(void) {
    sink[4] = xmalloc(30000);
}

__attribute__((noinline)) void* arena_alloc(size_t n) {
    return malloc(n);
}

int main(void) {
    parse_args();
    load_table();
    build_index();
    sink[5] = arena_alloc(700);
    return 0;
}
