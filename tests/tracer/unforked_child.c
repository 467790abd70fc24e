// SPDX-License-Identifier: MIT
// A child made without fork(), so without the tracer's fork handlers: by glibc's clone()
// without CLONE_VM, by the clone3 system call or by a raw fork system call (argv[1]: clone,
// clone3 or sysfork). The child makes 1,000,000 malloc(64)/free pairs, says so and exits 7;
// the parent waits for it. The parent's own calls are known: 1000 malloc(300) freed and one
// malloc(4321) kept before the child, 500 malloc(200) freed and one malloc(999) kept after.
// Prints "unsupported" and exits 3 where the kernel lacks the call.
#include <errno.h>
#include <linux/sched.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

static void* volatile kept[2];

__attribute__((noinline)) static void parent_before(void) {
    for (int i = 0; i < 1000; i++) {
        void* volatile p = malloc(300);
        free(p);
    }
    kept[0] = malloc(4321);
}

__attribute__((noinline)) static void parent_after(void) {
    for (int i = 0; i < 500; i++) {
        void* volatile p = malloc(200);
        free(p);
    }
    kept[1] = malloc(999);
}

__attribute__((noinline)) static int child_work(void* arg) {
    (void)arg;
    for (int i = 0; i < 1000000; i++) {
        void* volatile p = malloc(64);
        free(p);
    }
    printf("child done\n");
    fflush(stdout);
    return 7;
}

static char child_stack[1 << 20] __attribute__((aligned(16)));

int main(int argc, char** argv) {
    const char* how = argc > 1 ? argv[1] : "clone";
    parent_before();
    long pid;
    if (!strcmp(how, "clone")) {
        pid = clone(child_work, child_stack + sizeof child_stack, SIGCHLD, NULL);
    } else if (!strcmp(how, "clone3")) {
        struct clone_args args;
        memset(&args, 0, sizeof args);
        args.exit_signal = SIGCHLD;
        pid = syscall(SYS_clone3, &args, sizeof args);
        if (pid == 0)
            _exit(child_work(NULL)); // _exit: stdio was flushed, as clone()'s child ends
    } else {
        pid = syscall(SYS_fork);
        if (pid == 0)
            _exit(child_work(NULL));
    }
    if (pid < 0) {
        if (errno == ENOSYS) {
            puts("unsupported");
            return 3;
        }
        perror(how);
        return 1;
    }
    int status;
    if (waitpid((pid_t)pid, &status, 0) != pid)
        return 1;
    printf("child exited %d\n", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    parent_after();
    return 0;
}
