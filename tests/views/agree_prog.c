// SPDX-License-Identifier: MIT
// A traced program for views_agree_test.py, whose functions allocate known bytes (built
// -O0 -fno-inline with frame pointers, no stdio so nothing else allocates under main):
//   leaky: 777, never freed
//   scratch: 250000, freed at once
//   big_table: 400000
//   load_users -> xalloc: 3 x 30000; load_groups -> xalloc: 2 x 20000 (xalloc, named
//     like an allocator and called from two functions, is a wrapper to stats)
//   deep(150) -> deep(149) -> ... -> deep(0), each level calling small_leaf: 24 bytes,
//     151 in all, each stack narrower than the flame graph's 1/10000 of the peak
//   -- the peak: 777 + 400000 + 130000 + 3624 = 534401 bytes live
//   then everything but leaky's block is freed.
#include <stdlib.h>
#include <string.h>

#define DEPTH 150

static char* table;
static char* users[3];
static char* groups[2];
static char* leaves[DEPTH + 1];
static char* lost;

__attribute__((noinline)) static char* xalloc(size_t n) {
    char* p = malloc(n);
    if (p)
        memset(p, 1, n);
    return p;
}

__attribute__((noinline)) static void leaky(void) {
    lost = malloc(777);
}

__attribute__((noinline)) static void scratch(void) {
    char* volatile p = malloc(250000);
    free(p);
}

__attribute__((noinline)) static void big_table(void) {
    table = malloc(400000);
}

__attribute__((noinline)) static void load_users(void) {
    for (int i = 0; i < 3; i++)
        users[i] = xalloc(30000);
}

__attribute__((noinline)) static void load_groups(void) {
    for (int i = 0; i < 2; i++)
        groups[i] = xalloc(20000);
}

__attribute__((noinline)) static void small_leaf(int k) {
    leaves[k] = malloc(24);
}

__attribute__((noinline)) static void deep(int k) {
    small_leaf(k);
    if (k > 0)
        deep(k - 1);
}

int main(void) {
    leaky();
    scratch();
    big_table();
    load_users();
    load_groups();
    deep(DEPTH);
    free(table);
    for (int i = 0; i < 3; i++)
        free(users[i]);
    for (int i = 0; i < 2; i++)
        free(groups[i]);
    for (int i = 0; i <= DEPTH; i++)
        free(leaves[i]);
    return lost ? 0 : 1;
}
