// SPDX-License-Identifier: MIT
// A parent that ends its children with SIGTERM as they end on their own, as Python's
// multiprocessing Pool.terminate() does to its workers (check_term_at_exit.py). Each child
// makes 1000 blocks of 500-599 B, frees them, keeps one of 4242 B, tells the parent it is
// done and ends (exit, or _exit with `_exit`); the parent sends SIGTERM as soon as it hears.
// Usage: term_at_exit CHILDREN [_exit]; prints "child N: exit S" or "child N: signal S".
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static void child(int done_fd, int use_exit) {
    for (int i = 0; i < 1000; i++) {
        char* volatile p = malloc(500 + i % 100); // volatile: the pair is not optimized away
        free(p);
    }
    char* volatile kept = malloc(4242);
    (void)kept;
    if (write(done_fd, "x", 1) != 1)
        _exit(3);
    if (use_exit)
        _exit(0);
    exit(0);
}

int main(int argc, char** argv) {
    int children = argc >= 2 ? atoi(argv[1]) : 0;
    int use_exit = argc == 3 && !strcmp(argv[2], "_exit");
    if (children < 1 || argc > 3 || (argc == 3 && !use_exit)) {
        fprintf(stderr, "usage: term_at_exit CHILDREN [_exit]\n");
        return 2;
    }
    for (int n = 0; n < children; n++) {
        int fds[2];
        if (pipe(fds) != 0)
            return 2;
        fflush(stdout);
        pid_t pid = fork();
        if (pid < 0)
            return 2;
        if (pid == 0) {
            close(fds[0]);
            child(fds[1], use_exit);
        }
        close(fds[1]);
        char c;
        if (read(fds[0], &c, 1) == 1)
            kill(pid, SIGTERM);
        close(fds[0]);
        int st;
        if (waitpid(pid, &st, 0) != pid)
            return 2;
        if (WIFSIGNALED(st))
            printf("child %d: signal %d\n", n, WTERMSIG(st));
        else
            printf("child %d: exit %d\n", n, WEXITSTATUS(st));
    }
    return 0;
}
