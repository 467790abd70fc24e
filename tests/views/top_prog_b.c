// SPDX-License-Identifier: MIT
// The second file of top_prog: a static function with the same name as one in top_prog.c,
// so two functions share a name and differ by file (top_test.py names them apart).
#include <stdlib.h>

__attribute__((noinline)) static void tidy(void) {
    char* volatile p = malloc(20);
    free(p);
}

__attribute__((noinline)) void other_tidy(void) {
    tidy();
}
