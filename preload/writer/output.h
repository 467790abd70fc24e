// SPDX-License-Identifier: MIT
// Where a capture goes: its file is created here, never over an existing one, and the
// launcher (memtrace) is told which captures this run wrote.
#ifndef MT_OUTPUT_H
#define MT_OUTPUT_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

// Creates this process's capture file, empty, mode 0600: the configured path; if that exists
// (an earlier run, the image before an exec, a symlink planted there), NAME.<pid>.db when
// the pattern has no %p, then the first free of NAME.2.db, NAME.3.db, ... No existing file
// or symlink is ever opened or overwritten. A forked child (child != 0) whose pattern has no
// %p starts from NAME.<pid>.db. Writes the path
// into `path` and returns 0, or returns a negative errno.
// A pattern ending in '/' names a directory that gets one capture per process,
// DIR/<pid>.<program>.db (DIR/<pid>.<program>.2.db, ... when taken); DIR is created 0700 if
// missing and refused (-EPERM) unless it is a real directory (no symlink), owned by this
// user and not writable by group or others.
int mt_output_create(int child, char* path, size_t len);
// Whether captures go into a directory (MEMTRACE_OUTPUT ends in '/').
bool mt_output_is_dir(void);

// Tells the launcher (MEMTRACE_REPORT, a file the launcher made) about this process: a
// capture it started, or why it stopped recording (false: no launcher heard it).
void mt_output_report_capture(const char* path);
bool mt_output_report_failure(const char* message);
// Process pid's capture finished (status complete): a started one without this line was cut
// short (the process killed and its exit watcher with it, or the watcher gave up).
void mt_output_report_finished(pid_t pid, const char* path);
// The exit watcher of this process's capture (exit_watch.h): the launcher waits for it
// where the process ended without finishing its capture.
void mt_output_report_watcher(pid_t watcher);

// Whether the process's root directory is another than when tracing started (chroot): paths
// then name files of the new root, where the tracer makes nothing (the symbol cache).
void mt_output_note_root(void);
bool mt_output_root_changed(void);

#endif
