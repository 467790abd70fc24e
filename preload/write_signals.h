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

// The signals that others send and whose default action ends the process (HUP, INT, QUIT,
// TERM, USR1, USR2, ALRM, VTALRM, PROF, IO, PWR), blocked on the calling thread while it
// finishes the capture at the program's end: a parent's SIGTERM to a child it still saw
// running (Python's Pool.terminate()), a ^C, would cut the finish short with the exit
// watcher already stopped, and lose the capture; untraced the process had already ended.
// `old` gets the mask to restore (mt_write_signals_end_release), where the program goes on.
void mt_write_signals_end_hold(sigset_t* old);
void mt_write_signals_end_release(const sigset_t* old);

#endif
