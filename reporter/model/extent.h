// SPDX-License-Identifier: MIT
// Which heap of a capture a report shows, and how far the capture reaches in time.
#ifndef MR_EXTENT_H
#define MR_EXTENT_H

#include "memtrace/capture.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

// The heap a report shows by default: MT_HEAP_NPU for a capture imported from an NPU log
// (heap 2 of kind 'npu' and no libc heap; its time unit is the allocation step, not ns),
// MT_HEAP_LIBC otherwise.
int mr_extent_default_heap(mt_capture* cap);
// memreport ... --heap NAME: from now on mr_extent_default_heap answers the heap of that name
// (heap.name) in captures that have one. NULL: back to the default.
void mr_extent_want_heap(const char* name);
const char* mr_extent_wanted_heap(void); // NULL: none asked
// The id of the heap named `name` in the capture, or 0 if it has none.
int mr_extent_heap_named(mt_capture* cap, const char* name);
// The name of the capture's heap `id` (malloc'd), or NULL if it has none (or no memory).
char* mr_extent_heap_name(mt_capture* cap, int id);
// Whether the capture has heap `id`.
bool mr_extent_has_heap(mt_capture* cap, int id);

// The extent in time of a capture's heap: a native heap's duration in ns (steps false), or
// an imported NPU heap's number of allocation steps (steps true; they run 0..end-1).
typedef struct mr_extent {
    int64_t end;
    bool steps;
} mr_extent;
mr_extent mr_extent_of(mt_capture* cap, int heap);

// A time of a report: "step 3" for steps, else a duration ("1.234 s", "12.5 ms"). Returns buf.
char* mr_extent_format_time(int64_t t, bool steps, char* buf, size_t len);

#endif
