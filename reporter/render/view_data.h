// SPDX-License-Identifier: MIT
// What `memreport view` adds to the flame graph page's data (flamegraph_data.h): the
// header (command, duration, peak, leaked by kind, allocations, threads, heaps) and the
// memory timeline (heap, RSS, VSZ, marks and ranges) the page draws with its axes. The
// numbers come from the moments (moments.h, with edges) and the timeline
// (heap_timeline.h); this file never replays a capture.
#ifndef MR_VIEW_DATA_H
#define MR_VIEW_DATA_H

#include "heap_timeline.h"
#include "moments.h"
#include "symbols.h"

#include "memtrace/capture.h"
#include "memtrace/schema.h"

#include <jansson.h>

// The classes of the blocks live at the end, as `leaks` tells them apart: the leak kinds of
// the program's blocks (MT_LEAK_*, MT_LEAK_UNCLASSIFIED without a verdict), then the
// blocks the C runtime holds for itself (runtime_held.h), whatever their kind.
#define MR_VIEW_RUNTIME_HELD MT_LEAK_COUNT_
#define MR_VIEW_LEAK_CLASSES (MT_LEAK_COUNT_ + 1)
int mr_view_data_leak_class(const mr_symbols* s, const mr_moment_end* e);

// Sets o's "view". Returns 0 or -ENOMEM.
int mr_view_data_add(json_t* o, mt_capture* cap, const mr_symbols* s, const mr_heap_timeline* t,
                     const mr_moments* m);

#endif
