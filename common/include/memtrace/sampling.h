// SPDX-License-Identifier: MIT
// Sampled captures (MEMTRACE_SAMPLE_BYTES=N; meta sample_bytes and sample_method): an
// allocation of s bytes of the libc heap was recorded with probability 1-exp(-s/N), so it
// stands for s/(1-exp(-s/N)) bytes (the Horvitz-Thompson estimate, unbiased). The event
// reader applies this weight (capture_events.c), the one place every report reads through.
// Plain functions; no allocation.
#ifndef MEMTRACE_SAMPLING_H
#define MEMTRACE_SAMPLING_H

#include "memtrace/schema.h"

#include <math.h>
#include <stdbool.h>
#include <stdint.h>

// The only method there is; a capture naming another is refused, never misread.
#define MT_SAMPLE_METHOD_POISSON_BYTES "poisson-bytes"

// Whether events of this kind and heap were sampled: the libc heap's allocations but the
// custom ones (memtrace.h reports them all). The mmap and NPU heaps are never sampled.
static inline bool mt_sample_kind(int heap, int kind) {
    return heap == MT_HEAP_LIBC && mt_kind_is_alloc(kind) && kind != MT_KIND_CUSTOM_ALLOC;
}

// 1 / P(an allocation of size bytes is sampled) with mean interval n bytes.
static inline double mt_sample_inverse_probability(uint64_t size, uint64_t n) {
    return size && n ? 1.0 / -expm1(-(double)size / (double)n) : 1.0;
}

// The bytes a recorded allocation of `size` bytes stands for (size itself when n is 0).
static inline uint64_t mt_sample_weight_bytes(uint64_t size, uint64_t n) {
    if (!size || !n)
        return size;
    return (uint64_t)llround((double)size * mt_sample_inverse_probability(size, n));
}

#endif
