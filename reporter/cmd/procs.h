// SPDX-License-Identifier: MIT
// The commands' side of several captures (a process tree, capture_set.h): what summary and
// flamegraph do when given a directory or more than one capture. Their own files hand over
// here once their options are parsed (mr_capture_set_wanted says when).
#ifndef MR_PROCS_H
#define MR_PROCS_H

#include "capture_set.h"
#include "flamegraph_page.h"
#include "options.h"

#include <stdbool.h>

// The help lines of a command that takes a process tree's captures.
#define MR_HELP_PROCS                                                                              \
    "Several captures, or a directory of them (memtrace -o DIR/), are read as the processes\n"     \
    "of one run, each placed under its parent.\n"

// memreport summary CAPTURE... | DIR: each process and the total. Returns an exit code
// (a capture named twice: a usage error with the hint of `help`).
int mr_procs_summary(const mr_opts* o, char* const* paths, int n, const char* help);

// The options of memreport flamegraph that apply to several processes.
typedef struct mr_procs_flame_args {
    const char* output; // NULL: memreport-flamegraph-NAME.html, NAME the first input's
    bool force, all_frames, inverted;
    const char* orientation;
    mr_flamegraph_mode mode; // peak (each process's own) or leaks
    double min_width;
} mr_procs_flame_args;

// memreport flamegraph CAPTURE... | DIR: one page, each process a root frame of its own
// stacks. Returns an exit code.
int mr_procs_flamegraph(const mr_procs_flame_args* a, char* const* paths, int n, const char* help);

#endif
