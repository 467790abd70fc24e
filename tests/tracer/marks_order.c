// SPDX-License-Identifier: MIT
// Marks between heap calls, as close together as a program can make them: mark i, then a
// malloc(24) and its free, ROUNDS times, then a last mark. Each allocation's time must lie
// between its two marks (check_marks_order.py).
#include "memtrace.h"

#include <stdio.h>
#include <stdlib.h>

#define ROUNDS 20000

int main(void) {
    void* volatile sink;
    for (int i = 0; i < ROUNDS; i++) {
        memtrace_mark("m");
        sink = malloc(24);
        free(sink);
    }
    memtrace_mark("m");
    printf("rounds %d\n", ROUNDS);
    return 0;
}
