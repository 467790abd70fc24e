// SPDX-License-Identifier: MIT
// The writer thread: the only SQLite user in the traced process. It drains the threads'
// event buffers into chunks, samples RSS/VSZ, writes stacks, maps, threads and marks, and
// commits every MEMTRACE_COMMIT_MS (10 ms) so a killed program loses at most that much.
#ifndef MT_WRITER_H
#define MT_WRITER_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>

// Starts the writer thread, which fills the (new, empty) capture file at `path`. Returns 0 or a
// negative errno (the reason was already reported).
int mt_writer_start(const char* path);
// Opens the capture's files now, on the calling thread, if the writer thread has not yet: a
// root process may drop its privileges or chroot before that thread first runs, and then no
// longer be allowed to open them (what fails is reported).
void mt_writer_open_now(void);
// Final flush, symbols, status 'complete', one self-contained file; joins the thread.
void mt_writer_stop(void);
// What ends the capture from above, as a detach does (lifecycle's shutdown): the writer
// calls it on a thread of its own when MEMTRACE_LEAK_SIGNAL comes (recording.h).
void mt_writer_set_finisher(void (*finish)(void));
// fork: SQLite's own mutexes must not be held by the writer thread when another thread
// forks, or the child (which opens its own capture) deadlocks on them. The writer holds this
// lock whenever it is inside SQLite; fork's prepare handler takes it first.
void mt_writer_fork_lock(void);
void mt_writer_fork_unlock(void);
// A failed write inside SQLite (what the rows in writer_rows.c report): said once, what was
// committed kept, tracing stopped.
void mt_writer_fail_sqlite(const char* what);

// After mt_writer_stop: removes the capture if it holds no event (an image that exec'd before
// it allocated: a shell's forked child, say), so the exec'd image can take its name.
void mt_writer_discard_if_empty(void);

// Calls that the kernel or libc make on every thread, or allow only to a process of one
// thread: entering another user or mount namespace (unshare(CLONE_NEWUSER), setns: EINVAL
// with a second thread), the set*id family (glibc sets the ids on every thread and aborts
// when one fails where the caller succeeded). The writer thread must not be that other
// thread: mt_writer_step_aside blocks the caller's signals and, where the writer is the
// caller's only other thread, ends it and waits until its task is gone; the capture and its
// buffered events wait for mt_writer_come_back, which starts a new writer thread on the same
// capture (with the caller's credentials) and restores the signal mask. Neither changes
// errno, nor records the tracer's own heap calls as the program's.
typedef struct mt_writer_away {
    sigset_t mask; // the caller's
    bool paused;
} mt_writer_away;
void mt_writer_step_aside(mt_writer_away* away);
void mt_writer_come_back(mt_writer_away* away);

// Fork child: forget the parent's writer (its thread does not exist here); `parent` forked.
void mt_writer_forget(pid_t parent);

// Called from a fatal-signal handler: asks the writer to write everything recorded and
// finalize the capture, and waits for it at most timeout_ms.
void mt_writer_save_before_death(int sig, int timeout_ms);

// On the exit watcher (exit_watch.h), once every thread of process `pid` ended without the
// tracer's exit handler: writes what its buffers hold and finishes the capture, unless a
// lock it needs was held by a thread that died (then the capture stays truncated).
void mt_writer_finish_orphaned(pid_t pid);

// Reports an internal failure once on stderr (or to the launcher) and switches to
// pass-through.
void mt_writer_fail(const char* what, const char* why);

// A user mark (memtrace.h), queued for the writer. `name` is copied; `ts` is mt_clock_raw's,
// converted by the writer as events are.
void mt_writer_mark(const char* name, int what, int64_t ts, uint32_t tid);

#endif
