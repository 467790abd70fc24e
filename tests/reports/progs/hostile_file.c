// SPDX-License-Identifier: MIT
// Half of hostile_names.c built with line information, under a file name holding a
// terminal escape sequence (#line sets the name the debug information records).
#include <stdlib.h>

extern void* volatile sink;
void* file_alloc(size_t n);

#line 1 "evil\033[2J.c"
__attribute__((noinline)) void* file_alloc(size_t n) {
    return sink = malloc(n);
}
