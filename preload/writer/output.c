// SPDX-License-Identifier: MIT
// Capture files: created exclusively, private, never through a symlink (see output.h).
#include "output.h"

#include "config.h"
#include "fdguard.h"
#include "write_signals.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_NUMBERED 9999

// NAME.db -> NAME.<n>.db (NAME -> NAME.<n> without the .db suffix).
static void numbered(char* out, size_t len, const char* path, int n) {
    size_t plen = strlen(path);
    size_t stem = plen > 3 && !strcmp(path + plen - 3, ".db") ? plen - 3 : plen;
    snprintf(out, len, "%.*s.%d%s", (int)stem, path, n, path + stem);
}

static int create_exclusive(const char* path) {
    // O_EXCL with O_CREAT also refuses a symlink at the final component, dangling or not.
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0)
        return -errno;
    close(fd);
    return 0;
}

bool mt_output_is_dir(void) {
    size_t n = strlen(mt_cfg.pattern);
    return n && mt_cfg.pattern[n - 1] == '/';
}

// The directory of a pattern ending in '/': created 0700 when missing; used only when it is
// a directory itself (not a symlink), owned by this user, and writable by no one else, as
// another user could otherwise replace or read the captures. Returns an fd or a negative
// errno (-EPERM for a directory that is not private).
static int open_private_dir(const char* path) {
    // Without its trailing '/': "link/" would resolve the symlink despite O_NOFOLLOW.
    char dir[4096];
    size_t n = (size_t)snprintf(dir, sizeof dir, "%s", path);
    while (n > 1 && n < sizeof dir && dir[n - 1] == '/')
        dir[--n] = 0;
    if (mkdir(dir, 0700) != 0 && errno != EEXIST)
        return -errno;
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return errno == ELOOP ? -EPERM : -errno;
    struct stat st;
    if (fstat(fd, &st) != 0 || st.st_uid != geteuid() || (st.st_mode & (S_IWGRP | S_IWOTH))) {
        close(fd);
        return -EPERM;
    }
    return fd;
}

// A capture in the directory: DIR/<pid>.<program>.db, then DIR/<pid>.<program>.2.db, ...
// (an image exec'd by a program of the same name). The directory is opened once, so each
// name is created in the directory checked, whatever happens to its path meanwhile.
static int create_in_dir(char* path, size_t len) {
    char dir[4096], prog[72], name[128];
    mt_config_output_path(dir, sizeof dir, getpid(), 0);
    int dfd = open_private_dir(dir);
    if (dfd < 0) {
        snprintf(path, len, "%s", dir);
        return dfd;
    }
    mt_config_program_part(prog, sizeof prog);
    int rc = -EEXIST;
    for (int n = 1; rc == -EEXIST && n <= MAX_NUMBERED; n++) {
        if (n == 1)
            snprintf(name, sizeof name, "%d.%s.db", (int)getpid(), prog);
        else
            snprintf(name, sizeof name, "%d.%s.%d.db", (int)getpid(), prog, n);
        int fd = openat(dfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        rc = fd < 0 ? -errno : 0;
        if (fd >= 0)
            close(fd);
    }
    close(dfd);
    snprintf(path, len, "%s%s", dir, name);
    return rc;
}

int mt_output_create(int child, char* path, size_t len) {
    if (mt_output_is_dir())
        return create_in_dir(path, len);
    char wanted[4096];
    mt_config_output_path(wanted, sizeof wanted, getpid(), child);
    snprintf(path, len, "%s", wanted);
    int rc = create_exclusive(path);
    if (rc == -EEXIST && !child && !mt_cfg.pattern_has_pid) {
        // A fixed name taken (by the process that exec'd us, often): NAME.<pid>.db first.
        mt_config_output_path(wanted, sizeof wanted, getpid(), 1);
        snprintf(path, len, "%s", wanted);
        rc = create_exclusive(path);
    }
    for (int n = 2; rc == -EEXIST && n <= MAX_NUMBERED; n++) {
        numbered(path, len, wanted, n);
        rc = create_exclusive(path);
    }
    return rc;
}

// One line per call, appended with a single write(): lines of concurrent processes of the
// traced tree never interleave. The file must exist (the launcher made it): never created.
// Kept open from the first line on, far above the program's descriptors (fdguard.h): a
// process that dropped its privileges or chrooted since can still say its capture finished.
static int report_fd = -1;
static dev_t report_dev;
static ino_t report_ino;

static int report_open(void) {
    struct stat st;
    if (report_fd >= 0 && fstat(report_fd, &st) == 0 && st.st_dev == report_dev &&
        st.st_ino == report_ino)
        return report_fd;
    // Closed by the program (or never open): its number may be the program's now.
    int fd =
        mt_fdguard_move_high(open(mt_cfg.report, O_WRONLY | O_APPEND | O_NOFOLLOW | O_CLOEXEC));
    if (fd >= 0 && fstat(fd, &st) != 0) {
        close(fd);
        fd = -1;
    }
    if (fd >= 0) {
        report_dev = st.st_dev;
        report_ino = st.st_ino;
    }
    return report_fd = fd;
}

static bool report_line(char sign, pid_t pid, const char* text) {
    if (!mt_cfg.report[0])
        return false;
    int fd = report_open();
    if (fd < 0)
        return false;
    char line[4200];
    int n = snprintf(line, sizeof line, "%c%d %s\n", sign, (int)pid, text);
    mt_write_signals hold; // made on the program's thread (the capture's start, a failure)
    mt_write_signals_hold(&hold);
    bool ok = n > 0 && (size_t)n < sizeof line && write(fd, line, (size_t)n) == n;
    mt_write_signals_release(&hold);
    return ok;
}

void mt_output_report_capture(const char* path) {
    (void)report_line('+', getpid(), path);
}

bool mt_output_report_failure(const char* message) {
    return report_line('-', getpid(), message);
}

void mt_output_report_watcher(pid_t watcher) {
    char text[16];
    snprintf(text, sizeof text, "%d", (int)watcher);
    (void)report_line('~', getpid(), text);
}

void mt_output_report_finished(pid_t pid, const char* path) {
    (void)report_line('.', pid, path);
}

static struct stat start_root;

void mt_output_note_root(void) {
    if (stat("/", &start_root) != 0)
        memset(&start_root, 0, sizeof start_root);
}

bool mt_output_root_changed(void) {
    struct stat st;
    return start_root.st_ino && (stat("/", &st) != 0 || st.st_dev != start_root.st_dev ||
                                 st.st_ino != start_root.st_ino);
}
