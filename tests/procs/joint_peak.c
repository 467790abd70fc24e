// SPDX-License-Identifier: MIT
// Two processes whose heaps overlap in time, with known truth: the parent holds 1,000,000 B
// while its child holds 2,000,000 B (3,000,000 together); once the child has ended, the
// parent frees its block and holds 2,500,000 B alone. Each one's own peak: 2,500,000 and
// 2,000,000 (4,500,000 summed); the most they held at one moment: 3,000,000. Pipes order
// the steps; no other heap call (no stdio).
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

static void touch(char* p, size_t n) {
    for (size_t i = 0; i < n; i += 4096)
        p[i] = 1;
}

int main(void) {
    int held[2], seen[2];
    if (pipe(held) || pipe(seen))
        return 1;
    char* volatile a = malloc(1000000);
    touch(a, 1000000);
    pid_t pid = fork();
    if (pid < 0)
        return 1;
    char t;
    if (pid == 0) {
        char* volatile c = malloc(2000000);
        touch(c, 2000000);
        if (write(held[1], "x", 1) != 1 || read(seen[0], &t, 1) != 1)
            _exit(1);
        free(c);
        _exit(0);
    }
    if (read(held[0], &t, 1) != 1 || write(seen[1], "x", 1) != 1)
        return 1;
    int status;
    if (waitpid(pid, &status, 0) != pid || status != 0)
        return 1;
    free(a);
    char* volatile b = malloc(2500000);
    touch(b, 2500000);
    free(b);
    return 0;
}
