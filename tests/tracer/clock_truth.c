// SPDX-License-Identifier: MIT
// Heap calls against the program's own clock: ROUNDS times, CLOCK_MONOTONIC read just before
// and just after a malloc(4321), then a pause of 0-2 ms (so that the writer converts the
// events over many calibration points and passes), and at the end each pair printed. One
// offset must put the capture's time of every such allocation between its pair
// (check_clock_truth.py). The pauses are pseudo-random with a fixed seed.
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define ROUNDS 400
#define SIZE 4321

static int64_t before[ROUNDS], after[ROUNDS];

static int64_t now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int main(void) {
    void* volatile sink;
    uint32_t rng = 12345;
    for (int i = 0; i < ROUNDS; i++) {
        before[i] = now();
        sink = malloc(SIZE);
        after[i] = now();
        free(sink);
        rng = rng * 1103515245u + 12345u;
        struct timespec pause = {0, (long)((rng >> 8) % 2000000)};
        nanosleep(&pause, NULL);
    }
    for (int i = 0; i < ROUNDS; i++)
        printf("%lld %lld\n", (long long)before[i], (long long)after[i]);
    return 0;
}
