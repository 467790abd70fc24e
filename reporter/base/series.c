// SPDX-License-Identifier: MIT
#include "series.h"

#include "memtrace/vec.h"

#include <errno.h>
#include <malloc.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

static void tune_big_arrays(void) {
    // The point and event arrays grow to ~100 MB by doubling. glibc's dynamic threshold
    // keeps blocks under 32 MB on the heap, where each realloc copies into fresh pages;
    // mmapped blocks (they start at 1 MiB) grow with mremap, without copying. memreport is
    // a command-line tool, so setting the process-wide threshold is fine.
    static bool tuned;
    if (!tuned) {
        mallopt(M_MMAP_THRESHOLD, 1 << 20);
        tuned = true;
    }
}

void* mr_series_big_realloc(void* old, size_t bytes) {
    tune_big_arrays();
    return realloc(old, bytes);
}

int mr_series_big_vec_grow(void* arr, size_t* cap, size_t need, size_t first, size_t elem) {
    tune_big_arrays();
    return mt_vec_grow(arr, cap, need < first ? first : need, elem);
}

int mr_series_points_push(mr_points* p, int64_t x, uint64_t y) {
    // 65536 points are 1 MiB: mmapped from the start (see tune_big_arrays), grown by mremap.
    if (MR_BIG_RESERVE(&p->v, &p->cap, p->n + 1, 65536))
        return -ENOMEM;
    p->v[p->n++] = (mr_point){x, y};
    return 0;
}

void mr_series_points_free(mr_points* p) {
    free(p->v);
    memset(p, 0, sizeof *p);
}
