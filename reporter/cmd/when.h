// SPDX-License-Identifier: MIT
// The moment, range and thread given on the command line (mr_when, parsed by opts.h)
// placed in a capture.
#ifndef MR_WHEN_H
#define MR_WHEN_H

#include "extent.h"
#include "opts.h"
#include "profile.h"

#include "memtrace/capture.h"

#include <stdbool.h>
#include <stdint.h>

// Checks t against the capture `path` (its heap's extent): steps only for an NPU capture,
// ns only for a native one, and inside the capture. Returns 0 with the time in the heap's
// unit in *ts, or the usage exit code after an error naming the capture's extent.
int mr_when_check_time(const char* option, const char* value, mr_time t, const char* path,
                       mr_extent extent, int64_t* ts);

// The query of w on the capture's default heap, its times placed in the capture and its
// names looked up in the heap's marks (*steps: the heap is timed in NPU steps). With a
// range and moment MR_AT_PEAK, the model takes the highest point within the range.
// Returns 0 or the usage exit code after the reason (an unknown or ambiguous name: the
// marks it could be).
int mr_when_query(const mr_when* w, const char* path, mt_capture* cap, mr_query* q, bool* steps);

#endif
