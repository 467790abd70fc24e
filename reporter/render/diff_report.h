// SPDX-License-Identifier: MIT
// The report of `memreport diff`: two runs' totals and their matched functions and stacks
// (model/diff.h), largest change first, as text, JSON or msMemScope's memory_compare CSV.
// It shows the rows in the order it is given; it matches and sorts nothing itself.
#ifndef MR_DIFF_REPORT_H
#define MR_DIFF_REPORT_H

#include "diff.h"
#include "report.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct mr_diff_report {
    const char *base_capture, *new_capture;
    bool npu;                  // two imported NPU logs (device npu), else native (cpu)
    const mr_diff_row* totals; // the whole runs
    // Bytes the C runtime holds for itself at the end, [MR_DIFF_BASE] and [MR_DIFF_NEW],
    // which totals' leaked_bytes leave out; NULL for NPU logs (no C runtime).
    const uint64_t* held;
    const mr_diff *functions, *stacks;
    // Two directories: their processes matched (key: "NAME #N"), functions then keyed
    // (process, name, file) and stacks with the process outermost; else NULL.
    const mr_diff* processes;
    size_t top;  // the first `top` functions and stacks are listed; SIZE_MAX: all
    bool passed; // a function's self passed the allocation plumbing (functions.h)
    bool csv;    // msMemScope's memory_compare CSV instead of text or JSON
} mr_diff_report;

// Writes the report. Returns 0 or an exit code (after printing the reason).
int mr_diff_report_write(const mr_report_to* to, const mr_diff_report* r);

#endif
