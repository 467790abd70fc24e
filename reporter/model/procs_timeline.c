// SPDX-License-Identifier: MIT
// The processes of a tree on one time axis (procs_timeline.h).
#include "procs_timeline.h"

#include "extent.h"
#include "replay.h"

#include "memtrace/vec.h"

#include <errno.h>
#include <stdio.h>
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

// ---- the exact peak of the sum
// A bucket's bound is the sum of each process's most in it (the value carried in
// counting). Where at most one process changes within a bucket, the bound is the bucket's
// highest sum. The other buckets whose bound is above the best sum found are replayed and
// their events merged in time order, a few buckets a round, the highest bounds first,
// until no bucket left can hold more.

typedef struct peak_search {
    mr_procs_timeline* t;
    int64_t width;     // of a bucket, on the common axis from 0
    size_t nb;         // buckets
    uint64_t* carried; // carried[i * nb + b]: process i's live bytes when bucket b starts
    uint64_t* bound;   // per bucket: the sum of each process's most in it
    uint8_t* changing; // per bucket: the processes changing in it (2: two or more)
    bool* changes;     // changes[i * nb + b]: process i changes in bucket b
    int64_t* reached;  // per bucket, with one process changing: when its bound was reached
    struct ranked {
        uint64_t bound;
        size_t bucket;
    } * order;    // buckets by bound, highest first
    bool* chosen; // the buckets of this round
} peak_search;

// A process's event in a chosen bucket: its live bytes after it.
typedef struct change {
    int64_t ts; // on the common axis
    uint32_t proc;
    uint64_t seq; // within the process
    uint64_t live;
} change;

typedef struct recorder {
    peak_search* ps;
    uint32_t proc;
    int64_t shift;
    change* v;
    size_t n, cap;
} recorder;

static size_t bucket_at(const peak_search* ps, int64_t ts) {
    if (ts <= 0)
        return 0;
    uint64_t b = (uint64_t)ts / (uint64_t)ps->width;
    return b < ps->nb ? (size_t)b : ps->nb - 1;
}

// Each process's value carried into every bucket (0 before its first point and after its
// end), each bucket's bound, the processes changing in it and, where one or none does,
// when its bound was reached: at that process's highest point in it, else when the last
// value carried in was set. point_at: nb entries of scratch.
static void bounds(peak_search* ps, int64_t* point_at) {
    const mr_procs_timeline* t = ps->t;
    for (size_t b = 0; b < ps->nb; b++)
        ps->reached[b] = INT64_MIN;
    for (size_t i = 0; i < t->n; i++) {
        const mr_proc_series* p = &t->procs[i];
        const mr_points* h = &p->t.heap;
        size_t j = 0;
        uint64_t held = 0;
        int64_t set_at = INT64_MIN; // the time of the point that set `held`
        for (size_t b = 0; b < ps->nb; b++) {
            int64_t start = (int64_t)b * ps->width, next = start + ps->width;
            uint64_t in = start > p->end ? 0 : held, most = in;
            int64_t most_at = INT64_MIN;
            bool changes = p->end + 1 >= start && p->end + 1 < next;
            if (set_at > ps->reached[b])
                ps->reached[b] = set_at;
            for (; j < h->n && h->v[j].x < next; j++) {
                held = h->v[j].y;
                set_at = h->v[j].x;
                changes = true;
                if (h->v[j].x <= p->end && held > most) {
                    most = held;
                    most_at = h->v[j].x;
                }
            }
            ps->carried[i * ps->nb + b] = in;
            ps->bound[b] += most;
            ps->changes[i * ps->nb + b] = changes;
            if (changes && ps->changing[b] < 2)
                ps->changing[b]++;
            if (changes)
                point_at[b] = most_at;
        }
    }
    for (size_t b = 0; b < ps->nb; b++) // one changing: its highest point, if above its start
        if (ps->changing[b] == 1 && point_at[b] != INT64_MIN)
            ps->reached[b] = point_at[b];
}

static int by_bound(const void* a, const void* b) {
    const struct ranked *x = a, *y = b;
    if (x->bound != y->bound)
        return x->bound > y->bound ? -1 : 1;
    return (x->bucket > y->bucket) - (x->bucket < y->bucket);
}

static int record(mr_replay* r, const mt_event* ev, const mr_block* freed, void* ud) {
    (void)freed;
    recorder* rec = ud;
    int64_t ts = ev->ts + rec->shift;
    if (!rec->ps->chosen[bucket_at(rec->ps, ts)])
        return 0;
    if (mt_vec_grow(&rec->v, &rec->cap, rec->n + 1, sizeof *rec->v))
        return -ENOMEM;
    rec->v[rec->n++] = (change){ts, rec->proc, ev->seq, r->live_bytes};
    return 0;
}

static int by_time(const void* a, const void* b) {
    const change *x = a, *y = b;
    if (x->ts != y->ts)
        return x->ts < y->ts ? -1 : 1;
    if (x->proc != y->proc) // the same nanosecond in two processes: tree order
        return x->proc < y->proc ? -1 : 1;
    return (x->seq > y->seq) - (x->seq < y->seq);
}

// Says what went wrong with the capture at path; returns e.
static int fail(mr_procs_error* err, const char* path, int e, const char* why) {
    err->path = path;
    snprintf(err->msg, sizeof err->msg, "%s", e == -ENOMEM || !why[0] ? "out of memory" : why);
    return e;
}

// The highest sum within the chosen buckets, from their events merged in time order (each
// process's end drops it to 0). Returns 0 or a negative errno with the reason in *err.
static int search_round(peak_search* ps, const mr_capture_set* s, mr_procs_error* err) {
    mr_procs_timeline* t = ps->t;
    recorder rec = {.ps = ps};
    int rc = 0;
    for (size_t i = 0; !rc && i < t->n; i++) {
        bool needed = false; // a process constant in every chosen bucket is its value carried in
        for (size_t b = 0; !needed && b < ps->nb; b++)
            needed = ps->chosen[b] && ps->changes[i * ps->nb + b];
        if (!needed)
            continue;
        rec.proc = (uint32_t)i;
        rec.shift = t->procs[i].offset;
        mr_replay r;
        int e = mr_replay_init(&r, s->procs[i].cap, mr_extent_default_heap(s->procs[i].cap));
        if (!e)
            e = mr_replay_run(&r, UINT64_MAX, record, &rec);
        size_t b = bucket_at(ps, t->procs[i].end + 1);
        if (!e && ps->chosen[b] && t->procs[i].end + 1 < (int64_t)(b + 1) * ps->width) {
            if (mt_vec_grow(&rec.v, &rec.cap, rec.n + 1, sizeof *rec.v))
                e = -ENOMEM;
            else
                rec.v[rec.n++] = (change){t->procs[i].end + 1, (uint32_t)i, UINT64_MAX, 0};
        }
        if (e)
            rc = fail(err, s->procs[i].path, e, r.err);
        mr_replay_free(&r);
    }
    if (!rc && rec.n > 1)
        qsort(rec.v, rec.n, sizeof *rec.v, by_time);
    uint64_t* cur = rc ? NULL : calloc(t->n + 1, sizeof *cur);
    if (!rc && !cur)
        rc = fail(err, s->procs[0].path, -ENOMEM, "");
    uint64_t sum = 0;
    for (size_t k = 0, b = SIZE_MAX; !rc && k < rec.n; k++) {
        const change* c = &rec.v[k];
        size_t cb = bucket_at(ps, c->ts);
        if (cb != b) { // a bucket's first event: the values carried in
            b = cb;
            sum = 0;
            for (size_t i = 0; i < t->n; i++)
                sum += cur[i] = ps->carried[i * ps->nb + b];
        }
        sum = sum - cur[c->proc] + c->live;
        cur[c->proc] = c->live;
        if (sum > t->total_peak) {
            t->total_peak = sum;
            t->total_peak_ts = c->ts;
        }
    }
    free(cur);
    free(rec.v);
    return rc;
}

// The exact highest sum over the processes' events on the common axis. Returns 0 or a
// negative errno with the reason in *err.
static int exact_peak(mr_procs_timeline* t, const mr_capture_set* s, int64_t width, size_t nb,
                      mr_procs_error* err) {
    peak_search ps = {.t = t, .width = width, .nb = nb};
    ps.carried = calloc(t->n * nb + 1, sizeof *ps.carried);
    ps.bound = calloc(nb, sizeof *ps.bound);
    ps.changing = calloc(nb, sizeof *ps.changing);
    ps.changes = calloc(t->n * nb + 1, sizeof *ps.changes);
    ps.reached = calloc(nb, sizeof *ps.reached);
    int64_t* point_at = calloc(nb, sizeof *point_at);
    ps.order = malloc(nb * sizeof *ps.order);
    ps.chosen = calloc(nb, sizeof *ps.chosen);
    int rc = 0;
    if (!ps.carried || !ps.bound || !ps.changing || !ps.changes || !ps.reached || !point_at ||
        !ps.order || !ps.chosen)
        rc = fail(err, s->procs[0].path, -ENOMEM, "");
    t->total_peak = 0;
    t->total_peak_ts = 0;
    size_t nchanging = 0; // buckets where two processes or more change: to replay
    if (!rc) {
        bounds(&ps, point_at);
        for (size_t b = 0; b < nb; b++)
            if (ps.changing[b] < 2 && ps.bound[b] > t->total_peak) { // exact already
                t->total_peak = ps.bound[b];
                t->total_peak_ts = ps.reached[b] == INT64_MIN ? 0 : ps.reached[b];
            } else if (ps.changing[b] == 2) {
                ps.order[nchanging++] = (struct ranked){ps.bound[b], b};
            }
        if (nchanging > 1)
            qsort(ps.order, nchanging, sizeof *ps.order, by_bound);
    }
    // Rounds of 8, 32, 128... buckets: few replays when the peak stands out, few rounds
    // when it does not.
    for (size_t next = 0, round = 8;
         !rc && next < nchanging && ps.order[next].bound > t->total_peak; round *= 4) {
        memset(ps.chosen, 0, nb * sizeof *ps.chosen);
        for (size_t k = 0; k < round && next < nchanging && ps.order[next].bound > t->total_peak;
             k++)
            ps.chosen[ps.order[next++].bucket] = true;
        rc = search_round(&ps, s, err);
    }
    free(ps.carried);
    free(ps.bound);
    free(ps.changing);
    free(ps.changes);
    free(ps.reached);
    free(point_at);
    free(ps.order);
    free(ps.chosen);
    return rc;
}

int mr_procs_timeline_build(const mr_capture_set* s, int64_t buckets, mr_procs_timeline* t,
                            mr_procs_error* err) {
    memset(t, 0, sizeof *t);
    t->origin_ns = origin_of(s);
    t->procs = calloc(s->n + 1, sizeof *t->procs);
    if (!t->procs)
        return fail(err, s->procs[0].path, -ENOMEM, "");
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
        char why[sizeof err->msg]; // no site rows: a note only of a damaged stored series
        rc = mr_heap_timeline_build(s->procs[i].cap, &o, &t->procs[i].t, why, sizeof why);
        if (rc)
            fail(err, s->procs[i].path, rc, why);
        else
            t->n = i + 1;
    }
    if (!rc && (sample_times(t) || stack_values(t)))
        rc = fail(err, s->procs[0].path, -ENOMEM, "");
    if (!rc)
        rc = exact_peak(t, s, o.bucket_ns, (size_t)(t->duration / o.bucket_ns) + 2, err);
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

// The buckets only speed up the exact search (exact_peak): the peak does not depend on them.
#define MOMENT_BUCKETS 1024

// ---- each process's share of the peak
// The peak is a point in the sum's order of events, which may fall between two events of
// one nanosecond (of one process, or of two). Each process whose series has a point near
// the peak's time T is replayed up to T: its live bytes before T and its events stamped T
// (its end too, when it ends then), merged in the sum's order (tree order, then seq); the
// cut is where that order first reaches the highest sum, and each process's share is its
// live bytes at the cut. The others held one value around T, their series' last before it.

typedef struct at_peak {
    int64_t shift, t; // the process's offset on the common axis; T
    uint64_t before;  // live bytes after its last event before T
    change* v;        // its events stamped T
    size_t n, cap;
} at_peak;

static int follow_to_peak(mr_replay* r, const mt_event* ev, const mr_block* freed, void* ud) {
    (void)freed;
    at_peak* a = ud;
    int64_t ts = ev->ts + a->shift;
    if (ts > a->t)
        return 1; // past T: the rest is not read
    if (ts < a->t) {
        a->before = r->live_bytes;
        return 0;
    }
    if (mt_vec_grow(&a->v, &a->cap, a->n + 1, sizeof *a->v))
        return -ENOMEM;
    a->v[a->n++] = (change){ts, 0, ev->seq, r->live_bytes};
    return 0;
}

// The last value of a series at or before x, and whether it has a point within `near` of x.
static uint64_t held_at(const mr_points* h, int64_t x, int64_t near, bool* close) {
    uint64_t y = 0;
    *close = false;
    for (size_t k = 0; k < h->n; k++) {
        if (h->v[k].x >= x - near && h->v[k].x <= x + near)
            *close = true;
        if (h->v[k].x <= x)
            y = h->v[k].y;
    }
    return y;
}

// Fills m's at, before_seq and live for the peak at m->ts of t. `near`: the buckets'
// width, within which a process with an event at T has a point. Returns 0 or a negative
// errno with the reason in *err.
static int cut_at_peak(const mr_capture_set* s, const mr_procs_timeline* t, int64_t near,
                       mr_procs_moment* m, mr_procs_error* err) {
    int64_t T = m->ts;
    change* all = NULL; // the events stamped T of every process replayed, proc set
    size_t nall = 0, cap = 0;
    uint64_t sum = 0;
    int rc = 0;
    for (size_t i = 0; !rc && i < s->n; i++) {
        const mr_proc_series* ps = &t->procs[i];
        m->at[i] = T >= ps->offset && T <= ps->end ? T - ps->offset : -1;
        bool close;
        uint64_t held = held_at(&ps->t.heap, T, near, &close);
        if (T < ps->offset || T > ps->end + 1 || (!close && T != ps->end + 1)) {
            m->live[i] = m->at[i] < 0 ? 0 : held;
            sum += m->live[i];
            continue;
        }
        at_peak a = {.shift = ps->offset, .t = T};
        mr_replay r;
        int e = mr_replay_init(&r, s->procs[i].cap, mr_extent_default_heap(s->procs[i].cap));
        if (!e && (e = mr_replay_run(&r, UINT64_MAX, follow_to_peak, &a)) > 0)
            e = 0;
        if (!e && T == ps->end + 1) // it ends here: it drops to 0 after its events
            e = mt_vec_grow(&a.v, &a.cap, a.n + 1, sizeof *a.v) ? -ENOMEM : 0;
        if (!e && T == ps->end + 1)
            a.v[a.n++] = (change){T, 0, UINT64_MAX, 0};
        if (!e && mt_vec_grow(&all, &cap, nall + a.n, sizeof *all))
            e = -ENOMEM;
        for (size_t k = 0; !e && k < a.n; k++) {
            all[nall] = a.v[k];
            all[nall++].proc = (uint32_t)i;
        }
        m->live[i] = a.before;
        sum += a.before;
        if (e)
            rc = fail(err, s->procs[i].path, e, r.err);
        free(a.v);
        mr_replay_free(&r);
    }
    if (!rc && nall > 1)
        qsort(all, nall, sizeof *all, by_time);
    uint64_t* cur = rc ? NULL : malloc((s->n + 1) * sizeof *cur);
    if (!rc && !cur)
        rc = fail(err, s->procs[0].path, -ENOMEM, "");
    // The cut: after the first event that reaches the highest sum (none: before them all).
    size_t cut = 0;
    if (!rc) {
        memcpy(cur, m->live, s->n * sizeof *cur);
        uint64_t best = sum;
        for (size_t k = 0; k < nall; k++) {
            sum = sum - cur[all[k].proc] + all[k].live;
            cur[all[k].proc] = all[k].live;
            if (sum > best) {
                best = sum;
                cut = k + 1;
            }
        }
    }
    for (size_t k = 0; !rc && k < cut; k++)
        m->live[all[k].proc] = all[k].live;
    for (size_t k = nall; !rc && k-- > cut;) { // each process's first event after the cut
        const change* c = &all[k];
        if (c->seq == UINT64_MAX) // its end, after the cut: it still held its bytes
            m->at[c->proc] = T - t->procs[c->proc].offset;
        else
            m->before_seq[c->proc] = c->seq;
    }
    free(cur);
    free(all);
    return rc;
}

int mr_procs_timeline_moment_find(const mr_capture_set* s, mr_procs_moment* m,
                                  mr_procs_error* err) {
    memset(m, 0, sizeof *m);
    mr_procs_timeline t;
    int rc = mr_procs_timeline_build(s, MOMENT_BUCKETS, &t, err);
    if (rc)
        return rc;
    if (!(m->at = calloc(s->n + 1, sizeof *m->at))) {
        mr_procs_timeline_free(&t);
        return fail(err, s->procs[0].path, -ENOMEM, "");
    }
    m->n = s->n;
    m->peak = t.total_peak;
    m->ts = t.total_peak_ts;
    if (!(m->before_seq = calloc(s->n + 1, sizeof *m->before_seq)) ||
        !(m->live = calloc(s->n + 1, sizeof *m->live)))
        rc = fail(err, s->procs[0].path, -ENOMEM, "");
    else
        rc = cut_at_peak(s, &t, t.duration / MOMENT_BUCKETS + 1, m, err);
    mr_procs_timeline_free(&t);
    if (rc)
        mr_procs_timeline_moment_free(m);
    return rc;
}

void mr_procs_timeline_moment_free(mr_procs_moment* m) {
    free(m->at);
    free(m->before_seq);
    free(m->live);
    memset(m, 0, sizeof *m);
}
