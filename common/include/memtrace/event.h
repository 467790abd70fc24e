// SPDX-License-Identifier: MIT
// One decoded heap event, as readers see it and as the tracer buffers it.
// Plain data; shared by preload/, common/ and reporter/.
#ifndef MEMTRACE_EVENT_H
#define MEMTRACE_EVENT_H

#include <stdint.h>

// What a reader accepts (docs/capture-format.md, "Limits"); a chunk holding an event beyond
// them is corrupt. A size fits in int64_t, and so does the difference of any two times: no
// subtraction or sum of two of them overflows.
#define MT_EVENT_SIZE_MAX ((uint64_t)INT64_MAX)
#define MT_EVENT_TS_LIMIT (INT64_C(1) << 62) // -limit < ts < limit: 146 years of ns

typedef struct mt_event {
    uint64_t seq;      // global order, authoritative (gaps are allowed)
    int64_t ts;        // ns since capture start (or the step, for an NPU heap)
    uint64_t addr;     // block address (for NPU: a synthetic buffer id)
    uint64_t size;     // requested bytes; 0 on frees unless the call gave one (free_sized)
    uint32_t callsite; // leaf callsite id, 0 = no stack
    uint32_t tid;      // OS thread id
    uint8_t kind;      // mt_event_kind
    uint8_t heap;      // heap id (1 = libc)
} mt_event;

#endif
