// SPDX-License-Identifier: MIT
// Three allocating functions, each calling malloc from several places (so from several
// return addresses), for the stripped-binary test: run as built and as a fully stripped
// copy, the allocations must group into the same functions either way.
#include <stdlib.h>

void* volatile sink;

__attribute__((noinline)) static void small(int n) {
    for (int i = 0; i < n; i++) {
        free(sink);
        sink = malloc(16);
        free(sink);
        sink = malloc(24);
    }
}

__attribute__((noinline)) static void medium(int n) {
    for (int i = 0; i < n; i++) {
        free(sink);
        sink = i % 2 ? malloc(100) : malloc(200);
        free(sink);
        sink = malloc(300);
        free(sink);
        sink = calloc(1, 400);
    }
}

__attribute__((noinline)) static void large(int n) {
    for (int i = 0; i < n; i++) {
        free(sink);
        sink = malloc(5000);
    }
}

int main(void) {
    small(7);
    medium(11);
    large(13);
    free(sink);
    return 0;
}
