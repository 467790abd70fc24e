// SPDX-License-Identifier: MIT
// A root program that gives up its privileges as soon as main starts, as daemons do: to
// user and group nobody (65534), or into an empty root directory (chroot). Leaks 1000 bytes
// before and 2000 after, and allocates and frees 1000 blocks after; exits 0.
// With "fork" after DIR: then forks a child that allocates and exits, and waits for it.
// Usage: drop_privileges setuid | chroot DIR [fork]
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char** argv) {
    if (argc < 2)
        return 1;
    char* volatile before = malloc(1000);
    before[0] = 1;
    if (!strcmp(argv[1], "chroot")) {
        if (argc < 3 || chroot(argv[2]) != 0 || chdir("/") != 0) {
            perror("chroot");
            return 9;
        }
    } else if (setgid(65534) != 0 || setuid(65534) != 0) {
        perror("setuid");
        return 9;
    }
    for (int i = 0; i < 1000; i++) {
        char* volatile p = malloc((size_t)i + 1);
        p[0] = 1;
        free(p);
    }
    char* volatile after = malloc(2000);
    after[0] = 1;
    if (argc > 3 && !strcmp(argv[3], "fork")) {
        pid_t pid = fork();
        if (pid == 0) {
            char* volatile child = malloc(300);
            child[0] = 1;
            _exit(0);
        }
        int status;
        if (pid < 0 || waitpid(pid, &status, 0) != pid || status != 0)
            return 7;
    }
    return 0;
}
