// SPDX-License-Identifier: MIT
// Opens /dev/null until the descriptor limit (RLIMIT_NOFILE) refuses one, allocating a
// block for each (so the writer has work meanwhile), prints how many it got and frees them.
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(void) {
    void* blocks[4096];
    int n = 0;
    while (n < 4096) {
        int fd = open("/dev/null", O_RDONLY);
        if (fd < 0) {
            if (errno != EMFILE) {
                perror("open");
                return 2;
            }
            break;
        }
        blocks[n++] = malloc(64);
    }
    printf("opened %d\n", n);
    for (int i = 0; i < n; i++)
        free(blocks[i]);
    return 0;
}
