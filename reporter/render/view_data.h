// SPDX-License-Identifier: MIT
// What `memreport view` adds to the flame graph page's data (flamegraph_data.h): the
// header (command, duration, peak, leaked, allocations, threads, heaps) and the memory
// timeline (heap, RSS, VSZ, marks and ranges) the page draws with its axes. The numbers
// come from the moments (moments.h, with edges) and the timeline (heap_timeline.h); this
// file never replays a capture.
#ifndef MR_VIEW_DATA_H
#define MR_VIEW_DATA_H

#include "heap_timeline.h"
#include "moments.h"

#include "memtrace/capture.h"

#include <jansson.h>

// Sets o's "view". Returns 0 or -ENOMEM.
int mr_view_data_add(json_t* o, mt_capture* cap, const mr_heap_timeline* t, const mr_moments* m);

#endif
