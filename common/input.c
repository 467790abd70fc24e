// SPDX-License-Identifier: MIT
// Opening input files (memtrace/input.h): regular files only, without ever blocking on a
// FIFO's open. Used by every reader of a file named on the command line or in a capture.
// Never allocates; safe in the tracer at exit (symbolize_frame.c opens binaries with it).
#define _GNU_SOURCE
#include "memtrace/input.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int mt_input_open(const char* path, char* err, size_t errlen) {
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    if (fd < 0) {
        int e = errno;
        snprintf(err, errlen, "cannot open: %s", strerror(e));
        return -e;
    }
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int e = errno;
        close(fd);
        snprintf(err, errlen, "cannot open: %s", strerror(e));
        return -e;
    }
    if (S_ISREG(st.st_mode))
        return fd;
    close(fd);
    snprintf(err, errlen, S_ISDIR(st.st_mode) ? "is a directory" : "not a regular file");
    return S_ISDIR(st.st_mode) ? -EISDIR : -ENODEV;
}

int mt_input_special(const char* path) {
    struct stat st;
    return stat(path, &st) == 0 && !S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode);
}
