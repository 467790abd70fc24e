// SPDX-License-Identifier: MIT
// Second dlopen subject: same size and layout as dl_one.c, different names and size.
#include <stdlib.h>

__attribute__((visibility("default"), noinline)) void* dl_two_alloc(void);

__attribute__((visibility("default"), noinline)) void* dl_two_alloc(void) {
    void* p = malloc(1008);
    __asm__ volatile("" ::"r"(p) : "memory");
    return p;
}
