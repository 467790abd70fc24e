// SPDX-License-Identifier: MIT
// Timeline assembly (§2.4): the functions' points and events put in timeline order.
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

// ---- timeline assembly (§2.4)

// part<n> by the integer value of n (any length), then main.
static int key_cmp(const func* a, const func* b) {
    bool am = a->name[0] == 'm', bm = b->name[0] == 'm';
    if (am != bm)
        return am ? 1 : -1;
    if (!am) {
        const char *x = a->name + 4, *y = b->name + 4;
        while (*x == '0' && x[1])
            x++;
        while (*y == '0' && y[1])
            y++;
        size_t lx = strlen(x), ly = strlen(y);
        if (lx != ly)
            return lx < ly ? -1 : 1;
        int c = strcmp(x, y);
        if (c)
            return c;
    }
    return 0;
}

static int func_order(const void* pa, const void* pb) {
    const func* a = *(func* const*)pa;
    const func* b = *(func* const*)pb;
    int c = key_cmp(a, b);
    if (c)
        return c;
    return a->seen < b->seen ? -1 : a->seen > b->seen; // stable: first seen first
}

// log->ev is sized for all events up front (assemble).
// Where each function (by seen index) lands on the timeline.
typedef struct placing {
    size_t* rank;    // position in timeline order
    int64_t* offset; // its first global step
    bool* kept;      // has a region: its points are plotted
    size_t n;
    bool legacy;
} placing;

static size_t slot_of_seen(const placing* pl, uint64_t seen) {
    return pl->legacy ? 0 : (size_t)seen;
}

// Moves the points of kept functions into timeline order with global x.
static int place_points(mr_points* v, const placing* pl) {
    bool sorted = true;
    size_t prev = 0;
    for (size_t i = 0; i < v->n && sorted; i++) {
        size_t r = pl->rank[slot_of_seen(pl, (uint64_t)v->v[i].x >> LOCAL_BITS)];
        sorted = r >= prev;
        prev = r;
    }
    const int64_t mask = ((int64_t)1 << LOCAL_BITS) - 1;
    if (sorted) {
        size_t k = 0;
        for (size_t i = 0; i < v->n; i++) {
            size_t f = slot_of_seen(pl, (uint64_t)v->v[i].x >> LOCAL_BITS);
            if (pl->kept[f])
                v->v[k++] = (mr_point){(v->v[i].x & mask) + pl->offset[f], v->v[i].y};
        }
        v->n = k;
        return 0;
    }
    // Interleaved functions: a stable counting sort by timeline position.
    size_t* start = calloc(pl->n + 1, sizeof *start);
    if (!start)
        return -ENOMEM;
    size_t total = 0;
    for (size_t i = 0; i < v->n; i++) {
        size_t f = slot_of_seen(pl, (uint64_t)v->v[i].x >> LOCAL_BITS);
        if (pl->kept[f]) {
            start[pl->rank[f] + 1]++;
            total++;
        }
    }
    for (size_t r = 0; r < pl->n; r++)
        start[r + 1] += start[r];
    mr_point* out = mr_series_big_realloc(NULL, (total ? total : 1) * sizeof *out);
    if (!out) {
        free(start);
        return -ENOMEM;
    }
    for (size_t i = 0; i < v->n; i++) {
        size_t f = slot_of_seen(pl, (uint64_t)v->v[i].x >> LOCAL_BITS);
        if (pl->kept[f])
            out[start[pl->rank[f]]++] = (mr_point){(v->v[i].x & mask) + pl->offset[f], v->v[i].y};
    }
    free(start);
    free(v->v);
    v->v = out;
    v->n = v->cap = total;
    return 0;
}

// The same for events: every function's, ts = global step, func = timeline position.
static int place_events(store* st, const placing* pl) {
    bool sorted = true;
    size_t prev = 0;
    for (size_t i = 0; i < st->nev && sorted; i++) {
        size_t r = pl->rank[slot_of_seen(pl, st->ev[i].func)];
        sorted = r >= prev;
        prev = r;
    }
    mr_npu_event* out = st->ev;
    size_t* start = NULL;
    if (!sorted) {
        start = calloc(pl->n + 1, sizeof *start);
        out = mr_series_big_realloc(NULL, st->nev * sizeof *out);
        if (!start || !out) {
            free(start);
            free(out);
            return -ENOMEM;
        }
        for (size_t i = 0; i < st->nev; i++)
            start[pl->rank[slot_of_seen(pl, st->ev[i].func)] + 1]++;
        for (size_t r = 0; r < pl->n; r++)
            start[r + 1] += start[r];
    }
    for (size_t i = 0; i < st->nev; i++) {
        mr_npu_event e = st->ev[i];
        size_t f = slot_of_seen(pl, e.func);
        e.step += pl->offset[f];
        e.func = (uint32_t)pl->rank[f];
        out[sorted ? i : start[pl->rank[f]]++] = e;
    }
    if (!sorted) {
        free(st->ev);
        st->ev = out;
        st->capev = st->nev;
        free(start);
    }
    return 0;
}

static int assemble(parser* p, mr_npu_log* log) {
    func** order = p->funcs;
    size_t n = p->nfuncs;
    func* one[1] = {&p->legacy};
    store* st = log->legacy ? &p->leg : &p->cur;
    if (log->legacy) {
        order = one;
        n = 1;
        if (!(p->legacy.name = strdup("main")))
            return -ENOMEM;
        p->legacy.len = 4;
    } else {
        qsort(order, n, sizeof *order, func_order);
    }
    placing pl = {.n = n, .legacy = log->legacy};
    pl.rank = calloc(n, sizeof *pl.rank);
    pl.offset = calloc(n, sizeof *pl.offset);
    pl.kept = calloc(n, sizeof *pl.kept);
    log->funcs = calloc(n, sizeof *log->funcs);
    log->regions = calloc(n, sizeof *log->regions);
    int rc = pl.rank && pl.offset && pl.kept && log->funcs && log->regions ? 0 : -ENOMEM;
    int64_t offset = 0;
    for (size_t i = 0; i < n && !rc; i++) {
        func* f = order[i];
        size_t k = slot_of_seen(&pl, f->seen);
        if (!(log->funcs[i] = strdup(f->name))) {
            rc = -ENOMEM;
            break;
        }
        log->nfuncs++;
        pl.rank[k] = i;
        pl.offset[k] = offset;
        // Functions with neither a max nor a free point get no region (§2.4 step 2), as
        // the plotter draws none.
        pl.kept[k] = f->nmax > 0 || f->nfree > 0;
        if (!pl.kept[k])
            continue;
        if (!log->legacy) {
            mr_npu_region* r = &log->regions[log->nregions++];
            if (!(r->name = strdup(f->name))) {
                rc = -ENOMEM;
                break;
            }
            r->start = offset;
        }
        offset += f->steps;
    }
    if (!rc)
        rc = place_points(&st->max, &pl);
    if (!rc)
        rc = place_points(&st->frag, &pl);
    if (!rc)
        rc = place_points(&st->used, &pl);
    if (!rc)
        rc = place_points(&st->free, &pl);
    if (!rc)
        rc = place_events(st, &pl);
    if (!rc) {
        log->max_raw = st->max;
        log->frag = st->frag;
        log->used = st->used;
        log->free = st->free;
        log->ev = st->ev;
        log->nev = st->nev;
        memset(st, 0, sizeof *st);
    }
    free(pl.rank);
    free(pl.offset);
    free(pl.kept);
    return rc;
}

int mr_npu_finish(parser* p, int fd_rc, mr_npu_log* log) {
    if (fd_rc)
        return fd_rc;
    for (size_t i = 0; i < p->nfuncs; i++)
        if (mr_npu_flush_pending(p, &p->cur, p->funcs[i]))
            return -ENOMEM;
    if (p->legacy_on && mr_npu_flush_pending(p, &p->leg, &p->legacy))
        return -ENOMEM;
    if (!p->gate) {
        snprintf(p->err, p->errlen,
                 "no 'Start Pass StaticAllocation' line: not an NPU compiler memory-usage log "
                 "(run the compiler with OV_NPU_LOG_LEVEL=LOG_TRACE)");
        return -EPROTO;
    }
    bool current = p->cur.max.n > 0;
    if (!current && p->leg.max.n == 0) {
        snprintf(p->err, p->errlen,
                 "no memory-usage lines ('{F}: Max allocated size N B' for part<N> or main) "
                 "after 'Start Pass StaticAllocation'");
        return -EPROTO;
    }
    log->legacy = !current;
    log->long_lines = p->long_lines;
    log->cmx_events = p->cmx_events;
    return assemble(p, log);
}
