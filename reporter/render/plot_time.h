// SPDX-License-Identifier: MIT
// What the time plots of render/ share (plot_native.c defines them, plot_procs.c uses them
// too): the unit of a time axis and a series as JSON.
#ifndef MR_PLOT_TIME_H
#define MR_PLOT_TIME_H

#include "series.h"

#include <jansson.h>
#include <stdint.h>

// The time unit of an axis of ns (its name, ns per unit in *scale), and a series as a JSON
// array of [ts, bytes].
const char* mr_plot_time_unit(int64_t ns, double* scale);
json_t* mr_plot_time_points_json(const mr_points* p);

#endif
