// SPDX-License-Identifier: MIT
// memreport's messages on stderr: errors, "wrote FILE", progress.
#include "messages.h"

#include <stdarg.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

void mr_error(const char* what, const char* fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    if (what)
        fprintf(stderr, "memreport: %s: ", what);
    else
        fputs("memreport: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

void mr_note_written(const char* path) {
    fprintf(stderr, "memreport: wrote %s\n", path);
}

bool mr_progress_enabled(void) {
    return isatty(STDERR_FILENO);
}

void mr_progress(const char* label, double fraction) {
    static struct timespec last;
    if (!mr_progress_enabled())
        return;
    if (fraction < 0) {
        fputs("\r\033[K", stderr);
        return;
    }
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    if ((now.tv_sec - last.tv_sec) * 1000000000L + (now.tv_nsec - last.tv_nsec) < 100000000L)
        return;
    last = now;
    fprintf(stderr, "\r%s: %3.0f%%", label, fraction * 100.0);
}
