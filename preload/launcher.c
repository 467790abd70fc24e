// SPDX-License-Identifier: MIT
// memtrace: runs a program under libmemtrace.so (the one beside this executable, or in
// ../lib/memtrace when installed), passes its exit status through, and says on stderr
// where the capture went, as heaptrack does.
#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static const char usage[] =
    "usage: memtrace [-o FILE] [--] PROGRAM [ARGS...]\n"
    "Runs PROGRAM with every heap call recorded into a capture file (SQLite).\n"
    "  -o FILE   capture path (%p becomes the pid); default memtrace.<program>.<pid>.db\n"
    "Settings (environment): MEMTRACE_UNWIND=auto|fp|libunwind, MEMTRACE_DEPTH (64),\n"
    "MEMTRACE_SAMPLE_MS (10), MEMTRACE_FOLLOW_FORK (1), MEMTRACE_SYMBOLIZE (1).\n"
    "Read the capture with: memreport summary|leaks|plot|flamegraph|stats CAPTURE\n";

static int find_library(char* out, size_t len) {
    char self[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0)
        return -1;
    self[n] = 0;
    char* dir = dirname(self);
    static const char* const candidates[] = {"/libmemtrace.so", "/../lib/memtrace/libmemtrace.so",
                                             "/../lib/libmemtrace.so"};
    for (size_t i = 0; i < sizeof candidates / sizeof *candidates; i++) {
        snprintf(out, len, "%s%s", dir, candidates[i]);
        if (access(out, R_OK) == 0)
            return 0;
    }
    return -1;
}

int main(int argc, char** argv) {
    const char* output = NULL;
    int i = 1;
    for (; i < argc; i++) {
        if (!strcmp(argv[i], "--")) {
            i++;
            break;
        } else if (!strcmp(argv[i], "-o") && i + 1 < argc) {
            output = argv[++i];
        } else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            fputs(usage, stdout);
            return 0;
        } else if (argv[i][0] == '-') {
            fprintf(stderr, "memtrace: unknown option '%s'\n%s", argv[i], usage);
            return 1;
        } else {
            break;
        }
    }
    if (i >= argc) {
        fputs(usage, stderr);
        return 1;
    }
    char lib[PATH_MAX];
    if (find_library(lib, sizeof lib) != 0) {
        fputs("memtrace: cannot find libmemtrace.so beside this program\n", stderr);
        return 1;
    }
    const char* old = getenv("LD_PRELOAD");
    char* preload;
    if (asprintf(&preload, "%s%s%s", lib, old && *old ? ":" : "", old ? old : "") < 0)
        return 1;
    setenv("LD_PRELOAD", preload, 1);
    free(preload);
    if (output)
        setenv("MEMTRACE_OUTPUT", output, 1);
    const char* pattern = getenv("MEMTRACE_OUTPUT");
    // The launcher itself must not be traced by a preload it inherited.
    pid_t pid = fork();
    if (pid < 0) {
        perror("memtrace: fork");
        return 1;
    }
    if (pid == 0) {
        execvp(argv[i], argv + i);
        fprintf(stderr, "memtrace: cannot run %s: %s\n", argv[i], strerror(errno));
        _exit(127);
    }
    // Let the traced program take ^C and friends; we only wait.
    signal(SIGINT, SIG_IGN);
    signal(SIGQUIT, SIG_IGN);
    int status;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    char path[PATH_MAX];
    if (pattern) {
        size_t o = 0;
        for (const char* p = pattern; *p && o + 16 < sizeof path; p++) {
            if (p[0] == '%' && p[1] == 'p') {
                o += (size_t)snprintf(path + o, sizeof path - o, "%d", (int)pid);
                p++;
            } else {
                path[o++] = *p;
            }
        }
        path[o] = 0;
    } else {
        char* prog = strdup(argv[i]);
        snprintf(path, sizeof path, "memtrace.%s.%d.db", basename(prog), (int)pid);
        free(prog);
    }
    if (access(path, F_OK) == 0)
        fprintf(stderr, "memtrace: capture written to %s\n", path);
    if (WIFSIGNALED(status)) {
        // Die the same way, so the caller sees the same status.
        signal(WTERMSIG(status), SIG_DFL);
        raise(WTERMSIG(status));
        return 128 + WTERMSIG(status);
    }
    return WEXITSTATUS(status);
}
