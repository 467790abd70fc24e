// SPDX-License-Identifier: MIT
// N blocks of 64 bytes held from a global array (still reachable), a heap the leak scan takes
// a while to read, and one of 100 bytes whose pointer was overwritten (definitely lost), by a
// thread that has ended: no stack or register of a live thread keeps a copy of it.
// Prints "ready", then exits with status 3 once a line comes on stdin: the scan runs in that
// exit, or at a memtrace --detach meanwhile (tests/leaks/check_scan_fails.py, check_detach.py).
// With a second argument "thread", a thread that never returns is still there at the exit
// (so the scan is made in a copy of the process, not in place).
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void** volatile keep;
static char* volatile lost;

static void* lose(void* unused) {
    if ((lost = malloc(100)))
        memset(lost, 2, 100);
    lost = NULL;
    return unused;
}

static void* idle(void* unused) {
    for (;;)
        pause();
    return unused;
}

int main(int argc, char** argv) {
    size_t n = argc >= 2 ? strtoull(argv[1], NULL, 10) : 0;
    keep = malloc((n + 1) * sizeof *keep);
    for (size_t i = 0; keep && i < n; i++)
        if ((keep[i] = malloc(64)))
            memset(keep[i], 1, 64);
    pthread_t t;
    if (pthread_create(&t, NULL, lose, NULL) == 0)
        pthread_join(t, NULL);
    if (argc == 3 && strcmp(argv[2], "thread") == 0 && pthread_create(&t, NULL, idle, NULL) != 0)
        return 1;
    printf("ready\n");
    fflush(stdout);
    char line[16];
    if (!fgets(line, sizeof line, stdin))
        return 1;
    printf("bye\n");
    return 3;
}
