// SPDX-License-Identifier: MIT
// A time series as a growable vector of (x, y) points: the native plot's (ns, bytes) and the
// NPU series' (step, bytes) alike. Neutral on purpose: no view owns it.
#ifndef MR_SERIES_H
#define MR_SERIES_H

#include <stddef.h>
#include <stdint.h>

typedef struct mr_point {
    int64_t x;  // time: ns, or an NPU allocation step
    uint64_t y; // value: bytes, or parts per million
} mr_point;

typedef struct mr_points {
    mr_point* v;
    size_t n, cap;
} mr_points;

// Appends a point; returns 0 or -ENOMEM.
int mr_series_points_push(mr_points* p, int64_t x, uint64_t y);
void mr_series_points_free(mr_points* p);

// realloc for arrays that grow by doubling to ~100 MB (point and event vectors).
void* mr_series_big_realloc(void* old, size_t bytes);
// mt_vec_grow (memtrace/vec.h) for those arrays: at least `first` elements (a power of two)
// from the start, then doubling. Returns 0 or -ENOMEM.
int mr_series_big_vec_grow(void* arr, size_t* cap, size_t need, size_t first, size_t elem);
#define MR_BIG_RESERVE(arr, cap, need, first)                                                      \
    mr_series_big_vec_grow((arr), (cap), (need), (first), sizeof **(arr))

#endif
