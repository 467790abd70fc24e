// SPDX-License-Identifier: MIT
// Enters namespaces as sandboxes and container tools do, between allocations of known size:
// setns into its own mount namespace (by type and with type 0), then unshare(CLONE_NEWUSER).
// With "threaded", a second thread of its own is alive at the unshare, which the kernel
// refuses (EINVAL) traced or not. Prints each call's result; leaks 10 blocks of 100, 200 and
// 300 bytes around the calls.
// Usage: namespaces [threaded]
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void* volatile sink;

static void leak_blocks(size_t size) {
    for (int i = 0; i < 10; i++)
        sink = malloc(size);
    for (int i = 0; i < 1000; i++) // and some that come and go
        free(malloc(size + (size_t)i));
}

static void report(const char* call, int rc) {
    printf("%s: %d %s\n", call, rc, rc == 0 ? "ok" : strerror(errno));
    fflush(stdout);
}

static int wake[2];

static void* waiting(void* arg) {
    char c;
    (void)!read(wake[0], &c, 1);
    return arg;
}

int main(int argc, char** argv) {
    int threaded = argc > 1 && !strcmp(argv[1], "threaded");
    leak_blocks(100);
    int mnt = open("/proc/self/ns/mnt", O_RDONLY | O_CLOEXEC);
    report("setns mnt", setns(mnt, CLONE_NEWNS));
    report("setns 0", setns(mnt, 0));
    close(mnt);
    leak_blocks(200);
    pthread_t other;
    if (threaded && (pipe(wake) != 0 || pthread_create(&other, NULL, waiting, NULL) != 0))
        return 2;
    report("unshare user", unshare(CLONE_NEWUSER));
    if (threaded) {
        (void)!write(wake[1], "x", 1);
        pthread_join(other, NULL);
    }
    leak_blocks(300);
    return 0;
}
