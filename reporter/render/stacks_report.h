// SPDX-License-Identifier: MIT
// The report of `memreport stacks`: the distinct allocation stacks (as the command groups
// them) with their totals, fully symbolized (inlined frames expanded), as text or JSON.
// Never groups or sorts itself.
#ifndef MR_STACKS_REPORT_H
#define MR_STACKS_REPORT_H

#include "capture_set.h"
#include "profile.h"
#include "report.h"
#include "symbols.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

// A displayed stack: the frames shown (leaf first) and the merged numbers.
typedef struct mr_stacks_entry {
    uint32_t* frames;
    size_t n;
    uint32_t leaf;     // one of the merged callsites (for truncation, name lookups)
    mr_profile_row st; // the merged metrics (its callsite and tid unused)
    // Several captures: the stack's process (its symbols; shown as the outermost frame);
    // else NULL.
    const mr_process* process;
} mr_stacks_entry;

typedef struct mr_stacks_report {
    const char* capture;
    const mr_symbols* sym;         // NULL for several captures (each entry has its own)
    const mr_profile* profile;     // the totals
    const mr_stacks_entry* stacks; // all of them, in the order shown
    size_t n, top;                 // the first `top` of the n are listed
    bool all_frames;
    // Several captures: the processes and each one's profile (totals), else NULL.
    const mr_capture_set* set;
    const mr_profile* profiles;
} mr_stacks_report;

// Writes the report. Returns 0 or an exit code (after printing the reason).
int mr_stacks_report_write(const mr_report_to* to, const mr_stacks_report* r);

#endif
