// SPDX-License-Identifier: MIT
// A program that sandboxes itself, as OpenSSH's privilege-separated child and bwrap do: a
// seccomp filter (PR_SET_SECCOMP) that lets through only the calls it needs and kills the
// process at any other (check_sandboxed.py). It keeps a block of 4242 B from before the
// filter, makes 1000 blocks of 500-599 B and frees them before it (and 100 000 after it),
// prints a line and ends with status 4. With `refused`, the filter is refused (EFAULT) and
// the program runs on unsandboxed.
// Usage: sandboxed [refused]
#include <errno.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#define ALLOW(nr)                                                                                  \
    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (nr), 0, 1), BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW)

static void churn(int n) {
    for (int i = 0; i < n; i++) {
        char* volatile p = malloc(500 + i % 100); // volatile: the pair is not optimized away
        free(p);
    }
}

int main(int argc, char** argv) {
    int refused = argc == 2 && !strcmp(argv[1], "refused");
    struct sock_filter f[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        ALLOW(SYS_read),
        ALLOW(SYS_write),
        ALLOW(SYS_exit),
        ALLOW(SYS_exit_group),
        ALLOW(SYS_brk),
        ALLOW(SYS_mmap),
        ALLOW(SYS_munmap),
        ALLOW(SYS_mremap),
        ALLOW(SYS_madvise),
        ALLOW(SYS_futex),
        ALLOW(SYS_rt_sigreturn),
        ALLOW(SYS_rt_sigprocmask),
        ALLOW(SYS_newfstatat),
        ALLOW(SYS_getpid),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
    };
    struct sock_fprog prog = {sizeof f / sizeof *f, f};
    char* volatile kept = malloc(4242);
    churn(1000);
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
        return 2;
    int rc = prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, refused ? NULL : &prog);
    int err = errno;
    churn(100000);
    printf("filter %d (%s)\n", rc, rc ? strerror(err) : "set");
    fflush(stdout);
    (void)kept;
    return 4;
}
