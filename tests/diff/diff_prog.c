// SPDX-License-Identifier: MIT
// A program with known differences between `diff_prog 1` (base) and `diff_prog 2` (new),
// for tests/diff/diff_test.py. Every site is a function of its own (noinline); all blocks
// are live together at the program's peak (the point before the frees at the end).
//   grow_site:  holds 1 MiB in run 1, 2 MiB in run 2 (one block, freed before exit)
//   leak_site:  leaks 4 KiB in run 1, 8 KiB in run 2 (one block, never freed)
//   same_site:  1000 bytes in both runs (freed)
//   old_site:   3000 bytes in run 1 only (freed)
//   new_site:   5000 bytes in run 2 only (freed)
//   churn_site: 100 x 64 bytes in run 1, 300 x 64 in run 2, each freed at once
// Built with DIFF_PROG_MOVED, a function before the sites moves their addresses.
#include <stdlib.h>
#include <string.h>

// The use keeps each call from becoming a tail call; a macro, not a function, so each
// site is the function that calls malloc.
#define KEEP(p, n, fill)                                                                           \
    do {                                                                                           \
        (p) = malloc(n);                                                                           \
        if (p)                                                                                     \
            memset((p), (fill), (n));                                                              \
    } while (0)

#ifdef DIFF_PROG_MOVED
// Moves the code after it: the build "elsewhere" has other addresses for every site.
__attribute__((noinline, used)) int moved_padding(int x) {
    static volatile int sink[64];
    for (int i = 0; i < 64; i++)
        sink[i] = x * i + sink[(i * 7) % 64];
    return sink[x % 64];
}
#endif

__attribute__((noinline)) void* grow_site(int run) {
    void* p;
    KEEP(p, (size_t)run << 20, 1);
    return p;
}

__attribute__((noinline)) void* leak_site(int run) {
    void* p;
    KEEP(p, (size_t)run * 4096, 2);
    return p;
}

__attribute__((noinline)) void* same_site(void) {
    void* p;
    KEEP(p, 1000, 3);
    return p;
}

__attribute__((noinline)) void* old_site(void) {
    void* p;
    KEEP(p, 3000, 4);
    return p;
}

__attribute__((noinline)) void* new_site(void) {
    void* p;
    KEEP(p, 5000, 5);
    return p;
}

__attribute__((noinline)) void churn_site(void) {
    char* volatile p = malloc(64);
    free(p);
}

int main(int argc, char** argv) {
    int run = argc > 1 ? atoi(argv[1]) : 1;
    if (run != 1 && run != 2)
        return 2;
    for (int i = 0; i < 100 * (2 * run - 1); i++)
        churn_site();
    void* grow = grow_site(run);
    static void* volatile leaked;
    leaked = leak_site(run);
    void* same = same_site();
    void* other = run == 1 ? old_site() : new_site();
    int ok = grow && leaked && same && other;
    free(other);
    free(same);
    free(grow);
    return ok ? 0 : 1;
}
