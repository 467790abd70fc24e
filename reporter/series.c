// SPDX-License-Identifier: MIT
#include "series.h"

#include <errno.h>
#include <malloc.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

void* mr_big_realloc(void* old, size_t bytes) {
    // The point and event arrays grow to ~100 MB by doubling. glibc's dynamic threshold
    // keeps blocks under 32 MB on the heap, where each realloc copies into fresh pages;
    // mmapped blocks (they start at 1 MiB) grow with mremap, without copying. memreport is
    // a command-line tool, so setting the process-wide threshold is fine.
    static bool tuned;
    if (!tuned) {
        mallopt(M_MMAP_THRESHOLD, 1 << 20);
        tuned = true;
    }
    return realloc(old, bytes);
}

int mr_points_push(mr_points* p, int64_t x, uint64_t y) {
    if (p->n == p->cap) {
        size_t nc = p->cap ? p->cap * 2 : 65536; // 1 MiB: mmapped (see mallopt), grows by mremap
        mr_point* nv = mr_big_realloc(p->v, nc * sizeof *nv);
        if (!nv)
            return -ENOMEM;
        p->v = nv;
        p->cap = nc;
    }
    p->v[p->n++] = (mr_point){x, y};
    return 0;
}

void mr_points_free(mr_points* p) {
    free(p->v);
    memset(p, 0, sizeof *p);
}
