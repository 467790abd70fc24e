// SPDX-License-Identifier: MIT
// A capture set: the captures of a process tree (memtrace -o DIR/), given as a directory or
// a list of files. Opens each capture (common/'s reader, the one door to a capture), reads
// what its meta says of its process, and puts them in a stable tree order: the parent of a
// capture is the capture named by its parent_capture, else the image its own pid ran before
// an exec, else the capture of its ppid running when it started; roots and siblings by
// start time, then pid, then file name. It computes no report and writes nothing.
#ifndef MR_CAPTURE_SET_H
#define MR_CAPTURE_SET_H

#include "memtrace/capture.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct mr_process {
    mt_capture* cap;
    char* path;             // as given, or DIR/NAME
    const char* name;       // the file name, within path
    int64_t pid, ppid;      // 0 when the capture does not say (an imported log)
    int64_t start_ns;       // wall clock of the capture's ts 0 (meta start_realtime_ns), or 0
    char* exe;              // meta exe, or NULL
    char* cmdline;          // meta cmdline: a JSON array of strings, or NULL
    char* parent_capture;   // meta parent_capture (a forked child's parent's file), or NULL
    size_t parent;          // index of the parent in the set, or MR_PROCESS_ROOT
    unsigned depth;         // 0 for a root
    struct mr_symbols* sym; // its stacks and names once loaded (cmd/procs.h), else NULL
} mr_process;

#define MR_PROCESS_ROOT SIZE_MAX

typedef struct mr_capture_set {
    mr_process* procs; // tree order: a parent, then its subtrees (depth first)
    size_t n;
} mr_capture_set;

// Whether the inputs of a command are a set rather than one capture: several paths, or
// one that is a directory.
bool mr_capture_set_wanted(int n, char* const* paths);

// Opens the captures: each path a capture file or a directory whose *.db files are taken
// (-wal and -shm companions and subdirectories left aside). Returns 0, or a negative errno
// of mt_capture_open (-ENOENT, -EACCES, -EIO, -EPROTO, ...; -EPROTO too for a directory
// without a capture; -EINVAL for a capture given twice; -ENOMEM) with the path at fault in
// bad and the reason in err. On failure nothing is left open.
int mr_capture_set_open(mr_capture_set* s, char* const* paths, size_t n, char* bad, size_t badlen,
                        char* err, size_t errlen);
void mr_capture_set_free(mr_capture_set* s);

#endif
