// SPDX-License-Identifier: MIT
// The data the flame graph page (flamegraph_page.h) embeds, shaped as JSON from a pruned
// flame tree (flame_tree.h): the program's title, the string table, the kept nodes as
// rows, and with a split tree the threads and their self values. The page's format is
// read by flamegraph_template.html; keep both in step.
#ifndef MR_FLAMEGRAPH_DATA_H
#define MR_FLAMEGRAPH_DATA_H

#include "flame_tree.h"
#include "flamegraph_page.h"

#include "memtrace/capture.h"

#include <jansson.h>

// The page's data: the capture, the moment it shows (mode, what, time, subtitle), the tree
// and whether noise frames start shown. The tree must be pruned (mr_flame_tree_prune).
// NULL when out of memory.
json_t* mr_flamegraph_data_build(const mr_flame_tree* g, mt_capture* cap,
                                 const mr_flamegraph_view* view);

#endif
