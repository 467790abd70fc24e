// SPDX-License-Identifier: MIT
// Starts PROG once per further argument (PROG ARG), all at once, and waits for them: a
// process tree of 1 + N processes, each named by its own command line. posix_spawn, not
// fork: nothing runs in a child before its exec, so no child is a process of its own
// before it becomes PROG. Usage: spawn_all PROG ARG...
#include <spawn.h>
#include <sys/wait.h>

extern char** environ;

int main(int argc, char** argv) {
    if (argc < 3)
        return 2;
    for (int i = 2; i < argc; i++) {
        char* args[] = {argv[1], argv[i], 0};
        pid_t pid;
        if (posix_spawn(&pid, argv[1], 0, 0, args, environ) != 0)
            return 1;
    }
    int status, failed = 0;
    while (wait(&status) > 0)
        failed |= !WIFEXITED(status) || WEXITSTATUS(status) != 0;
    return failed;
}
