// SPDX-License-Identifier: MIT
// Makes 23 allocations, then dies: abort() (a), a real segmentation fault (s), or
// raise(SIGSEGV) (k). Under the tracer the capture must still hold every allocation.
#include <signal.h>
#include <stdlib.h>

void* volatile sink;

int main(int argc, char** argv) {
    for (int i = 0; i < 23; i++)
        sink = malloc(100 + (size_t)i);
    char how = argc > 1 ? argv[1][0] : 'a';
    if (how == 's') {
        volatile int* volatile nowhere = NULL;
        *nowhere = 1;
    }
    if (how == 'k')
        raise(SIGSEGV);
    abort();
}
