// SPDX-License-Identifier: MIT
// The JSON a plot writes beside its picture (plot --data): its unit and scale, its length
// in steps, its named regions and its point series, streamed (a million-step series would
// not fit a jansson tree cheaply). And, for the plots that read marks back from a capture,
// one integer attribute of a mark's JSON attributes. The layer that draws (npu/) fills the
// struct; it never builds or parses JSON itself.
#ifndef MR_PLOT_DATA_H
#define MR_PLOT_DATA_H

#include "series.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

typedef struct mr_plot_data_region {
    const char* name;
    int64_t start;
    bool label_drawn;
} mr_plot_data_region;

typedef struct mr_plot_data_series {
    const char* name;
    const mr_points* points;
} mr_plot_data_series;

typedef struct mr_plot_data {
    const char* unit;
    uint64_t scale;
    int64_t total_steps;
    const mr_plot_data_region* regions;
    size_t nregions;
    const mr_plot_data_series* series;
    size_t nseries;
} mr_plot_data;

// Writes the document to fp (the caller checks fp's errors when it commits the file).
void mr_plot_data_write(FILE* fp, const mr_plot_data* d);

// The integer attribute `key` of a mark's attributes (a JSON object text, or NULL). Returns
// 0 with it in *out, or -EPROTO when there is no such integer.
int mr_plot_data_attr_int(const char* attrs, const char* key, int64_t* out);

#endif
