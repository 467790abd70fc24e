// SPDX-License-Identifier: MIT
// A program at rest: one block, then 1 s of sleep, then 4 MiB touched (RSS grows), 0.3 s of
// sleep, and its end. It says "resting" when the first sleep begins and "awake" after it.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static void rest(long ms) {
    struct timespec t = {ms / 1000, (ms % 1000) * 1000000};
    while (nanosleep(&t, &t) != 0)
        ;
}

static char* volatile kept; // the blocks are used: the compiler keeps their malloc and free

int main(void) {
    char* small = malloc(100);
    kept = small;
    printf("resting\n");
    fflush(stdout);
    rest(1000);
    char* big = malloc(4 << 20);
    memset(big, 1, 4 << 20);
    kept = big;
    printf("awake\n");
    fflush(stdout);
    rest(300);
    free(big);
    free(small);
    return 0;
}
