// SPDX-License-Identifier: MIT
// The processes of a tree on one time axis (procs_timeline.h).
#include "procs_timeline.h"

#include "messages.h"

#include <stdlib.h>
#include <string.h>

static int cmp_ts(const void* a, const void* b) {
    int64_t x = *(const int64_t*)a, y = *(const int64_t*)b;
    return (x > y) - (x < y);
}

// The origin: the earliest start a capture records. A capture without one (an imported
// log) starts at the origin.
static int64_t origin_of(const mr_capture_set* s) {
    int64_t o = 0;
    for (size_t i = 0; i < s->n; i++)
        if (s->procs[i].start_ns > 0 && (!o || s->procs[i].start_ns < o))
            o = s->procs[i].start_ns;
    return o;
}

// The sorted distinct times of every point and every end (+1: the band drops after it).
static int sample_times(mr_procs_timeline* t) {
    size_t cap = 0;
    for (size_t i = 0; i < t->n; i++)
        cap += t->procs[i].t.heap.n + 1;
    t->times = malloc((cap + 1) * sizeof *t->times);
    if (!t->times)
        return -1;
    size_t n = 0;
    for (size_t i = 0; i < t->n; i++) {
        const mr_points* h = &t->procs[i].t.heap;
        for (size_t k = 0; k < h->n; k++)
            t->times[n++] = h->v[k].x;
        t->times[n++] = t->procs[i].end + 1;
    }
    qsort(t->times, n, sizeof *t->times, cmp_ts);
    size_t u = 0;
    for (size_t k = 0; k < n; k++)
        if (!u || t->times[k] != t->times[u - 1])
            t->times[u++] = t->times[k];
    t->ntimes = u;
    return 0;
}

// Each process's value at every sample time, and the highest sum.
static int stack_values(mr_procs_timeline* t) {
    t->values = calloc(t->ntimes * t->n + 1, sizeof *t->values);
    if (!t->values)
        return -1;
    for (size_t i = 0; i < t->n; i++) {
        const mr_proc_series* p = &t->procs[i];
        size_t j = 0; // the next point of p not yet reached
        uint64_t held = 0;
        for (size_t k = 0; k < t->ntimes; k++) {
            while (j < p->t.heap.n && p->t.heap.v[j].x <= t->times[k])
                held = p->t.heap.v[j++].y;
            t->values[k * t->n + i] = t->times[k] > p->end ? 0 : held;
        }
    }
    for (size_t k = 0; k < t->ntimes; k++) {
        uint64_t sum = 0;
        for (size_t i = 0; i < t->n; i++)
            sum += t->values[k * t->n + i];
        if (sum > t->total_peak) {
            t->total_peak = sum;
            t->total_peak_ts = t->times[k];
        }
    }
    return 0;
}

int mr_procs_timeline_build(const mr_capture_set* s, int64_t buckets, mr_procs_timeline* t) {
    memset(t, 0, sizeof *t);
    t->origin_ns = origin_of(s);
    t->procs = calloc(s->n + 1, sizeof *t->procs);
    if (!t->procs) {
        mr_error(s->procs[0].path, "out of memory");
        return MR_EXIT_IO;
    }
    for (size_t i = 0; i < s->n; i++) {
        const mr_process* p = &s->procs[i];
        mr_proc_series* ps = &t->procs[i];
        ps->proc = p;
        ps->offset = p->start_ns > 0 ? p->start_ns - t->origin_ns : 0;
        ps->end = ps->offset + mr_heap_timeline_duration(p->cap);
        if (ps->end > t->duration)
            t->duration = ps->end;
    }
    mr_timeline_opts o = {.buckets = buckets, .bucket_ns = t->duration / buckets + 1};
    int rc = 0;
    for (size_t i = 0; !rc && i < s->n; i++) {
        o.shift = t->procs[i].offset;
        rc = mr_heap_timeline_build(s->procs[i].cap, &o, &t->procs[i].t);
        if (!rc)
            t->n = i + 1;
    }
    if (!rc && (sample_times(t) || stack_values(t))) {
        mr_error(s->procs[0].path, "out of memory");
        rc = MR_EXIT_IO;
    }
    if (rc)
        mr_procs_timeline_free(t);
    return rc;
}

void mr_procs_timeline_free(mr_procs_timeline* t) {
    for (size_t i = 0; i < t->n; i++)
        mr_heap_timeline_free(&t->procs[i].t);
    free(t->procs);
    free(t->times);
    free(t->values);
    memset(t, 0, sizeof *t);
}
