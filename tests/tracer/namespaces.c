// SPDX-License-Identifier: MIT
// Enters namespaces as sandboxes and container tools do, between allocations of known size:
// setns into its own mount namespace (by type and with type 0), then unshare(CLONE_NEWUSER).
// With "threaded", a second thread of its own is alive at the unshare, which the kernel
// refuses (EINVAL) traced or not. With "children", the calls are made by children that
// fork's handlers never saw (a clone() child, a vfork child), which are processes of one
// thread each, and the program says whether its own threads are the same after. Prints each
// call's result; leaks 10 blocks of 100, 200 and 300 bytes around the calls.
// With "setns N", it only enters its mount namespace N times (no heap call of its own).
// Usage: namespaces [threaded|children|setns N]
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static void* volatile sink;

static void leak_blocks(size_t size) {
    for (int i = 0; i < 10; i++)
        sink = malloc(size);
    for (int i = 0; i < 1000; i++) // and some that come and go
        free(malloc(size + (size_t)i));
}

// errno as the call left it: a call that succeeds leaves it alone (set to 1234 before).
static void report(const char* call, int rc) {
    printf("%s: %d %s\n", call, rc,
           rc == 0 ? (errno == 1234 ? "ok" : "ok, errno changed") : strerror(errno));
    fflush(stdout);
}

static int wake[2];

static void* waiting(void* arg) {
    char c;
    (void)!read(wake[0], &c, 1);
    return arg;
}

static int child_unshare(void* arg) {
    (void)arg;
    return unshare(CLONE_NEWUSER) == 0 ? 0 : 1;
}

// The child's exit status, or -1 if it did not end within 10 s (it is killed then).
static int child_status(pid_t pid) {
    int status;
    for (int i = 0; i < 1000; i++) {
        if (waitpid(pid, &status, WNOHANG) == pid)
            return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        struct timespec pause = {0, 10000000};
        nanosleep(&pause, NULL);
    }
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
    return -1;
}

static long own_threads(void) {
    char line[256];
    long n = -1;
    FILE* f = fopen("/proc/self/status", "r");
    while (f && fgets(line, sizeof line, f))
        if (!strncmp(line, "Threads:", 8))
            n = atol(line + 8);
    if (f)
        fclose(f);
    return n;
}

static void children(void) {
    static char stack[1 << 16];
    long before = own_threads();
    pid_t pid = clone(child_unshare, stack + sizeof stack, SIGCHLD, NULL);
    printf("clone child unshare user: %d\n", pid > 0 ? child_status(pid) : -2);
    pid = vfork();
    if (pid == 0)
        _exit(child_unshare(NULL));
    printf("vfork child unshare user: %d\n", pid > 0 ? child_status(pid) : -2);
    printf("own threads unchanged: %s\n", own_threads() == before ? "yes" : "no");
    fflush(stdout);
}

int main(int argc, char** argv) {
    if (argc > 2 && !strcmp(argv[1], "setns")) {
        int mnt = open("/proc/self/ns/mnt", O_RDONLY | O_CLOEXEC);
        for (int i = atoi(argv[2]); i > 0; i--)
            if (setns(mnt, CLONE_NEWNS) != 0)
                return 1;
        return 0;
    }
    if (argc > 1 && !strcmp(argv[1], "children")) {
        leak_blocks(100);
        children();
        leak_blocks(200);
        leak_blocks(300);
        return 0;
    }
    int threaded = argc > 1 && !strcmp(argv[1], "threaded");
    leak_blocks(100);
    int mnt = open("/proc/self/ns/mnt", O_RDONLY | O_CLOEXEC);
    errno = 1234;
    report("setns mnt", setns(mnt, CLONE_NEWNS));
    errno = 1234;
    report("setns 0", setns(mnt, 0));
    close(mnt);
    leak_blocks(200);
    pthread_t other;
    if (threaded && (pipe(wake) != 0 || pthread_create(&other, NULL, waiting, NULL) != 0))
        return 2;
    errno = 1234;
    report("unshare user", unshare(CLONE_NEWUSER));
    if (threaded) {
        (void)!write(wake[1], "x", 1);
        pthread_join(other, NULL);
    }
    leak_blocks(300);
    return 0;
}
