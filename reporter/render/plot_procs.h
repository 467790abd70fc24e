// SPDX-License-Identifier: MIT
// memreport plot of a process tree (a directory or several captures): each process's live
// heap a band of a stacked area chart on one wall-clock axis (model/procs_timeline.h), the
// total's peak marked, and with --data every process's series as JSON.
#ifndef MR_PLOT_PROCS_H
#define MR_PLOT_PROCS_H

#include "capture_set.h"
#include "plot.h"

// Plots the processes of s (native captures) to args->output, and args->data. Returns an
// exit code after printing the reason.
int mr_plot_procs(const mr_capture_set* s, const mr_plot_args* args);

#endif
