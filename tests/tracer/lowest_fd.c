// SPDX-License-Identifier: MIT
// open() returns the lowest free descriptor, and programs count on it (a daemon closes 0, 1
// and 2 and opens /dev/null three times). Prints "ready", waits for a line on stdin (the
// driver sends it once the tracer has started), then opens and closes /dev/null N times and
// prints how many opens got another number than the lowest free one.
// Usage: lowest_fd N
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static void* volatile sink;

int main(int argc, char** argv) {
    long n = argc > 1 ? atol(argv[1]) : 0, other = 0;
    sink = malloc(64); // an event for the tracer's first commits
    printf("ready\n");
    fflush(stdout);
    char go[8];
    if (!fgets(go, sizeof go, stdin))
        return 2;
    int lowest = open("/dev/null", O_RDONLY);
    close(lowest);
    for (long i = 0; i < n; i++) {
        int fd = open("/dev/null", O_RDONLY);
        other += fd != lowest;
        close(fd);
        // Between a close and the next open: the lowest number is free for a while, and the
        // writer has events to write meanwhile.
        for (int k = 0; k < 4; k++)
            free(malloc(32));
    }
    printf("%ld of %ld opens got another number\n", other, n);
    return 0;
}
