// SPDX-License-Identifier: MIT
// Growing a heap array: the one place that doubles a capacity, checks the multiplication
// for overflow and keeps the old array when realloc fails. Header-only, no global state;
// never used on the tracer's hot path (it calls realloc).
#ifndef MEMTRACE_VEC_H
#define MEMTRACE_VEC_H

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

// Capacity of an array that grows from empty.
#define MT_VEC_MIN_CAP 16

// Makes the array at *arr (arr: the address of any object pointer, e.g. &v->items) hold at
// least `need` elements of `elem` bytes: the capacity doubles (from MT_VEC_MIN_CAP) until
// it is enough. Returns 0, or -ENOMEM with *arr and *cap unchanged (on realloc failure or
// if the size would overflow). The pointer is read and written with memcpy so any element
// type works without aliasing a `T*` through a `void**`.
static inline int mt_vec_grow(void* arr, size_t* cap, size_t need, size_t elem) {
    if (need <= *cap)
        return 0;
    if (elem == 0)
        return -ENOMEM;
    size_t nc = *cap ? *cap : MT_VEC_MIN_CAP;
    while (nc < need) {
        if (nc > SIZE_MAX / 2)
            return -ENOMEM;
        nc *= 2;
    }
    if (nc > SIZE_MAX / elem)
        return -ENOMEM;
    void* old;
    memcpy(&old, arr, sizeof old);
    void* grown = realloc(old, nc * elem);
    if (!grown)
        return -ENOMEM;
    memcpy(arr, &grown, sizeof grown);
    *cap = nc;
    return 0;
}

// mt_vec_grow for a typed pointer: the element size is that of **arr.
#define MT_VEC_RESERVE(arr, cap, need) mt_vec_grow((arr), (cap), (need), sizeof **(arr))

#endif
