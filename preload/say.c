// SPDX-License-Identifier: MIT
// What the tracer says on stderr (see say.h).
#include "say.h"

#include "write_signals.h"

#include <stdbool.h>
#include <sys/stat.h>
#include <unistd.h>

static struct {
    bool open;
    dev_t dev;
    ino_t ino;
} start_stderr;

void mt_say_note_stderr(void) {
    struct stat st;
    start_stderr.open = fstat(STDERR_FILENO, &st) == 0;
    start_stderr.dev = st.st_dev;
    start_stderr.ino = st.st_ino;
}

void mt_say(const char* line, size_t n) {
    struct stat st;
    if (!start_stderr.open || fstat(STDERR_FILENO, &st) != 0 || st.st_dev != start_stderr.dev ||
        st.st_ino != start_stderr.ino)
        return;
    // At the program's start or exit, on its own thread: a pipe nobody reads (SIGPIPE) or a
    // file at the size limit (SIGXFSZ) must not kill it (write_signals.h).
    mt_write_signals hold;
    mt_write_signals_hold(&hold);
    (void)!write(STDERR_FILENO, line, n);
    mt_write_signals_release(&hold);
}
