// SPDX-License-Identifier: MIT
// The tracer's own writes on a program's thread (the capture's end at exit, exec or _exit;
// the line added to the launcher's list of captures; a message on stderr) may raise a signal
// at that thread: SIGXFSZ past the file size limit (RLIMIT_FSIZE, `ulimit -f`), SIGPIPE on a
// pipe nobody reads. Both kill the program by default. Between mt_write_signals_hold and
// mt_write_signals_release they are held, and each is dropped if the tracer's writes raised
// it; one the program already had pending stays pending. Never allocates.
#ifndef MT_WRITE_SIGNALS_H
#define MT_WRITE_SIGNALS_H

#include <signal.h>

typedef struct mt_write_signals {
    sigset_t old_mask;
    sigset_t pending_before;
} mt_write_signals;

void mt_write_signals_hold(mt_write_signals* h);
void mt_write_signals_release(const mt_write_signals* h);

#endif
