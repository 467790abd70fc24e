// SPDX-License-Identifier: MIT
// The sums of the views of several processes (procs_views.h).
#include "procs_views.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

void mr_procs_views_profile_add(mr_profile* sum, const mr_profile* p) {
    sum->live_bytes += p->live_bytes;
    sum->live_blocks += p->live_blocks;
    sum->end_bytes += p->end_bytes;
    sum->end_blocks += p->end_blocks;
    sum->alloc_bytes += p->alloc_bytes;
    sum->alloc_count += p->alloc_count;
    sum->peak_bytes += p->peak_bytes;
    sum->events += p->events;
}

// NULL (no file) before any file, as functions.c orders them.
static int cmp_str(const char* a, const char* b) {
    if (!a || !b)
        return (a != NULL) - (b != NULL);
    return strcmp(a, b);
}

static int cmp_function(const void* x, const void* y) {
    const mr_function *a = x, *b = y;
    int c = cmp_str(a->name, b->name);
    return c ? c : cmp_str(a->file, b->file);
}

int mr_procs_views_functions_split(const mr_functions* parts, size_t n, mr_functions* out,
                                   size_t** part_of) {
    size_t total = 0;
    for (size_t i = 0; i < n; i++)
        total += parts[i].n;
    *out = (mr_functions){.v = malloc((total ? total : 1) * sizeof *out->v)};
    *part_of = malloc((total ? total : 1) * sizeof **part_of);
    if (!out->v || !*part_of) {
        mr_functions_free(out);
        free(*part_of);
        *part_of = NULL;
        return -ENOMEM;
    }
    for (size_t i = 0; i < n; i++) {
        out->passed |= parts[i].passed;
        for (size_t k = 0; k < parts[i].n; k++) {
            (*part_of)[out->n] = i;
            out->v[out->n++] = parts[i].v[k];
        }
    }
    return 0;
}

int mr_procs_views_functions_sum(const mr_functions* parts, size_t n, mr_functions* out) {
    size_t* part_of;
    int e = mr_procs_views_functions_split(parts, n, out, &part_of);
    if (e)
        return e;
    free(part_of);
    // Sorted by (name, file), the rows of one function are neighbours: fold them.
    qsort(out->v, out->n, sizeof *out->v, cmp_function);
    size_t m = 0;
    for (size_t i = 0; i < out->n; i++) {
        if (m && !cmp_function(&out->v[m - 1], &out->v[i])) {
            for (int k = 0; k < MR_NMETRICS; k++) {
                out->v[m - 1].self[k] += out->v[i].self[k];
                out->v[m - 1].total[k] += out->v[i].total[k];
            }
        } else {
            out->v[m++] = out->v[i];
        }
    }
    out->n = m;
    return 0;
}
