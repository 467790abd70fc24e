// SPDX-License-Identifier: MIT
// The smallest traced program: one malloc and one free, then exit. bench/short.py runs it
// hundreds of times natively and traced to measure what tracing adds to each process.
#include <stdlib.h>

int main(void) {
    char* volatile p = malloc(64);
    free(p);
    return 0;
}
