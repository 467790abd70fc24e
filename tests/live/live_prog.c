// SPDX-License-Identifier: MIT
// A traced program for memreport live: allocates known bytes in phases and, after each,
// says so on stdout and waits for a line on stdin, so the test reads the capture while
// the program is still running, at a known state (no sleeps).
//   phase 1: phase_one() keeps 10 blocks of 100000 bytes
//   phase 2: phase_two() keeps 4 blocks of 250000 bytes; 5 of phase 1's are freed
//   end:     everything is freed; exit status 3 (to check it is kept)
// Only read(2)/write(2): stdio would allocate buffers of its own.
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void* one[10];
static void* two[4];

__attribute__((noinline)) static void phase_one(void) {
    for (int i = 0; i < 10; i++) {
        one[i] = malloc(100000);
        memset(one[i], 1, 100000);
    }
}

__attribute__((noinline)) static void phase_two(void) {
    for (int i = 0; i < 4; i++) {
        two[i] = malloc(250000);
        memset(two[i], 2, 250000);
    }
    for (int i = 0; i < 5; i++) {
        free(one[i]);
        one[i] = NULL;
    }
}

static void say(const char* s) {
    if (write(1, s, strlen(s)) < 0)
        _exit(1);
}

// Waits for the test's next line (EOF: go on).
static void wait_line(void) {
    char c;
    while (read(0, &c, 1) == 1 && c != '\n') {
    }
}

int main(void) {
    phase_one();
    say("phase1\n");
    wait_line();
    phase_two();
    say("phase2\n");
    wait_line();
    for (int i = 0; i < 10; i++)
        free(one[i]);
    for (int i = 0; i < 4; i++)
        free(two[i]);
    say("end\n");
    return 3;
}
