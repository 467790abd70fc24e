// SPDX-License-Identifier: MIT
// A traced program for the capture trust tests: ROUNDS rounds of PER_ROUND malloc/free
// pairs (one block in 1000 kept: a known leak), with a short pause after each round so
// the tracer commits several times along the way whatever the machine's speed.
// Usage: paced_churn ROUNDS PER_ROUND PAUSE_US
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static void* volatile sink;

int main(int argc, char** argv) {
    if (argc != 4) {
        fprintf(stderr, "usage: paced_churn ROUNDS PER_ROUND PAUSE_US\n");
        return 1;
    }
    long rounds = atol(argv[1]), per_round = atol(argv[2]), pause_us = atol(argv[3]);
    long kept = 0;
    for (long r = 0; r < rounds; r++) {
        for (long i = 0; i < per_round; i++) {
            void* p = malloc((size_t)(i % 512) + 1);
            sink = p;
            if (i % 1000 == 0)
                kept++;
            else
                free(p);
        }
        struct timespec ts = {0, pause_us * 1000};
        nanosleep(&ts, NULL);
    }
    printf("kept %ld blocks\n", kept);
    return 0;
}
