// SPDX-License-Identifier: MIT
// The five plotted series (§2.5-2.7), and freeing a parsed log.
#include "messages.h"
#include "npu_internal.h"
#include "output_file.h"
#include "siphash.h"

#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static void regions_free(mr_npu_region* r, size_t n) {
    for (size_t i = 0; i < n; i++)
        free(r[i].name);
    free(r);
}

void mr_npu_log_free(mr_npu_log* log) {
    for (size_t i = 0; i < log->nfuncs; i++)
        free(log->funcs[i]);
    free(log->funcs);
    regions_free(log->regions, log->nregions);
    mr_series_points_free(&log->max_raw);
    mr_series_points_free(&log->frag);
    mr_series_points_free(&log->used);
    mr_series_points_free(&log->free);
    free(log->ev);
    memset(log, 0, sizeof *log);
}

// ---- the five series (§2.5-2.7)

static int point_cmp(const mr_point* a, const mr_point* b) {
    if (a->x != b->x)
        return a->x < b->x ? -1 : 1;
    return a->y < b->y ? -1 : a->y > b->y;
}

// `increased` is sorted by (x, bytes): x never decreases along the timeline and each
// record is larger than the last. So membership is a binary search, where upstream scans
// the whole list per candidate (quadratic, §4).
static bool is_increase(const mr_points* inc, const mr_point* p) {
    size_t lo = 0, hi = inc->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = point_cmp(&inc->v[mid], p);
        if (c == 0)
            return true;
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return false;
}

// a - b, clamped to the int64 range: steps of a crafted capture can be anything.
static int64_t saturating_sub(int64_t a, int64_t b) {
    if (b < 0 && a > INT64_MAX + b)
        return INT64_MAX;
    if (b > 0 && a < INT64_MIN + b)
        return INT64_MIN;
    return a - b;
}

int mr_npu_series_build(mr_npu_series* s, bool legacy, mr_points* max_raw, mr_points* frag,
                        mr_points* used, mr_points* free_pts, mr_npu_region** regions,
                        size_t* nregions) {
    memset(s, 0, sizeof *s);
    s->legacy = legacy;
    s->max = *max_raw;
    s->frag = *frag;
    s->used = *used;
    s->free = *free_pts;
    s->regions = *regions;
    s->nregions = *nregions;
    memset(max_raw, 0, sizeof *max_raw);
    memset(frag, 0, sizeof *frag);
    memset(used, 0, sizeof *used);
    memset(free_pts, 0, sizeof *free_pts);
    *regions = NULL;
    *nregions = 0;
    // Legacy: "increased" against the previous raw value, no running max (§5).
    uint64_t run = 0;
    for (size_t i = 0; i < s->max.n; i++) {
        mr_point* p = &s->max.v[i];
        if (p->y > run && mr_series_points_push(&s->increased, p->x, p->y))
            return -ENOMEM;
        if (legacy) {
            run = p->y;
            if (p->y > s->peak)
                s->peak = p->y;
        } else {
            if (p->y > run)
                run = p->y;
            p->y = run;
        }
    }
    if (!legacy) {
        size_t k = 0;
        for (size_t i = 0; i < s->frag.n; i++)
            if (is_increase(&s->increased, &s->frag.v[i]))
                s->frag.v[k++] = s->frag.v[i];
        s->frag.n = k;
        s->peak = s->max.n ? s->max.v[s->max.n - 1].y : 0;
    }
    s->total_steps = s->max.n ? saturating_sub(s->max.v[s->max.n - 1].x, -1) : 0;
    s->unit = mt_units_npu_for_bytes(s->peak); // upstream's labels (KB = 1024 B)
    for (size_t i = 0; i < s->nregions; i++) {
        mr_npu_region* r = &s->regions[i];
        int64_t end = i + 1 < s->nregions ? s->regions[i + 1].start : s->total_steps;
        r->span = saturating_sub(end, r->start);
        r->label_drawn = (double)r->span >= 0.0025 * (double)s->total_steps;
    }
    return 0;
}

void mr_npu_series_free(mr_npu_series* s) {
    mr_series_points_free(&s->max);
    mr_series_points_free(&s->increased);
    mr_series_points_free(&s->frag);
    mr_series_points_free(&s->used);
    mr_series_points_free(&s->free);
    regions_free(s->regions, s->nregions);
    memset(s, 0, sizeof *s);
}
