// SPDX-License-Identifier: MIT
// A traced program for the pprof export test (pprof_test.py), with known sites:
//   inlined_site: make_buffer (always inlined into it) allocates 3 x 12345 bytes, all kept
//   kept_site:    5 x 1000 bytes, kept to the end
//   churn_site:   100 x 64 bytes, each freed at once (allocated, never live at the peak)
#include <stdlib.h>
#include <string.h>

static inline __attribute__((always_inline)) char* make_buffer(size_t n) {
    char* p = malloc(n);
    if (p)
        memset(p, 1, n); // the use keeps the call from becoming a tail call
    return p;
}

__attribute__((noinline)) char* inlined_site(void) {
    return make_buffer(12345);
}

__attribute__((noinline)) char* kept_site(void) {
    char* p = malloc(1000);
    if (p)
        memset(p, 2, 1000);
    return p;
}

__attribute__((noinline)) void churn_site(void) {
    char* volatile p = malloc(64);
    free(p);
}

int main(void) {
    static char* kept[8];
    for (int i = 0; i < 3; i++)
        kept[i] = inlined_site();
    for (int i = 3; i < 8; i++)
        kept[i] = kept_site();
    for (int i = 0; i < 100; i++)
        churn_site();
    return kept[0][0] + kept[7][0] == 3 ? 0 : 1;
}
