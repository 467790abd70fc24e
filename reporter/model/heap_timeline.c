// SPDX-License-Identifier: MIT
// A native capture's memory over time (heap_timeline.h): streams the events (twice with
// site rows) keeping per-bucket extremes.
#include "heap_timeline.h"

#include "aggregates.h"
#include "cxx_names.h"
#include "extent.h"
#include "messages.h"
#include "replay.h"
#include "sites.h"
#include "varbytes.h"

#include "memtrace/schema.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// ---- series with at most 4 points per time bucket (first, min, max, last: what is drawn)

typedef struct bucketed {
    mr_points* out; // (ts ns, bytes); see series.h
    int64_t t0, width;
    int64_t cur;
    bool any;
    mr_point first, lo, hi, last;
} bucketed;

static int emit(mr_points* out, mr_point p) {
    if (out->n && out->v[out->n - 1].x == p.x && out->v[out->n - 1].y == p.y)
        return 0;
    return mr_series_points_push(out, p.x, p.y);
}

static int bucket_flush(bucketed* b) {
    if (!b->any)
        return 0;
    mr_point a = b->lo, c = b->hi;
    if (a.x > c.x) {
        mr_point t = a;
        a = c;
        c = t;
    }
    int rc = emit(b->out, b->first);
    if (!rc)
        rc = emit(b->out, a);
    if (!rc)
        rc = emit(b->out, c);
    if (!rc)
        rc = emit(b->out, b->last);
    b->any = false;
    return rc;
}

static int bucket_add(bucketed* b, int64_t ts, uint64_t v) {
    int64_t idx = b->width > 0 ? (ts - b->t0) / b->width : 0;
    mr_point p = {ts, v};
    if (b->any && idx == b->cur) {
        if (v < b->lo.y)
            b->lo = p;
        if (v > b->hi.y)
            b->hi = p;
        b->last = p;
        return 0;
    }
    int rc = bucket_flush(b);
    b->any = true;
    b->cur = idx;
    b->first = b->lo = b->hi = b->last = p;
    return rc;
}

// ---- sites: callsites grouped by their site label (sites.h: past allocation wrappers)

typedef struct site_row {
    const char* name;
    uint64_t live, peak;
    bool chosen;
    mr_points bytes; // (ts, bytes held) at the last event of each bucket
    mr_points share; // (ts, bytes held * 1e6 / live bytes): parts per million
} site_row;

// The builder's state; the results go to *out.
typedef struct native {
    mt_capture* cap;
    const mr_timeline_opts* opts;
    mr_heap_timeline* out;
    mr_symbols* sym;
    bucketed hb; // the live heap, into out->heap
    // sites
    bool want_sites;
    int32_t* site_of; // callsite -> row, -1 not yet looked up
    mr_site_labels* labels;
    uint32_t ncallsites;
    site_row* rows;
    size_t nrows, caprows;
    size_t* chosen; // row indices, in display order
    size_t nchosen;
    int64_t row_bucket;
    bool pass2;
    uint64_t total_events; // for the progress indicator
    char* msg;             // what went wrong, or a note (mr_heap_timeline_build)
    size_t msglen;
} native;

static int site_index(native* nv, uint32_t callsite, size_t* out) {
    if (callsite >= nv->ncallsites) {
        *out = SIZE_MAX;
        return 0;
    }
    if (nv->site_of[callsite] >= 0) {
        *out = (size_t)nv->site_of[callsite];
        return 0;
    }
    const char* name = mr_sites_label(nv->labels, callsite);
    size_t i = 0;
    // Few distinct names per capture; a linear search runs once per callsite, not per event.
    while (i < nv->nrows && strcmp(nv->rows[i].name, name) != 0)
        i++;
    if (i == nv->nrows) {
        if (nv->nrows == nv->caprows) {
            size_t nc = nv->caprows ? nv->caprows * 2 : 64;
            site_row* nr = realloc(nv->rows, nc * sizeof *nr);
            if (!nr)
                return -ENOMEM;
            nv->rows = nr;
            nv->caprows = nc;
        }
        memset(&nv->rows[i], 0, sizeof nv->rows[i]);
        nv->rows[i].name = name;
        nv->nrows++;
    }
    nv->site_of[callsite] = (int32_t)i;
    *out = i;
    return 0;
}

static int on_event(mr_replay* r, const mt_event* ev, const mr_block* freed, void* ud) {
    native* nv = ud;
    if (nv->total_events && (r->events & 0xffff) == 0) {
        double done = (double)r->events / (double)nv->total_events;
        mr_messages_progress("plot",
                             nv->want_sites ? (nv->pass2 ? 0.5 + done / 2 : done / 2) : done);
    }
    if (!nv->pass2 && bucket_add(&nv->hb, ev->ts, r->live_bytes))
        return -ENOMEM;
    if (!nv->want_sites)
        return 0;
    size_t row = SIZE_MAX;
    bool alloc = mt_kind_is_alloc(ev->kind);
    if (alloc || freed) {
        if (site_index(nv, alloc ? ev->callsite : freed->callsite, &row))
            return -ENOMEM;
    }
    if (row != SIZE_MAX) {
        // Unsigned: sizes in a capture are any uint64 (a crafted one must not overflow).
        site_row* s = &nv->rows[row];
        if (alloc)
            s->live += ev->size;
        else
            s->live -= freed->size;
        if (s->live > s->peak)
            s->peak = s->live;
    }
    if (!nv->pass2)
        return 0;
    // Pass 2: the chosen rows' values at the last event of every bucket.
    int64_t idx = nv->hb.width > 0 ? (ev->ts - nv->hb.t0) / nv->hb.width : 0;
    for (size_t k = 0; k < nv->nchosen; k++) {
        site_row* s = &nv->rows[nv->chosen[k]];
        // A site holds at most the whole live heap; the clamp keeps the conversion from
        // double defined when a crafted capture says otherwise.
        uint64_t share = !r->live_bytes ? 0
                         : s->live >= r->live_bytes
                             ? 1000000
                             : (uint64_t)((double)s->live * 1e6 / (double)r->live_bytes);
        if (idx == nv->row_bucket && s->bytes.n) {
            s->bytes.v[s->bytes.n - 1] = (mr_point){ev->ts, s->live};
            s->share.v[s->share.n - 1] = (mr_point){ev->ts, share};
        } else if (mr_series_points_push(&s->bytes, ev->ts, s->live) ||
                   mr_series_points_push(&s->share, ev->ts, share)) {
            return -ENOMEM;
        }
    }
    nv->row_bucket = idx;
    return 0;
}

static int add_counter(void* ud, int track, int64_t ts, int64_t value) {
    (void)track;
    return bucket_add(ud, ts, value > 0 ? (uint64_t)value : 0);
}

static int read_track(native* nv, int track, mr_points* out) {
    bucketed b = {.out = out, .t0 = nv->hb.t0, .width = nv->hb.width};
    int rc = mt_capture_counters(nv->cap, track, add_counter, &b);
    if (rc == -EPROTO) // unreadable counters: drawn as far as they were read
        rc = 0;
    if (!rc)
        rc = bucket_flush(&b);
    return rc;
}

static uint64_t count_events(native* nv) {
    mt_heap_span span;
    return mt_capture_heap_span(nv->cap, mr_extent_default_heap(nv->cap), &span) < 0 ? 0
                                                                                     : span.events;
}

// The end of the latest mark or range (begin of one still open) outside the NPU heap.
typedef struct latest {
    bool any;
    int64_t ts;
} latest;

static int latest_mark(void* ud, const mt_mark_rec* m) {
    latest* l = ud;
    int64_t t = m->has_end ? m->ts_end : m->ts_begin;
    if (!l->any || t > l->ts)
        *l = (latest){true, t};
    return 0;
}

static int64_t max_ts(native* nv) {
    mt_heap_span span;
    int64_t rss, vsz, t = 0;
    latest mark = {false, 0};
    int has_events = mt_capture_heap_span(nv->cap, mr_extent_default_heap(nv->cap), &span);
    int has_rss = mt_capture_counter_end(nv->cap, MT_TRACK_RSS, &rss);
    int has_vsz = mt_capture_counter_end(nv->cap, MT_TRACK_VSZ, &vsz);
    mt_mark_query q = {.heap = MT_HEAP_NPU, .other_heaps = true};
    int marks_rc = mt_capture_marks(nv->cap, &q, latest_mark, &mark);
    // The latest of the three, or 0 when one of them has no rows at all (how it has always
    // been computed: SQL's max(a, b, c) is NULL when any is).
    if (has_events == 1 && (has_rss == 1 || has_vsz == 1) && !marks_rc && mark.any) {
        int64_t counters = has_rss == 1 && (has_vsz != 1 || rss > vsz) ? rss : vsz;
        t = span.last_ts > counters ? span.last_ts : counters;
        t = t > mark.ts ? t : mark.ts;
    }
    int64_t d = mt_capture_meta_int(nv->cap, "duration_ns", 0);
    return d > t ? d : t;
}

// The row --site NAME names: its label as demangled, else as the legend shows it (the first
// such row). nv->nrows when none.
static size_t find_site(const native* nv, const char* name) {
    for (size_t i = 0; i < nv->nrows; i++)
        if (!strcmp(nv->rows[i].name, name))
            return i;
    for (size_t i = 0; i < nv->nrows; i++) {
        char* shown = mr_cxx_names_display_dup(nv->rows[i].name);
        bool same = shown && !strcmp(shown, name);
        free(shown);
        if (same)
            return i;
    }
    return nv->nrows;
}

// Orders rows: --site NAME in the given order, else the N largest by peak bytes held.
static int choose_sites(native* nv) {
    const mr_timeline_opts* a = nv->opts;
    nv->chosen = calloc(nv->nrows + a->nsites + 1, sizeof *nv->chosen);
    if (!nv->chosen) {
        snprintf(nv->msg, nv->msglen, "out of memory");
        return -ENOMEM;
    }
    if (a->nsites) {
        for (size_t k = 0; k < a->nsites; k++) {
            size_t i = find_site(nv, a->sites[k]);
            if (i == nv->nrows) {
                snprintf(nv->msg, nv->msglen, "no allocation site named '%s'", a->sites[k]);
                return -EINVAL;
            }
            if (!nv->rows[i].chosen) {
                nv->rows[i].chosen = true;
                nv->chosen[nv->nchosen++] = i;
            }
        }
        return 0;
    }
    for (int k = 0; k < a->top_sites; k++) {
        size_t best = SIZE_MAX;
        for (size_t i = 0; i < nv->nrows; i++)
            if (!nv->rows[i].chosen && nv->rows[i].peak > 0 &&
                (best == SIZE_MAX || nv->rows[i].peak > nv->rows[best].peak))
                best = i;
        if (best == SIZE_MAX)
            break;
        nv->rows[best].chosen = true;
        nv->chosen[nv->nchosen++] = best;
    }
    return 0;
}

// ---- marks

typedef struct mark_list {
    mr_timeline_mark* v;
    size_t n, cap;
} mark_list;

static int add_mark(void* ud, const mt_mark_rec* rec) {
    mark_list* l = ud;
    if (!rec->kind || (strcmp(rec->kind, "mark") && strcmp(rec->kind, "range")))
        return 0;
    if (l->n == l->cap) {
        size_t nc = l->cap ? l->cap * 2 : 16;
        mr_timeline_mark* nm = realloc(l->v, nc * sizeof *nm);
        if (!nm)
            return -ENOMEM;
        l->v = nm;
        l->cap = nc;
    }
    mr_timeline_mark* m = &l->v[l->n++];
    m->range = strcmp(rec->kind, "range") == 0;
    m->name = strdup(rec->name ? rec->name : "");
    m->begin = rec->ts_begin;
    m->end = rec->has_end ? rec->ts_end : rec->ts_begin;
    return m->name ? 0 : -ENOMEM;
}

static int read_marks(native* nv, mr_timeline_mark** out, size_t* n) {
    mark_list l = {NULL, 0, 0};
    mt_mark_query q = {.heap = MT_HEAP_NPU, .other_heaps = true, .by_time = true};
    int rc = mt_capture_marks(nv->cap, &q, add_mark, &l);
    *out = l.v;
    *n = l.n;
    return rc == -ENOMEM ? rc : 0; // unreadable marks: drawn as far as they were read
}

static void rows_free(native* nv) {
    for (size_t i = 0; i < nv->nrows; i++) {
        mr_series_points_free(&nv->rows[i].bytes);
        mr_series_points_free(&nv->rows[i].share);
    }
    free(nv->rows);
    free(nv->chosen);
    free(nv->site_of);
    mr_sites_labels_free(nv->labels);
}

// The site labels and their lookup table, for site rows. Returns 0 or a negative errno.
static int sites_init(native* nv) {
    int rc = mr_symbols_load(nv->cap, &nv->sym, nv->msg, nv->msglen);
    if (rc)
        return rc;
    nv->ncallsites = mr_symbols_callsite_count(nv->sym);
    nv->site_of = malloc((nv->ncallsites + 1) * sizeof *nv->site_of);
    nv->labels = mr_sites_labels_new(nv->sym);
    if (!nv->site_of || !nv->labels) {
        snprintf(nv->msg, nv->msglen, "out of memory");
        return -ENOMEM;
    }
    memset(nv->site_of, 0xff, (nv->ncallsites + 1) * sizeof *nv->site_of);
    return 0;
}

static int replay_heap(native* nv);

// ---- the heap series stored in the capture (table derived, kind 2; moments_stored.c has
// kind 1): what pass 1 gives without site rows, for these buckets

#define HEAP_K0 0x6d656d7472616365ull
#define HEAP_K1 0x6865617074696d65ull

int64_t mr_heap_timeline_key(int64_t t0, int64_t width) {
    return (int64_t)(2ull << 56 | (((uint64_t)width ^ (uint64_t)t0 << 24) & 0xffffffffffffull));
}

uint8_t* mr_heap_timeline_encode(const mr_heap_timeline* t, int64_t t0, int64_t width,
                                 size_t* len) {
    mr_varbuf b = {0};
    mr_varbytes_put_signed(&b, t0);
    mr_varbytes_put_signed(&b, width);
    mr_varbytes_put(&b, t->peak);
    mr_varbytes_put_signed(&b, t->peak_ts);
    mr_varbytes_put(&b, t->heap.n);
    int64_t x = 0;
    for (size_t i = 0; i < t->heap.n; i++) {
        mr_varbytes_put_signed(&b, t->heap.v[i].x - x); // wraps alike both ways
        mr_varbytes_put(&b, t->heap.v[i].y);
        x = t->heap.v[i].x;
    }
    return mr_varbytes_seal(&b, HEAP_K0, HEAP_K1, len);
}

int mr_heap_timeline_decode(const uint8_t* p, size_t len, int64_t t0, int64_t width,
                            mr_heap_timeline* t, char* why, size_t whylen) {
    mr_varreader r;
    if (!mr_varbytes_open(p, len, HEAP_K0, HEAP_K1, &r))
        return mr_varbytes_fail(why, whylen, "checksum mismatch");
    int64_t st0 = mr_varbytes_get_signed(&r), swidth = mr_varbytes_get_signed(&r);
    if (r.bad || st0 != t0 || swidth != width)
        return 1; // another query's
    t->peak = mr_varbytes_get(&r);
    t->peak_ts = mr_varbytes_get_signed(&r);
    uint64_t n = mr_varbytes_get(&r);
    if (r.bad || n > (size_t)(r.end - r.p) / 2)
        return mr_varbytes_fail(why, whylen, "truncated");
    int64_t x = 0;
    for (size_t i = 0; i < n && !r.bad; i++) {
        x = (int64_t)((uint64_t)x + (uint64_t)mr_varbytes_get_signed(&r));
        if (mr_series_points_push(&t->heap, x, mr_varbytes_get(&r))) {
            mr_series_points_free(&t->heap);
            return -ENOMEM;
        }
    }
    if (r.bad || r.p != r.end) {
        mr_series_points_free(&t->heap);
        return mr_varbytes_fail(why, whylen, "truncated");
    }
    return 0;
}

// The stored heap series of these buckets into nv->out: 0, 1 when there is none to use
// (when it is damaged, with the note in msg), or -ENOMEM.
static int stored_heap(native* nv, int heap, uint64_t fp) {
    int64_t format = 0;
    uint64_t stored_fp = 0;
    uint8_t* data;
    size_t len;
    int rc = mt_capture_derived_read(nv->cap, heap, mr_heap_timeline_key(nv->hb.t0, nv->hb.width),
                                     &format, &stored_fp, &data, &len);
    if (rc <= 0)
        return rc < 0 ? rc : 1;
    char why[128];
    rc = format == MR_HEAP_TIMELINE_FORMAT && stored_fp == fp
             ? mr_heap_timeline_decode(data, len, nv->hb.t0, nv->hb.width, nv->out, why, sizeof why)
             : 1;
    free(data);
    if (rc == -EPROTO) {
        snprintf(nv->msg, nv->msglen, "the stored timeline is damaged (%s); reading the events",
                 why);
        rc = 1;
    }
    return rc;
}

static void store_heap(native* nv, int heap, uint64_t fp) {
    size_t len;
    uint8_t* data = mr_heap_timeline_encode(nv->out, nv->hb.t0, nv->hb.width, &len);
    // A capture that cannot take it (full disk, locked) is replayed every time.
    if (data)
        mt_capture_derived_store(nv->cap, heap, mr_heap_timeline_key(nv->hb.t0, nv->hb.width),
                                 MR_HEAP_TIMELINE_FORMAT, fp, data, len);
    free(data);
}

// Pass 1: the heap series, the peak, every site's peak. Returns 0 or a negative errno.
static int heap_pass(native* nv) {
    // Without site rows the pass gives only the heap series, which is stored.
    int heap = mr_extent_default_heap(nv->cap);
    uint64_t fp = 0;
    bool usable = !nv->want_sites && mr_aggregates_enabled() &&
                  mt_capture_aggregate_fingerprint(nv->cap, heap, &fp) == 0;
    int stored = usable ? stored_heap(nv, heap, fp) : 1;
    if (stored <= 0) {
        if (stored)
            snprintf(nv->msg, nv->msglen, "out of memory");
        return stored;
    }
    int err = replay_heap(nv);
    if (!err && usable && mt_capture_writable(nv->cap))
        store_heap(nv, heap, fp);
    return err;
}

// The replay of pass 1. Returns 0 or a negative errno.
static int replay_heap(native* nv) {
    mr_replay r;
    if (mr_replay_init(&r, nv->cap, mr_extent_default_heap(nv->cap))) {
        snprintf(nv->msg, nv->msglen, "out of memory");
        return -ENOMEM;
    }
    int err = mr_replay_run(&r, UINT64_MAX, on_event, nv);
    if (!err)
        err = bucket_flush(&nv->hb);
    nv->out->peak = r.peak_bytes;
    nv->out->peak_ts = r.peak_ts;
    if (err)
        snprintf(nv->msg, nv->msglen, "%s", r.err[0] ? r.err : "out of memory");
    mr_replay_free(&r);
    return err;
}

// Pass 2: the chosen sites' bytes and shares over time. Returns 0 or a negative errno.
static int sites_pass(native* nv) {
    int err = choose_sites(nv);
    if (err)
        return err;
    for (size_t i = 0; i < nv->nrows; i++)
        nv->rows[i].live = 0;
    nv->pass2 = true;
    nv->row_bucket = -1;
    mr_replay r;
    if (mr_replay_init(&r, nv->cap, mr_extent_default_heap(nv->cap))) {
        snprintf(nv->msg, nv->msglen, "out of memory");
        return -ENOMEM;
    }
    err = mr_replay_run(&r, UINT64_MAX, on_event, nv);
    if (err)
        snprintf(nv->msg, nv->msglen, "%s", r.err[0] ? r.err : "out of memory");
    mr_replay_free(&r);
    return err;
}

// Moves the chosen rows into the timeline, in display order.
static int take_sites(native* nv, mr_heap_timeline* t) {
    t->sites = calloc(nv->nchosen + 1, sizeof *t->sites);
    if (!t->sites)
        return -ENOMEM;
    for (size_t k = 0; k < nv->nchosen; k++) {
        site_row* s = &nv->rows[nv->chosen[k]];
        t->sites[k] = (mr_site_series){s->name, s->peak, s->bytes, s->share};
        s->bytes = s->share = (mr_points){0};
    }
    t->nsites = nv->nchosen;
    t->symbols = nv->sym; // the names of the sites are its strings
    nv->sym = NULL;
    return 0;
}

int64_t mr_heap_timeline_duration(mt_capture* cap) {
    native nv = {.cap = cap};
    return max_ts(&nv);
}

static void shift_points(mr_points* p, int64_t by) {
    for (size_t i = 0; i < p->n; i++)
        p->v[i].x += by;
}

// Moves every time of t by `by` ns (a process placed on a common axis).
static void shift_all(mr_heap_timeline* t, int64_t by) {
    shift_points(&t->heap, by);
    shift_points(&t->rss, by);
    shift_points(&t->vsz, by);
    for (size_t i = 0; i < t->nsites; i++) {
        shift_points(&t->sites[i].bytes, by);
        shift_points(&t->sites[i].share, by);
    }
    for (size_t i = 0; i < t->nmarks; i++) {
        t->marks[i].begin += by;
        t->marks[i].end += by;
    }
    t->peak_ts += by;
}

int mr_heap_timeline_build(mt_capture* cap, const mr_timeline_opts* o, mr_heap_timeline* t,
                           char* msg, size_t msglen) {
    memset(t, 0, sizeof *t);
    msg[0] = 0;
    native nv = {.cap = cap, .opts = o, .out = t, .msg = msg, .msglen = msglen};
    nv.want_sites = o->top_sites > 0 || o->nsites > 0;
    int rc = nv.want_sites ? sites_init(&nv) : 0;
    t->duration = max_ts(&nv);
    if (mr_messages_progress_enabled())
        nv.total_events = count_events(&nv);
    // Buckets from the common axis's origin, o->shift ns before this capture's ts 0.
    int64_t width = o->bucket_ns > 0 ? o->bucket_ns : t->duration / o->buckets + 1;
    nv.hb = (bucketed){.out = &t->heap, .t0 = -o->shift, .width = width};
    if (!rc)
        rc = heap_pass(&nv);
    if (!rc && nv.want_sites)
        rc = sites_pass(&nv);
    if (!rc && (read_track(&nv, MT_TRACK_RSS, &t->rss) || read_track(&nv, MT_TRACK_VSZ, &t->vsz) ||
                read_marks(&nv, &t->marks, &t->nmarks) || take_sites(&nv, t))) {
        snprintf(msg, msglen, "out of memory");
        rc = -ENOMEM;
    }
    if (nv.total_events)
        mr_messages_progress("plot", -1);
    rows_free(&nv);
    if (nv.sym)
        mr_symbols_free(nv.sym);
    if (rc)
        mr_heap_timeline_free(t);
    else if (o->shift)
        shift_all(t, o->shift);
    return rc;
}

void mr_heap_timeline_free(mr_heap_timeline* t) {
    for (size_t i = 0; i < t->nsites; i++) {
        mr_series_points_free(&t->sites[i].bytes);
        mr_series_points_free(&t->sites[i].share);
    }
    free(t->sites);
    for (size_t i = 0; i < t->nmarks; i++)
        free(t->marks[i].name);
    free(t->marks);
    mr_series_points_free(&t->heap);
    mr_series_points_free(&t->rss);
    mr_series_points_free(&t->vsz);
    if (t->symbols)
        mr_symbols_free(t->symbols);
    memset(t, 0, sizeof *t);
}
