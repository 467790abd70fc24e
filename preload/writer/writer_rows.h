// SPDX-License-Identifier: MIT
// The writer thread's rows besides events and marks: the program's command line, its stacks
// (frames and callsites), module mappings, threads and call counts. Run by the writer thread
// with its SQLite lock held (writer.c); a failure goes to mt_writer_fail_sqlite (writer.h).
#ifndef MT_WRITER_ROWS_H
#define MT_WRITER_ROWS_H

#include "memtrace/capture.h"

#include <stddef.h>

// /proc/self/cmdline as a JSON array of strings, cut to fit out[cap].
void mt_writer_rows_cmdline_json(char* out, size_t cap);
// What the callsite trie and the module maps gained since the last call.
void mt_writer_rows_stacks(mt_capture_writer* cw);
void mt_writer_rows_mappings(mt_capture_writer* cw);
// Threads not yet written, named from /proc (or from their name at exit).
void mt_writer_rows_threads(mt_capture_writer* cw);
// After a commit: the records of threads whose task is gone and whose last row is in it
// become free for new threads.
void mt_writer_rows_retire_gone(void);
// Every row above written again from the next call on: the capture was taken back to its
// last commit (writer.c, rewind_to_commit).
void mt_writer_rows_rewrite_all(void);
// Each entry point's calls summed over the threads, and the nested events lost.
void mt_writer_rows_call_counts(mt_capture_writer* cw);

#endif
