// SPDX-License-Identifier: MIT
// memreport's messages on stderr: errors, "wrote FILE", progress. A message may quote
// names from a capture (a mark, a heap, an SQLite error about a crafted schema): it is
// written escaped for a terminal (escape.h), so it stays one line and sends no escape
// sequence of the capture's to the user's terminal.
#include "messages.h"

#include "escape.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

int mr_messages_exit_code(int err) {
    switch (err) {
    case 0:
        return MR_EXIT_OK;
    case -ENOMEM:
    case -EIO:
    case -ENOSPC:
    case -EDQUOT:
    case -EFBIG:
    case -ENOENT:
    case -EACCES:
    case -EPERM:
    case -EROFS:
        return MR_EXIT_IO;
    default:
        return MR_EXIT_BAD_INPUT;
    }
}

void mr_messages_error(const char* what, const char* fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    char* message = NULL;
    int n = vasprintf(&message, fmt, ap);
    va_end(ap);
    // One line, whole, also when two threads warn at once (diff reads its two captures on
    // two threads, and each reader reports the corrupt chunks it skips).
    flockfile(stderr);
    fputs("memreport: ", stderr);
    if (what) {
        mr_escape_fputs_text(stderr, what);
        fputs(": ", stderr);
    }
    mr_escape_fputs_text(stderr, n < 0 ? "(out of memory)" : message);
    fputc('\n', stderr);
    funlockfile(stderr);
    if (n >= 0)
        free(message);
}

void mr_messages_note_written(const char* path) {
    fprintf(stderr, "memreport: wrote %s\n", path);
}

bool mr_messages_progress_enabled(void) {
    return isatty(STDERR_FILENO);
}

void mr_messages_progress(const char* label, double fraction) {
    static struct timespec last;
    if (!mr_messages_progress_enabled())
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
