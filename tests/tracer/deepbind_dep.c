// SPDX-License-Identifier: MIT
// A dependency of deepbind_lib.c, loaded by its RTLD_DEEPBIND dlopen (so bound the same way):
// 1000 malloc(222), each freed, and 5 malloc(2222) kept.
#include <stdlib.h>

void deepbind_dep_work(void);

static void* volatile kept[5];

void deepbind_dep_work(void) {
    for (int i = 0; i < 1000; i++) {
        void* volatile p = malloc(222);
        free(p);
    }
    for (int i = 0; i < 5; i++)
        kept[i] = malloc(2222);
}
