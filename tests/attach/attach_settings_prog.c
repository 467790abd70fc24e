// SPDX-License-Identifier: MIT
// A long-running program for memtrace --pid with settings (attach_settings_test.py): known
// amounts in two phases, each started by a line on stdin and acknowledged on the fd named by
// argv[1] (no sleeps); prints a checksum and exits with status 7. Nothing it does depends
// on being traced.
//   start:   stdout's buffer (the first printf), before any attach
//   phase 1: 20000 malloc(1000), the odd ones freed; one anonymous mmap of 8 MiB, kept
//   phase 2: frees the 10000 blocks left, unmaps the 8 MiB; then exits
#define _GNU_SOURCE // MAP_ANONYMOUS
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define BLOCKS 20000
#define MAPPING (8u << 20)

static void* blocks[BLOCKS];
static char* mapping;
static unsigned long sum;
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

__attribute__((noinline)) static void phase_one(void) {
    for (int i = 0; i < BLOCKS; i++) {
        blocks[i] = malloc(1000);
        memset(blocks[i], i & 0xff, 1000);
        sum = sum * 31 + (unsigned)i;
    }
    for (int i = 1; i < BLOCKS; i += 2) {
        free(blocks[i]);
        blocks[i] = NULL;
    }
    mapping = mmap(NULL, MAPPING, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (mapping == MAP_FAILED)
        _exit(2);
    mapping[0] = 1;
}

__attribute__((noinline)) static void phase_two(void) {
    for (int i = 0; i < BLOCKS; i += 2)
        free(blocks[i]);
    sum += (unsigned char)mapping[0];
    munmap(mapping, MAPPING);
}

int main(int argc, char** argv) {
    if (argc < 2)
        return 1;
    ack_fd = atoi(argv[1]);
    printf("attach_settings_prog started\n");
    wait_line();
    phase_one();
    ack('1');
    wait_line();
    phase_two();
    printf("checksum %lu\n", sum);
    return 7;
}
