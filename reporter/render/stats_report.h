// SPDX-License-Identifier: MIT
// The report of `memreport stats`: totals, the top sites by bytes live at the peak, bytes
// allocated, allocations and temporary allocations, the histogram of sizes and the totals
// per thread, as the command counted them, as text or JSON. It only orders rows for its
// tables; it counts nothing itself.
#ifndef MR_STATS_REPORT_H
#define MR_STATS_REPORT_H

#include "capture_set.h"
#include "profile.h"
#include "report.h"
#include "symbols.h"

#include "memtrace/capture.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

// Power-of-two size classes: bucket 0 holds size 0, bucket k >= 1 holds [2^(k-1), 2^k).
#define MR_STATS_NBUCKETS 65

typedef struct mr_stats_thread {
    uint32_t tid;
    uint64_t allocations, bytes, frees, temporary, live_bytes, live_blocks;
    const mr_process* process; // several captures: the thread's process, else NULL
} mr_stats_thread;

// A row of the site tables: one stack, or the stacks of one site label merged.
typedef struct mr_stats_row {
    uint32_t callsite; // the stack shown: the row's own, or its largest one's when merged
    uint32_t nstacks;
    uint64_t stack_bytes; // bytes allocated by that stack
    const char* label;
    uint64_t count, bytes, temporary, at_peak;
    // Several captures: the row's process (its stack read in its symbols, under the
    // process as the outermost frame), else NULL.
    const mr_process* process;
} mr_stats_row;

typedef struct mr_stats_report {
    mt_capture* cap;
    const mr_symbols* sym;
    const mr_profile* profile; // allocations, bytes and the peak
    bool steps;                // an imported NPU heap, timed in allocation steps
    uint64_t frees, temporary;
    const uint64_t *hist_count, *hist_bytes; // MR_STATS_NBUCKETS each
    mr_stats_row* rows;                      // reordered for each table
    size_t nrows;
    size_t top; // rows per table
    bool all_frames;
    // Rows by site label: the allocation wrappers whose callers took their rows, sorted
    // (sites.h); by_label false with --stacks, whose rows are stacks.
    bool by_label;
    const char** wrappers;
    size_t nwrappers;
    const mr_stats_thread* threads; // by tid (by process, then tid, with several)
    size_t nthreads;
    // Several captures: their set (cap is the first process's; the profile holds the sums,
    // its peak the sum of each process's own) and the first input named; else NULL. Then
    // the peak shown is the most the processes held at one moment: joint_peak bytes at
    // joint_ts on the tree's time axis.
    const mr_capture_set* set;
    const char* first;
    uint64_t joint_peak;
    int64_t joint_ts;
} mr_stats_report;

// Writes the report. Returns 0 or an exit code (after printing the reason).
int mr_stats_report_write(const mr_report_to* to, mr_stats_report* r);

#endif
