// SPDX-License-Identifier: MIT
// A library with an allocator of its own (malloc and free from a static arena), dlopen'ed
// with RTLD_DEEPBIND: its calls bind to its own functions and must stay so (pointed at the
// tracer's hooks, its blocks would reach libc's free). 100 malloc(666), each freed.
#include <stddef.h>

void* malloc(size_t size);
void free(void* p);
int deepbind_own_work(void);

static char arena[1 << 17] __attribute__((aligned(16)));
static size_t used;

void* malloc(size_t size) {
    size = (size + 15) & ~(size_t)15;
    if (size > sizeof arena - used)
        return NULL;
    used += size;
    return arena + used - size;
}

void free(void* p) {
    (void)p;
}

int deepbind_own_work(void) {
    int ok = 0;
    for (int i = 0; i < 100; i++) {
        void* volatile p = malloc(666);
        ok += p != NULL;
        free(p);
    }
    return ok;
}
