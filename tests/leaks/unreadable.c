// SPDX-License-Identifier: MIT
// A block whose first page the program made unreadable (mprotect PROT_NONE), held by a
// global (still reachable), and the only pointer to a second block in that page: the scan
// cannot read it, as memcheck does not, so the second block is definitely lost. Another
// block in a readable page of the same held block stays reachable. Exits 0 with
// "unreadable" on stdout; with the argument "thread", a thread that never returns is still
// there at the exit (tests/leaks/check_unreadable.py).
#define _GNU_SOURCE // posix_memalign, mprotect
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static void** volatile held;

static void* idle(void* unused) {
    for (;;)
        pause();
    return unused;
}

__attribute__((noinline)) static void hide_in_unreadable(void) {
    void* p = NULL;
    if (posix_memalign(&p, 4096, 8192) != 0)
        exit(1);
    memset(p, 0, 8192);
    void** words = p;
    words[0] = malloc(48);                    // only in the page made unreadable: lost
    words[4096 / sizeof *words] = malloc(80); // in the readable page: reachable
    held = p;
    if (mprotect(p, 4096, PROT_NONE) != 0)
        exit(2);
}

int main(int argc, char** argv) {
    hide_in_unreadable();
    pthread_t t;
    if (argc > 1 && strcmp(argv[1], "thread") == 0 && pthread_create(&t, NULL, idle, NULL) != 0)
        return 3;
    printf("unreadable\n");
    return 0;
}
