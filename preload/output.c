// SPDX-License-Identifier: MIT
// Capture files: created exclusively, private, never through a symlink (see output.h).
#include "output.h"

#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
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

int mt_output_create(int child, char* path, size_t len) {
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
static bool report_line(char sign, const char* text) {
    if (!mt_cfg.report[0])
        return false;
    int fd = open(mt_cfg.report, O_WRONLY | O_APPEND | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return false;
    char line[4200];
    int n = snprintf(line, sizeof line, "%c%d %s\n", sign, (int)getpid(), text);
    bool ok = n > 0 && (size_t)n < sizeof line && write(fd, line, (size_t)n) == n;
    close(fd);
    return ok;
}

void mt_output_report_capture(const char* path) {
    (void)report_line('+', path);
}

bool mt_output_report_failure(const char* message) {
    return report_line('-', message);
}
