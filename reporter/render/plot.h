// SPDX-License-Identifier: MIT
// memreport plot: the picture of a capture's memory over time. plot.c parses the command
// line and dispatches: an NPU heap (an imported capture, or a log imported on the fly) goes
// to npu/npu_plot.c, a native capture (heap 1) to plot_native.c. Drawing helpers: plot_draw.h.
#ifndef MR_PLOT_H
#define MR_PLOT_H

#include "memtrace/capture.h"

#include <stdbool.h>
#include <stddef.h>

typedef struct mr_plot_args {
    const char* input;  // capture or log, as given
    const char* output; // .png or .svg
    const char* data;   // --data JSON path, or NULL
    bool force;
    int top_sites;      // --sites N: rows for the N call sites holding most bytes (0: none)
    const char** sites; // --site NAME (repeatable): rows for these functions
    size_t nsites;
} mr_plot_args;

// 0 when path names a picture the plots write (.png or .svg, in any case), else
// MR_EXIT_USAGE after saying why: another name (x.jpg) is refused, never written as PNG.
int mr_plot_check_output(const char* path);
// The NPU StaticAllocation plot (npu/npu_plot.c) of an NPU log, parsed on the fly, or of a
// capture whose default heap is the NPU heap. Each returns an exit code.
int mr_plot_npu_log(const mr_plot_args* args);
int mr_plot_npu_capture(mt_capture* cap, const mr_plot_args* args);
// The time plot of a native capture's libc heap, RSS and VSZ. Returns an exit code.
int mr_plot_native(mt_capture* cap, const mr_plot_args* args);

#endif
