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
// The largest mean interval the tracer takes (MEMTRACE_SAMPLE_BYTES, preload/settings.c);
// readers refuse more.
#define MT_SAMPLE_BYTES_MAX (1 << 30)

// Whether events of this kind and heap were sampled: the allocations of the libc and python
// heaps but the custom ones (memtrace.h reports them all). The mmap and NPU heaps are never
// sampled.
static inline bool mt_sample_kind(int heap, int kind) {
    return (heap == MT_HEAP_LIBC || heap == MT_HEAP_PYTHON) && mt_kind_is_alloc(kind) &&
           kind != MT_KIND_CUSTOM_ALLOC;
}

// 1 / P(an allocation of size bytes is sampled) with mean interval n bytes.
static inline double mt_sample_inverse_probability(uint64_t size, uint64_t n) {
    return size && n ? 1.0 / -expm1(-(double)size / (double)n) : 1.0;
}

static inline uint64_t mt_sample_weight_rounded(uint64_t size, uint64_t n) {
    if (!size || !n || size / 64 >= n) // 64 intervals and more: sampled but for exp(-64)
        return size;
    return (uint64_t)llround((double)size * mt_sample_inverse_probability(size, n));
}

// The bytes a recorded allocation of `size` bytes stands for (size itself when n is 0).
// Below N the weight grows by about half a byte a byte, so rounded, 2^k - 1 and 2^k bytes
// would often weigh the same (7 and 8 bytes both 4100 at N = 4096): one byte less for 2^k - 1
// keeps each power of two's weight above every smaller size's (mt_sample_size_bits).
static inline uint64_t mt_sample_weight_bytes(uint64_t size, uint64_t n) {
    uint64_t w = mt_sample_weight_rounded(size, n);
    if (size && size != UINT64_MAX && !(size & (size + 1))) { // 2^k - 1
        uint64_t next = mt_sample_weight_rounded(size + 1, n);
        if (w >= next)
            w = next - 1;
    }
    return w;
}

// The weights of the powers of two, to tell the requested size of a weighed allocation by
// its power of two (the weight grows with the size): `stats`' histogram of sizes.
typedef struct mt_sample_sizes {
    uint64_t at[64]; // at[k]: the weight of 2^k bytes
} mt_sample_sizes;

static inline void mt_sample_sizes_init(mt_sample_sizes* t, uint64_t n) {
    for (unsigned k = 0; k < 64; k++)
        t->at[k] = mt_sample_weight_bytes(1ull << k, n);
}

// 64 minus the leading zeros of the requested size (0 for 0 bytes) of an allocation read
// with `weighed` bytes.
static inline unsigned mt_sample_size_bits(const mt_sample_sizes* t, uint64_t weighed) {
    unsigned k = 0;
    while (k < 64 && weighed >= t->at[k])
        k++;
    return k;
}

#endif
