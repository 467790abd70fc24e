// SPDX-License-Identifier: MIT
// The /proc files the writer reads again and again: see procfile.h.
#include "procfile.h"

#include "fdguard.h"

#include <fcntl.h>
#include <stdbool.h>
#include <sys/stat.h>
#include <unistd.h>

static bool still_ours(const mt_procfile* f) {
    struct stat st;
    return f->fd >= 0 && fstat(f->fd, &st) == 0 && st.st_dev == f->dev && st.st_ino == f->ino;
}

void mt_procfile_close(mt_procfile* f) {
    if (still_ours(f))
        close(f->fd);
    f->fd = -1;
}

void mt_procfile_open(mt_procfile* f) {
    mt_procfile_close(f);
    int fd = mt_fdguard_move_high(open(f->path, O_RDONLY | O_CLOEXEC));
    struct stat st;
    if (fd >= 0 && fstat(fd, &st) != 0) {
        close(fd);
        fd = -1;
    }
    if (fd >= 0) {
        f->dev = st.st_dev;
        f->ino = st.st_ino;
    }
    f->fd = fd;
}

ssize_t mt_procfile_read(mt_procfile* f, char* buf, size_t size) {
    if (!still_ours(f)) // the program closed it, or was never opened
        mt_procfile_open(f);
    ssize_t n = f->fd >= 0 ? pread(f->fd, buf, size - 1, 0) : -1;
    buf[n > 0 ? n : 0] = 0;
    return n;
}
