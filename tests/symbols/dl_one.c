// SPDX-License-Identifier: MIT
// First of two dlopen subjects (dl_two.c has the same layout): loaded, called, closed, so the
// second lands at the same address; the capture must keep each one's names apart.
#include <stdlib.h>

__attribute__((visibility("default"), noinline)) void* dl_one_alloc(void);

__attribute__((visibility("default"), noinline)) void* dl_one_alloc(void) {
    void* p = malloc(1007);
    __asm__ volatile("" ::"r"(p) : "memory");
    return p;
}
