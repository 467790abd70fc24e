// SPDX-License-Identifier: MIT
// e2e subject (check_lazy_libdw.py, part fork): a parent and its forked child each allocate
// from a known chain and end, the child by _exit: each names its own capture's frames at its
// own end, so each loads libdw itself when the symbol cache is cold. Prints "done" (parent).
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#define PARENT_SIZE 1021
#define CHILD_SIZE 1031

static void* volatile kept;

__attribute__((noinline)) static void parent_alloc(void) {
    kept = malloc(PARENT_SIZE);
}

__attribute__((noinline)) static void child_alloc(void) {
    kept = malloc(CHILD_SIZE);
}

int main(void) {
    parent_alloc();
    pid_t pid = fork();
    if (pid < 0)
        return 1;
    if (pid == 0) {
        child_alloc();
        _exit(0);
    }
    int status;
    if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
        return 1;
    printf("done\n");
    return 0;
}
