// SPDX-License-Identifier: MIT
// A program killed by a signal while it waits: 1000 blocks of 100-109 B made by make_blocks,
// every other one freed, then "ready PID" and a wait for the signal. No exit handler runs;
// the capture must still hold all of it (check_killed.py).
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

enum { BLOCKS = 1000 };
static void* kept[BLOCKS];

__attribute__((noinline)) static void make_blocks(void) {
    for (int i = 0; i < BLOCKS; i++) {
        kept[i] = malloc(100 + (size_t)(i % 10));
        if (i % 2) {
            free(kept[i]);
            kept[i] = NULL;
        }
    }
}

int main(void) {
    make_blocks();
    printf("ready %d\n", (int)getpid());
    fflush(stdout);
    for (;;)
        pause();
}
