// SPDX-License-Identifier: MIT
// The capture's end when the process ends without the tracer's exit handler: a raw
// exit_group (Go's runtime ends every program so) or a signal whose default action kills
// (SIGKILL, SIGTERM, SIGINT). A watcher task shares the program's memory but not its thread
// group, so it outlives the program: once every thread of it is gone, it finishes the
// capture from the buffers the program left (mt_writer_finish_orphaned).
#ifndef MT_EXIT_WATCH_H
#define MT_EXIT_WATCH_H

// On the process's main thread (start, fork child): the thread whose thread-local storage
// the watcher borrows, which lasts as long as the process's memory.
void mt_exit_watch_note_main(void);

// Starts the watcher of this process's capture, if none runs, as the capture starts (on the
// program's thread: a program may end before its writer thread first runs). Nothing happens
// where the architecture or the kernel cannot (no pidfd). Tells the launcher its pid.
void mt_exit_watch_start(void);

// The tracer finishes the capture itself (exit handler, exec, fatal signal): the watcher is
// ended and reaped. Async-signal-safe; a no-op in a process that is not the watched one.
void mt_exit_watch_stop(void);

// Fork child: the parent's watcher is not the child's.
void mt_exit_watch_forget(void);

#endif
