// SPDX-License-Identifier: MIT
// The flame graph page's run (cmd_flamegraph.c) as `memreport view` (cmd_view.c) asks for
// it: the temporal page with the buckets' edges, the header and the memory timeline.
#ifndef MR_FLAMEGRAPH_RUN_H
#define MR_FLAMEGRAPH_RUN_H

#include <stdbool.h>

// Writes the view page of the capture at path to output whole, or leaves nothing.
// Returns an exit code.
int mr_flamegraph_run_view_page(const char* path, const char* output, bool force, bool all_frames);
// The same of several captures or a directory of them (a process tree): a page per process,
// the first the one the page opens with. `help` is the command's, for a usage error.
int mr_flamegraph_run_view_procs(char* const* paths, int n, const char* output, bool force,
                                 bool all_frames, const char* help);

// memreport-WHAT-NAME.html, NAME the capture's file name without .db; NULL when out of
// memory.
char* mr_flamegraph_run_default_output(const char* what, const char* capture);

#endif
