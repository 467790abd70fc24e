// SPDX-License-Identifier: MIT
// A library dlopen'ed with RTLD_DEEPBIND (deepbind.c): its references bind in its own scope
// first, to libc's functions. 1000 malloc(333) freed; 1000 calloc(1, 444) grown by realloc
// to 4444 and freed; 10 malloc(555) kept; then its dependency's work (deepbind_dep.c).
#include <stdlib.h>

void deepbind_dep_work(void);
void deepbind_lib_work(void);

static void* volatile kept[10];

void deepbind_lib_work(void) {
    for (int i = 0; i < 1000; i++) {
        void* volatile p = malloc(333);
        free(p);
    }
    for (int i = 0; i < 1000; i++) {
        void* volatile p = calloc(1, 444);
        p = realloc(p, 4444);
        free(p);
    }
    for (int i = 0; i < 10; i++)
        kept[i] = malloc(555);
    deepbind_dep_work();
}
