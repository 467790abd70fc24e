// SPDX-License-Identifier: MIT
// A program whose heap reuses the addresses of freed blocks, for the set of sampled blocks
// across captures of one process (sample_set_test.py). Nothing it does depends on being
// traced; it prints how many addresses came back, which the test needs to be meaningful.
//   sample_set_prog FD: phases each started by a line on stdin, acknowledged on fd FD:
//     phase 1: keeps BLOCKS malloc(SIZE)
//     phase 2: frees them
//     phase 3: BLOCKS malloc(SIZE) again (glibc hands most addresses back), then frees them;
//     prints "reused N of BLOCKS" and exits 7
//   sample_set_prog fork: keeps BLOCKS malloc(SIZE), forks; the child frees them and exits
//     0; the parent waits for it, frees its own copies and exits with the child's status.
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define BLOCKS 1000
#define SIZE 512

static void* blocks[BLOCKS];
static uintptr_t first_addr[BLOCKS]; // phase 1's addresses, kept as numbers once freed
static int ack_fd = 3;

static void ack(char phase) {
    if (write(ack_fd, &phase, 1) != 1)
        _exit(1);
}

// Waits for the test's next line (EOF: go on).
static void wait_line(void) {
    char c;
    while (read(0, &c, 1) == 1 && c != '\n') {
    }
}

__attribute__((noinline)) static void keep_blocks(void) {
    for (int i = 0; i < BLOCKS; i++) {
        blocks[i] = malloc(SIZE);
        if (!blocks[i])
            _exit(2);
        memset(blocks[i], i & 0xff, SIZE);
        first_addr[i] = (uintptr_t)blocks[i];
    }
}

__attribute__((noinline)) static void free_blocks(void) {
    for (int i = 0; i < BLOCKS; i++) {
        free(blocks[i]);
        blocks[i] = NULL;
    }
}

// Allocates at the freed addresses again; returns how many of phase 1's came back.
__attribute__((noinline)) static int reuse_blocks(void) {
    int reused = 0;
    for (int i = 0; i < BLOCKS; i++) {
        blocks[i] = malloc(SIZE);
        if (!blocks[i])
            _exit(2);
        memset(blocks[i], i & 0xff, SIZE);
        for (int j = 0; j < BLOCKS; j++)
            if (first_addr[j] == (uintptr_t)blocks[i]) {
                reused++;
                break;
            }
    }
    free_blocks();
    return reused;
}

static int forked(void) {
    keep_blocks();
    fflush(stdout);
    pid_t child = fork();
    if (child < 0)
        return 3;
    if (child == 0) {
        free_blocks();
        exit(0);
    }
    int status;
    if (waitpid(child, &status, 0) != child)
        return 3;
    free_blocks();
    return WIFEXITED(status) ? WEXITSTATUS(status) : 4;
}

int main(int argc, char** argv) {
    if (argc < 2)
        return 1;
    if (!strcmp(argv[1], "fork"))
        return forked();
    ack_fd = atoi(argv[1]);
    printf("sample_set_prog started\n");
    wait_line();
    keep_blocks();
    ack('1');
    wait_line();
    free_blocks();
    ack('2');
    wait_line();
    int reused = reuse_blocks();
    ack('3');
    wait_line();
    printf("reused %d of %d\n", reused, BLOCKS);
    return 7;
}
