// SPDX-License-Identifier: MIT
// The report of `memreport leaks`: the groups of blocks live at the end, as the command
// grouped and classified them (the program's, the C runtime's, suppressed), with their
// stacks and totals and what each suppression matched, as text or JSON. Never classifies
// anything itself.
#ifndef MR_LEAKS_REPORT_H
#define MR_LEAKS_REPORT_H

#include "capture_set.h"
#include "report.h"
#include "symbols.h"

#include "memtrace/capture.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

// Whose blocks a group is.
typedef enum mr_leaks_owner {
    MR_LEAKS_PROGRAM,    // the program's leaks
    MR_LEAKS_RUNTIME,    // held by the C runtime for itself (runtime_held.h)
    MR_LEAKS_SUPPRESSED, // matched by a suppression
} mr_leaks_owner;

// Blocks live at the end with one symbolized stack.
typedef struct mr_leaks_group {
    uint32_t callsite;
    int kind; // mt_leak_kind: MT_LEAK_UNCLASSIFIED without a leak scan
    uint64_t bytes, blocks;
    mr_leaks_owner owner;
    // Several captures: the group's process (its symbols; shown as the outermost frame of
    // the stack); else NULL.
    const mr_process* process;
} mr_leaks_group;

// One line of a suppressions file and what it matched.
typedef struct mr_leaks_suppression {
    char* pattern; // as written (after "leak:" for LeakSanitizer lines)
    char* glob;    // the fnmatch pattern it is matched with
    bool lsan;     // leak:PATTERN: any function, file or module name; else function names
    unsigned line;
    uint64_t bytes, blocks, stacks;
} mr_leaks_suppression;

typedef struct mr_leaks_report {
    mt_capture* cap;
    const mr_symbols* sym;
    const mr_leaks_group* groups; // largest first
    size_t n;
    size_t top; // groups listed per section (totals count all)
    bool all_frames;
    const mr_leaks_suppression* suppressions;
    size_t nsuppressions;
    // Several captures: the processes (cap is the first's) and the input as named.
    const mr_capture_set* set;
    const char* input;
    bool scanned; // a leak scan gave kinds (docs/leaks.md): groups are listed by kind
    // Else why the capture's scan did not run, as it says (NULL: a capture made before the
    // scan existed): the report says the blocks are not classified, and why.
    const char* no_scan;
} mr_leaks_report;

// Writes the report. Returns 0 or an exit code (after printing the reason).
int mr_leaks_report_write(const mr_report_to* to, const mr_leaks_report* r);

#endif
