// SPDX-License-Identifier: MIT
// Where a report renderer (render/*_report.h) writes: the output file ("-" = stdout),
// whether it may replace an existing one, and JSON or text. Commands fill it from their
// shared options (cmd/opts.h, mr_opts_report_to).
#ifndef MR_REPORT_H
#define MR_REPORT_H

#include <stdbool.h>

typedef struct mr_report_to {
    const char* output;
    bool force;
    bool json;
} mr_report_to;

#endif
