// SPDX-License-Identifier: MIT
// Heap calls enough to keep the tracer's writer busy (2 M events: more than its buffers
// hold), then a fork; parent and child each hold 256 MiB of address space at once (untouched
// 1 MiB blocks) and free it. Each prints its result and writes its VmPeak to stderr, from
// which check_address_space.py sets the ulimit -v of the traced runs.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define BIG_BLOCKS 256

static unsigned long churn(void) {
    unsigned long sum = 0;
    for (int i = 0; i < 1000000; i++) {
        char* p = malloc(16 + (size_t)(i % 200));
        if (!p)
            return 0;
        p[0] = (char)i;
        sum += (unsigned char)p[0];
        free(p);
    }
    return sum;
}

static int hold_big(const char* who) {
    static void* big[BIG_BLOCKS];
    int got = 0;
    for (int i = 0; i < BIG_BLOCKS; i++)
        got += (big[i] = malloc(1 << 20)) != NULL;
    for (int i = 0; i < BIG_BLOCKS; i++)
        free(big[i]);
    printf("%s: %d of %d blocks of 1 MiB\n", who, got, BIG_BLOCKS);
    fflush(stdout);
    FILE* f = fopen("/proc/self/status", "r");
    char line[256];
    while (f && fgets(line, sizeof line, f))
        if (strncmp(line, "VmPeak:", 7) == 0)
            fprintf(stderr, "%s %s", who, line);
    if (f)
        fclose(f);
    return got == BIG_BLOCKS ? 0 : 1;
}

int main(void) {
    printf("churn: %lu\n", churn());
    fflush(stdout);
    pid_t child = fork();
    if (child < 0)
        return 2;
    if (child == 0)
        exit(hold_big("child"));
    int status = 0;
    waitpid(child, &status, 0);
    int rc = hold_big("parent");
    return rc || !WIFEXITED(status) || WEXITSTATUS(status) ? 1 : 0;
}
