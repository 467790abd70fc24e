// SPDX-License-Identifier: MIT
// The report of `memreport top`: the function view (functions.h) as a table of self and
// total per function, or one function's callers and callees from the call graph
// (callgraph.h) with their shares, as text or JSON. It sorts and cuts the lists it shows;
// it counts nothing itself.
#ifndef MR_TOP_REPORT_H
#define MR_TOP_REPORT_H

#include "callgraph.h"
#include "functions.h"
#include "profile.h"
#include "report.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct mr_top_report {
    const char* capture;
    const mr_query* query; // its range (range_from, range_to)
    const mr_profile* profile;
    bool steps; // an imported NPU heap, timed in allocation steps
    mr_metric metric;
    bool at_time;     // --at: live at a time, not at the peak
    bool range_given; // --range (either side)
    uint32_t tid;     // 0: every thread
    bool all_frames, sort_total;
    size_t top; // rows per list; SIZE_MAX: all
    const mr_functions* functions;
    // With --callers or --callees: the call graph and the function they name (an index of
    // functions); NULL for the table of functions.
    const mr_callgraph* graph;
    size_t focus;
    bool callers, callees;
    // Several captures: their number (0 for one), and with --by-process the process label
    // of each function (functions->v[i]), else NULL. Live bytes are then those of the
    // moment the processes together held the most, at joint_ts on the tree's time axis.
    size_t processes;
    const char* const* process_of;
    int64_t joint_ts;
} mr_top_report;

// The name of a metric in the report and on the command line: live, allocated, count,
// leaked.
const char* mr_top_report_metric_name(mr_metric m);

// Writes the report. Returns 0 or an exit code (after printing the reason).
int mr_top_report_write(const mr_report_to* to, const mr_top_report* r);

#endif
