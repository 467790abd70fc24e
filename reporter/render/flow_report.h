// SPDX-License-Identifier: MIT
// The report of `memreport flow`: a flow graph (model/flowgraph.h) as Graphviz DOT, as SVG
// drawn by Graphviz's dot (run as a child process, fed the DOT text), or as JSON. Every
// number comes from the graph; this module only lays it out.
#ifndef MR_FLOW_REPORT_H
#define MR_FLOW_REPORT_H

#include "flowgraph.h"
#include "report.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

// One moment of the graph, as the user named it.
typedef struct mr_flow_moment {
    const char* name; // "peak", or the --at value given
    int64_t ts;       // its time (ns, or the step of an NPU heap)
} mr_flow_moment;

typedef struct mr_flow_view {
    const char* capture;
    const mr_flow* graph;          // finished
    const mr_flow_moment* moments; // graph->nt of them
    bool steps;                    // times are NPU steps
    double min_share;              // 0..1, as given to mr_flowgraph_finish
    bool svg;                      // draw with dot (else DOT text, or JSON with to->json)
} mr_flow_view;

// The message when dot cannot be found, and the exit code it goes with (3).
#define MR_FLOW_NO_DOT ".svg needs Graphviz's dot (apt install graphviz); write .dot instead"

// Writes the report. Returns 0 or an exit code (after printing the reason).
int mr_flow_report_write(const mr_report_to* to, const mr_flow_view* v);

// True when `dot` is an executable file in a directory of PATH.
bool mr_flow_report_have_dot(void);

#endif
