// SPDX-License-Identifier: MIT
// A long-running program for memtrace --pid: it allocates known amounts in phases, each
// started by a line from the test on stdin and acknowledged on the fd named by argv[1]
// (no sleeps), prints a
// checksum of its work and exits with status 7. Nothing it does depends on being traced.
//   start:   stdout's buffer (the first printf), before any attach
//   phase 1: keeps 10 blocks of 1000 bytes (malloc)
//   phase 2: frees 5 of phase 1's blocks; keeps 20 malloc(2048) and 3 calloc(4, 256);
//            reallocs the first 2048 block to 4096; frees 10 of the 2048 blocks; dlopens
//            argv[2] (attach_lib.c) and keeps 2 of 3 blocks of 777 bytes it allocates
//   phase 3: frees every block left (5 of phase 1's, 10 + 3 + 2 of phase 2's) and keeps 4
//            malloc(512) (leaked); then exits
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void* one[10];
static void* two[20];
static void* zeroed[3];
static unsigned long sum;
static int ack_fd = 3;
static const char* lib_path;
static void* from_lib[2];
static void (*lib_free)(void*);

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

static void touch(void* p, size_t n, int v) {
    memset(p, v, n);
    sum = sum * 31 + n + (unsigned)v;
}

__attribute__((noinline)) static void phase_one(void) {
    for (int i = 0; i < 10; i++) {
        one[i] = malloc(1000);
        touch(one[i], 1000, i);
    }
}

__attribute__((noinline)) static void phase_two(void) {
    for (int i = 0; i < 5; i++) {
        free(one[i]);
        one[i] = NULL;
    }
    for (int i = 0; i < 20; i++) {
        two[i] = malloc(2048);
        touch(two[i], 2048, i);
    }
    for (int i = 0; i < 3; i++) {
        zeroed[i] = calloc(4, 256);
        sum += ((unsigned char*)zeroed[i])[100];
    }
    two[0] = realloc(two[0], 4096);
    touch(two[0], 4096, 9);
    for (int i = 10; i < 20; i++) {
        free(two[i]);
        two[i] = NULL;
    }
    void* lib = dlopen(lib_path, RTLD_NOW);
    if (!lib)
        _exit(2);
    void* (*lib_alloc)(size_t);
    *(void**)&lib_alloc = dlsym(lib, "attach_lib_alloc");
    *(void**)&lib_free = dlsym(lib, "attach_lib_free");
    if (!lib_alloc || !lib_free)
        _exit(2);
    void* gone = lib_alloc(777);
    touch(gone, 777, 5);
    lib_free(gone);
    for (int i = 0; i < 2; i++) {
        from_lib[i] = lib_alloc(777);
        touch(from_lib[i], 777, i);
    }
}

__attribute__((noinline)) static void phase_three(void) {
    for (int i = 0; i < 10; i++)
        free(one[i]);
    for (int i = 0; i < 20; i++)
        free(two[i]);
    for (int i = 0; i < 3; i++)
        free(zeroed[i]);
    for (int i = 0; i < 2; i++)
        lib_free(from_lib[i]);
    for (int i = 0; i < 4; i++) {
        void* leak = malloc(512);
        touch(leak, 512, i);
    }
}

int main(int argc, char** argv) {
    if (argc < 3)
        return 1;
    ack_fd = atoi(argv[1]);
    lib_path = argv[2];
    printf("attach_prog started\n");
    wait_line();
    phase_one();
    ack('1');
    wait_line();
    phase_two();
    ack('2');
    wait_line();
    phase_three();
    printf("checksum %lu\n", sum);
    return 7;
}
