// SPDX-License-Identifier: MIT
// A forked child whose first heap call comes after something that could lose its capture,
// or never comes. The parent allocates and frees a block in before_fork(), a stack the
// child's capture must not hold (it holds the stacks its own events name), prints the
// CLOCK_REALTIME of its fork in ns and the child's pid, waits for the child and exits with
// the child's status. The child, by MODE:
//   setuid       setgid and setuid to nobody (65534), then allocates 300 bytes (root only)
//   chroot DIR   chroot into DIR, then allocates 300 bytes (root only)
//   seccomp      a seccomp filter (after PR_SET_NO_NEW_PRIVS, as libseccomp sets one) that
//                refuses open and openat with EPERM, then allocates 300 bytes
//   exit         _exit(3) with nothing allocated
//   late         sleeps 300 ms, then allocates 300 bytes
//   orphan       waits for the parent's end (it does not wait), then allocates 300 bytes
// Usage: deferred_fork MODE [DIR]
#include <errno.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

__attribute__((noinline)) static void allocate(void) {
    char* volatile p = malloc(300);
    p[0] = 1;
}

__attribute__((noinline)) static void before_fork(void) {
    char* volatile p = malloc(100);
    p[0] = 1;
    free(p);
}

// open and openat fail with EPERM from now on; every other call as before.
static int refuse_open(void) {
    struct sock_filter code[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_openat, 2, 0),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_open, 1, 0),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
    };
    struct sock_fprog prog = {sizeof code / sizeof *code, code};
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
        return -1;
    return (int)syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog);
}

static int child(const char* mode, const char* dir, int from_parent) {
    if (!strcmp(mode, "setuid")) {
        if (setgid(65534) != 0 || setuid(65534) != 0)
            return 9;
    } else if (!strcmp(mode, "chroot")) {
        if (!dir || chroot(dir) != 0 || chdir("/") != 0)
            return 9;
    } else if (!strcmp(mode, "seccomp")) {
        if (refuse_open() != 0)
            return 9;
    } else if (!strcmp(mode, "exit")) {
        _exit(3);
    } else if (!strcmp(mode, "late")) {
        struct timespec t = {0, 300 * 1000 * 1000};
        nanosleep(&t, NULL);
    } else if (!strcmp(mode, "orphan")) {
        pid_t parent = getppid();
        char c;
        while (read(from_parent, &c, 1) > 0) // EOF: the parent is ending
            ;
        for (int i = 0; i < 1000 && getppid() == parent; i++) { // until it is reparented
            struct timespec t = {0, 1000 * 1000};
            nanosleep(&t, NULL);
        }
    } else {
        return 8;
    }
    allocate();
    return 0;
}

int main(int argc, char** argv) {
    if (argc < 2)
        return 1;
    int pipefd[2];
    if (pipe(pipefd) != 0)
        return 1;
    before_fork();
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    long long fork_ns = (long long)now.tv_sec * 1000000000 + now.tv_nsec;
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0)
        return 1;
    if (pid == 0) {
        close(pipefd[1]);
        _exit(child(argv[1], argc > 2 ? argv[2] : NULL, pipefd[0]));
    }
    close(pipefd[0]);
    printf("%lld %d\n", fork_ns, (int)pid);
    fflush(stdout);
    if (!strcmp(argv[1], "orphan"))
        return 0; // the child's pipe closes with this process
    int status;
    if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
        return 1;
    return WEXITSTATUS(status);
}
