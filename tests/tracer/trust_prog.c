// SPDX-License-Identifier: MIT
// A program that does what daemons, shells and test runners do to their own process, for
// tests/tracer/check_trust.py. Every mode allocates a known amount, so the capture can be
// checked exactly, and writes its own files, so they can be checked byte for byte.
//   closefds DIR     wait for the capture, close every fd >= 3 (TRUST_NO_CLOSE: don't), open 8
//   files in DIR, write
//                    30 lines to each with an allocation per line (new stacks: unwinding)
//   reexec N         allocate, then exec itself with N-1 (N images in all)
//   chdir DIR        chdir to DIR, allocate, exit
//   readcap          wait for the capture, read it whole through its own descriptor and close
//                    it (as grep -r or tar would; TRUST_CLOSE_ALL: then close every fd >= 3),
//                    say "read", then allocate a block per byte read from stdin until EOF
//   pidfdreuse       fork a child that waits, close every fd >= 3, put a pidfd of the child
//                    at the number each of the tracer's pidfds had (as a server with
//                    thousands of files may get it), say the child's pid, exit
//   highpipe         raise the descriptor limit, put a pipe's write end at 1500 (as a server
//                    with many files has them), fork a child that allocates, closes it and
//                    sleeps; say "eof" once the pipe reads EOF, or "open" after 10 s
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define LINES 30
#define FILES 8

static void* volatile sink;

// Recursion of varying depth: each line's allocation comes from a stack not seen before.
static __attribute__((noinline)) void alloc_at_depth(int depth, size_t size) {
    if (depth > 0) {
        alloc_at_depth(depth - 1, size);
        __asm__ volatile("" ::: "memory"); // not a tail call
        return;
    }
    sink = malloc(size);
    free(sink);
}

static void sleep_ms(int ms) {
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static int closefds(const char* dir) {
    // The writer creates the capture (and SQLite its -wal) shortly after start; wait for a
    // commit to have happened, so its descriptors are open when we close everything.
    const char* cap = getenv("TRUST_CAPTURE");
    char wal[4200];
    snprintf(wal, sizeof wal, "%s-wal", cap ? cap : "");
    struct stat st;
    for (int i = 0; cap && i < 1000 && stat(wal, &st) != 0; i++)
        sleep_ms(10);
    sink = malloc(100);
    free(sink);
    sleep_ms(50);
    // As daemons do (close_range and closefrom end the same way). TRUST_NO_CLOSE: the
    // control run, to compare the capture with.
    if (!getenv("TRUST_NO_CLOSE"))
        for (int fd = 3; fd < 4096; fd++)
            close(fd);
    int fds[FILES];
    for (int f = 0; f < FILES; f++) {
        char path[4200];
        snprintf(path, sizeof path, "%s/file%d.txt", dir, f);
        fds[f] = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fds[f] < 0) {
            perror(path);
            return 1;
        }
    }
    for (int line = 0; line < LINES; line++) {
        for (int f = 0; f < FILES; f++) {
            alloc_at_depth(line % 7 + f, 64 + (size_t)line);
            char text[64];
            int n = snprintf(text, sizeof text, "file %d line %d\n", f, line);
            if (write(fds[f], text, (size_t)n) != n) {
                perror("write");
                return 1;
            }
        }
        sleep_ms(2); // let the writer commit while the program's files are open
    }
    for (int f = 0; f < FILES; f++)
        close(fds[f]);
    printf("closefds: %d files of %d lines\n", FILES, LINES);
    return 0;
}

static int readcap(void) {
    const char* cap = getenv("TRUST_CAPTURE");
    char wal[4200];
    snprintf(wal, sizeof wal, "%s-wal", cap ? cap : "");
    struct stat st;
    for (int i = 0; cap && i < 1000 && stat(wal, &st) != 0; i++)
        sleep_ms(10);
    sink = malloc(100);
    free(sink);
    sleep_ms(50);
    int fd = cap ? open(cap, O_RDONLY) : -1;
    if (fd < 0) {
        perror("readcap");
        return 1;
    }
    char buf[4096];
    while (read(fd, buf, sizeof buf) > 0)
        ;
    close(fd);
    if (getenv("TRUST_CLOSE_ALL"))
        for (fd = 3; fd < 4096; fd++)
            close(fd);
    printf("read\n");
    fflush(stdout);
    // Heap calls go on (the writer keeps committing) until the test closes our stdin.
    while (read(0, buf, 1) > 0)
        alloc_at_depth(3, 32);
    return 0;
}

static int reexec(char** argv, int n) {
    // 1000 + n bytes in n+1 blocks of image n, one of them leaked: exact per image.
    for (int i = 0; i < n; i++) {
        sink = malloc(1000);
        free(sink);
    }
    sink = malloc(1000 + (size_t)n);
    if (n <= 1)
        return 0;
    char next[16];
    snprintf(next, sizeof next, "%d", n - 1);
    execl(argv[0], argv[0], "reexec", next, (char*)NULL);
    perror("execl");
    return 1;
}

// The descriptors of this process that are pidfds (the exit watcher's, the tracer's own).
static int pidfds_of_ours(int* fds, int max) {
    DIR* d = opendir("/proc/self/fd");
    int n = 0;
    struct dirent* e;
    while (d && (e = readdir(d)) && n < max) {
        char path[300], target[256];
        snprintf(path, sizeof path, "/proc/self/fd/%s", e->d_name);
        ssize_t len = readlink(path, target, sizeof target - 1);
        if (len > 0 && (target[len] = 0,
                        !strcmp(target, "anon_inode:[pidfd]") || !strncmp(target, "pidfd:", 6)))
            fds[n++] = atoi(e->d_name);
    }
    if (d)
        closedir(d);
    return n;
}

static int pidfdreuse(void) {
    sink = malloc(100); // the capture, and its exit watcher, start
    int fds[16];
    int n = pidfds_of_ours(fds, 16);
    pid_t child = fork();
    if (child == 0) { // off the parent's output, whose end a test waits for
        int null = open("/dev/null", O_RDWR);
        for (int fd = 0; fd < 3; fd++)
            dup2(null, fd);
        pause();
        _exit(0);
    }
    if (child < 0 || n == 0) {
        fprintf(stderr, "pidfdreuse: %s\n", child < 0 ? "no fork" : "no pidfd to take");
        return 1;
    }
    syscall(SYS_close_range, 3U, ~0U, 0);
    int mine = (int)syscall(SYS_pidfd_open, child, 0);
    for (int i = 0; i < n; i++)
        if (mine < 0 || dup2(mine, fds[i]) != fds[i])
            return 1;
    printf("%d\n", (int)child);
    fflush(stdout);
    return 0;
}

static int highpipe(void) {
    struct rlimit rl;
    int p[2];
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_max < 2000 || pipe(p) != 0)
        return 77;
    rl.rlim_cur = rl.rlim_max;
    if (setrlimit(RLIMIT_NOFILE, &rl) != 0 || dup2(p[1], 1500) != 1500)
        return 1;
    close(p[1]);
    pid_t child = fork();
    if (child == 0) {
        sink = malloc(100); // its capture, and its exit watcher, start
        close(1500);
        sleep_ms(20000);
        _exit(0);
    }
    close(1500);
    struct pollfd end = {.fd = p[0], .events = POLLIN};
    int n = poll(&end, 1, 10000);
    printf("%s\n", n == 1 ? "eof" : "open");
    kill(child, SIGKILL);
    return 0;
}

int main(int argc, char** argv) {
    if (argc == 3 && !strcmp(argv[1], "closefds"))
        return closefds(argv[2]);
    if (argc == 2 && !strcmp(argv[1], "readcap"))
        return readcap();
    if (argc == 3 && !strcmp(argv[1], "reexec"))
        return reexec(argv, atoi(argv[2]));
    if (argc == 2 && !strcmp(argv[1], "highpipe"))
        return highpipe();
    if (argc == 2 && !strcmp(argv[1], "pidfdreuse"))
        return pidfdreuse();
    if (argc == 3 && !strcmp(argv[1], "chdir")) {
        if (chdir(argv[2]) != 0) {
            perror(argv[2]);
            return 1;
        }
        sink = malloc(4242);
        return 0;
    }
    fprintf(stderr,
            "usage: trust_prog closefds DIR | readcap | reexec N | chdir DIR | pidfdreuse | "
            "highpipe\n");
    return 2;
}
