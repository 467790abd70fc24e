// SPDX-License-Identifier: MIT
// Prints errno as main starts (zero, ISO C says) and as a forked child starts (what it was
// before the fork: 0), then exits 0. Programs that test errno after a call that does not set
// it on success (strtol, readdir) without clearing it first see what was left there.
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

int main(void) {
    int at_main = errno;
    char* volatile block = malloc(10);
    block[0] = 1;
    free(block);
    fflush(stdout);
    errno = 0;
    pid_t pid = fork();
    if (pid == 0) {
        printf("child %d\n", errno);
        fflush(stdout);
        _exit(0);
    }
    int status;
    if (pid < 0 || waitpid(pid, &status, 0) != pid)
        return 2;
    printf("main %d\n", at_main);
    return 0;
}
