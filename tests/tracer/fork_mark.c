// SPDX-License-Identifier: MIT
// A mark made just before fork: it is the parent's, and only the parent's capture has it
// (check_fork_mark.py). The child makes a mark of its own.
#include "memtrace.h"

#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

int main(void) {
    void* volatile p = malloc(100);
    memtrace_mark("parent_only");
    pid_t child = fork();
    if (child == 0) {
        memtrace_mark("child_only");
        void* volatile q = malloc(333);
        free(q);
        _exit(0);
    }
    int status = 0;
    waitpid(child, &status, 0);
    free(p);
    return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 1;
}
