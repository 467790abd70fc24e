// SPDX-License-Identifier: MIT
// memreport plot for native captures (issue 5): live heap bytes over time from a replay,
// RSS and VSZ from the sampled counters, marks and ranges, the peak, per-site rows.
// Draws with plot_draw.h; never parses NPU logs.
#include "plot.h"
#include "util.h"

int mr_plot_native(mt_capture* cap, const mr_plot_args* args) {
    (void)args;
    mr_error(mt_capture_path(cap), "plotting native captures is not implemented yet");
    return MR_EXIT_BAD_INPUT;
}
