// SPDX-License-Identifier: MIT
// A heap's aggregates (aggregates.h): the measures observed during one replay, the bytes
// stored in the capture and their checks, and the profiles they answer.
#include "aggregates.h"

#include "checkpoints.h"
#include "varbytes.h"

#include "memtrace/schema.h"
#include "memtrace/vec.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// ---- measures

int mr_aggregates_measures_init(mr_measures* m) {
    memset(m, 0, sizeof *m);
    if (mr_u64map_init(&m->temporary))
        return -ENOMEM;
    if (mr_u64map_init(&m->tid_index)) {
        mr_u64map_free(&m->temporary);
        return -ENOMEM;
    }
    return 0;
}

void mr_aggregates_measures_free(mr_measures* m) {
    mr_u64map_free(&m->temporary);
    mr_u64map_free(&m->tid_index);
    free(m->threads);
    memset(m, 0, sizeof *m);
}

static unsigned bucket_of(uint64_t size) {
    return size ? 64u - (unsigned)__builtin_clzll(size) : 0u;
}

static mr_agg_thread* thread_of(mr_measures* m, uint32_t tid) {
    if (m->nthreads && m->cached_tid == tid)
        return &m->threads[m->cached_index];
    const uint64_t* index = mr_u64map_get(&m->tid_index, tid);
    size_t i;
    if (index) {
        i = (size_t)*index;
    } else {
        if (MT_VEC_RESERVE(&m->threads, &m->capthreads, m->nthreads + 1))
            return NULL;
        i = m->nthreads;
        if (mr_u64map_put(&m->tid_index, tid, i))
            return NULL;
        m->threads[m->nthreads++] = (mr_agg_thread){.tid = tid};
    }
    m->cached_tid = tid;
    m->cached_index = i;
    return &m->threads[i];
}

// heaptrack 1.4's rule (src/analyze/accumulatedtracedata.cpp), reproduced exactly: a free
// is temporary when the last event before it, over all threads, is an allocation of the same
// size from the same stack (not necessarily the same block). After a free, heaptrack's
// "last allocation" is index 0, which is also the index of the first (size, stack) seen:
// a free right after a free counts when its block matches the process's first allocation.
// Frees of blocks allocated before tracing are skipped by heaptrack and here alike.
static bool is_temporary(mr_measures* m, const mr_block* freed) {
    bool temporary = m->last_alloc.set && m->last_alloc.size == freed->size &&
                     m->last_alloc.callsite == freed->callsite;
    m->last_alloc = m->first_alloc;
    return temporary;
}

int mr_aggregates_measures_observe(mr_replay* r, const mt_event* ev, const mr_block* freed,
                                   void* ud) {
    mr_measures* m = ud;
    mr_agg_thread* th = thread_of(m, ev->tid);
    if (!th)
        return -ENOMEM;
    if (freed) { // freed, or replaced by an allocation at its address
        mr_agg_thread* owner = freed->tid == ev->tid ? th : thread_of(m, freed->tid);
        if (!owner)
            return -ENOMEM;
        owner->live_bytes -= freed->size;
        owner->live_blocks--;
    }
    if (mt_kind_is_alloc(ev->kind)) {
        th->allocations++;
        th->bytes += ev->size;
        th->live_bytes += ev->size;
        th->live_blocks++;
        m->last_alloc = (mr_alloc_key){.size = ev->size, .callsite = ev->callsite, .set = true};
        if (!m->first_alloc.set)
            m->first_alloc = m->last_alloc;
        if (r->cap != m->sizes_of) {
            m->sizes_of = r->cap;
            m->sample_bytes = (uint64_t)mt_capture_meta_int(r->cap, "sample_bytes", 0);
            mt_sample_sizes_init(&m->sizes, m->sample_bytes);
        }
        unsigned b = m->sample_bytes && mt_sample_kind(r->heap, ev->kind)
                         ? mt_sample_size_bits(&m->sizes, ev->size)
                         : bucket_of(ev->size);
        m->hist_count[b]++;
        m->hist_bytes[b] += ev->size;
    } else if (mt_kind_is_free(ev->kind)) {
        th->frees++;
        m->frees++;
        if (freed && is_temporary(m, freed)) {
            uint64_t* t = mr_u64map_get(&m->temporary, freed->callsite);
            if (t)
                (*t)++;
            else if (mr_u64map_put(&m->temporary, freed->callsite, 1))
                return -ENOMEM;
            th->temporary++;
            m->temporaries++;
        }
    }
    return 0;
}

// ---- aggregates from a replay

static bool disabled;

void mr_aggregates_enable(bool on) {
    disabled = !on;
}

bool mr_aggregates_enabled(void) {
    return !disabled;
}

void mr_aggregates_free(mr_aggregates* a) {
    mr_profile_free(&a->peak);
    free(a->temporary);
    free(a->threads);
    memset(a, 0, sizeof *a);
}

static int by_tid(const void* a, const void* b) {
    const mr_agg_thread *x = a, *y = b;
    return x->tid < y->tid ? -1 : x->tid > y->tid;
}

// The row of callsite c in p's rows (sorted by callsite), or -1.
static ptrdiff_t row_index(const mr_profile* p, uint32_t c) {
    size_t lo = 0, hi = p->nrows;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (p->rows[mid].callsite < c)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < p->nrows && p->rows[lo].callsite == c ? (ptrdiff_t)lo : -1;
}

// The observers of the replay that computes the aggregates and stores the checkpoints.
typedef struct computing {
    mr_measures m;
    mr_checkpoints_writer w;
} computing;

static int observe_both(mr_replay* r, const mt_event* ev, const mr_block* freed, void* ud) {
    computing* c = ud;
    int rc = mr_aggregates_measures_observe(r, ev, freed, &c->m);
    return rc ? rc : mr_checkpoints_observe(r, ev, freed, &c->w);
}

// checkpoints: the fingerprint to store the heap's checkpoints with, on the way (NULL: none).
static int compute(mt_capture* cap, int heap, const char* progress, const uint64_t* checkpoints,
                   mr_aggregates* a, char* err, size_t errlen) {
    memset(a, 0, sizeof *a);
    computing run;
    if (mr_aggregates_measures_init(&run.m)) {
        snprintf(err, errlen, "out of memory");
        return -ENOMEM;
    }
    mr_query q = MR_QUERY_INIT(heap);
    q.observe = mr_aggregates_measures_observe;
    q.observe_ud = &run.m;
    q.progress = progress;
    // A capture whose checkpoints cannot be cleared (locked) gets none, silently.
    if (checkpoints && !mr_checkpoints_begin(&run.w, cap, heap, *checkpoints)) {
        q.observe = observe_both;
        q.observe_ud = &run;
    }
    int rc = mr_profile_build(cap, &q, &a->peak, err, errlen);
    if (q.observe == observe_both) {
        if (!rc) // the set is whole only after every event, once stored
            mr_checkpoints_end(&run.w);
        mr_checkpoints_writer_free(&run.w);
    }
    if (!rc && a->peak.nrows && !(a->temporary = calloc(a->peak.nrows, sizeof *a->temporary)))
        rc = -ENOMEM;
    uint64_t c, n;
    for (size_t i = 0; !rc && mr_u64map_next(&run.m.temporary, &i, &c, &n);) {
        ptrdiff_t k = row_index(&a->peak, (uint32_t)c);
        if (k >= 0) // a freed block's callsite allocated it, so it has a row
            a->temporary[k] = n;
    }
    if (!rc) {
        a->threads = run.m.threads; // taken over
        a->nthreads = run.m.nthreads;
        run.m.threads = NULL;
        if (a->nthreads > 1)
            qsort(a->threads, a->nthreads, sizeof *a->threads, by_tid);
        memcpy(a->hist_count, run.m.hist_count, sizeof a->hist_count);
        memcpy(a->hist_bytes, run.m.hist_bytes, sizeof a->hist_bytes);
        a->frees = run.m.frees;
        a->temporaries = run.m.temporaries;
    }
    mr_aggregates_measures_free(&run.m);
    if (rc == -ENOMEM)
        snprintf(err, errlen, "out of memory");
    if (rc)
        mr_aggregates_free(a);
    return rc;
}

// ---- the stored bytes (varbytes.h)

// The checksum's key (mr_varbytes_seal).
#define AGG_K0 0x6d656d7472616365ull
#define AGG_K1 0x6167677265676174ull

uint8_t* mr_aggregates_encode(const mr_aggregates* a, size_t* len) {
    const mr_heap_totals* t = &a->peak.heap;
    mr_varbuf b = {0};
    mr_varbytes_put(&b, t->events);
    mr_varbytes_put(&b, t->allocations);
    mr_varbytes_put(&b, t->frees);
    mr_varbytes_put(&b, t->unmatched_frees);
    mr_varbytes_put(&b, t->bytes_allocated);
    mr_varbytes_put(&b, t->live_bytes);
    mr_varbytes_put(&b, t->live_blocks);
    mr_varbytes_put(&b, t->peak_bytes);
    mr_varbytes_put(&b, t->peak_seq);
    mr_varbytes_put_signed(&b, t->peak_ts);
    mr_varbytes_put(&b, t->last_seq);
    mr_varbytes_put_signed(&b, t->first_ts);
    mr_varbytes_put_signed(&b, t->last_ts);
    mr_varbytes_put(&b, a->frees);
    mr_varbytes_put(&b, a->temporaries);
    for (unsigned k = 0; k < MR_AGG_NBUCKETS; k++) {
        mr_varbytes_put(&b, a->hist_count[k]);
        mr_varbytes_put(&b, a->hist_bytes[k]);
    }
    mr_varbytes_put(&b, a->nthreads);
    for (size_t i = 0; i < a->nthreads; i++) {
        const mr_agg_thread* th = &a->threads[i];
        mr_varbytes_put(&b, th->tid);
        mr_varbytes_put(&b, th->allocations);
        mr_varbytes_put(&b, th->bytes);
        mr_varbytes_put(&b, th->frees);
        mr_varbytes_put(&b, th->temporary);
        mr_varbytes_put(&b, th->live_bytes);
        mr_varbytes_put(&b, th->live_blocks);
    }
    mr_varbytes_put(&b, a->peak.nrows);
    for (size_t i = 0; i < a->peak.nrows; i++) {
        const mr_profile_row* r = &a->peak.rows[i];
        mr_varbytes_put(&b, r->callsite);
        mr_varbytes_put(&b, r->live_bytes);
        mr_varbytes_put(&b, r->live_blocks);
        mr_varbytes_put(&b, r->end_bytes);
        mr_varbytes_put(&b, r->end_blocks);
        mr_varbytes_put(&b, r->alloc_bytes);
        mr_varbytes_put(&b, r->alloc_count);
        mr_varbytes_put(&b, a->temporary ? a->temporary[i] : 0);
    }
    return mr_varbytes_seal(&b, AGG_K0, AGG_K1, len);
}

// Adds v to *sum unless that passes limit. Returns false when it would.
static bool add_within(uint64_t* sum, uint64_t v, uint64_t limit) {
    if (v > limit || *sum > limit - v)
        return false;
    *sum += v;
    return true;
}

// Whether the decoded aggregates add up: what a replay gives always does.
static int check(const mr_aggregates* a, char* why, size_t whylen) {
    const mr_heap_totals* t = &a->peak.heap;
    const uint64_t lim = MT_EVENT_SIZE_MAX; // what a replay ever sums (replay.h)
    if (t->bytes_allocated > lim)
        return mr_varbytes_fail(why, whylen, "over the bytes a heap may allocate");
    if (t->peak_bytes > t->bytes_allocated || t->live_bytes > t->peak_bytes ||
        t->live_blocks > t->allocations || t->unmatched_frees > t->frees || a->frees != t->frees ||
        t->allocations > t->events || t->frees > t->events - t->allocations ||
        a->temporaries > t->frees || t->peak_seq > t->last_seq)
        return mr_varbytes_fail(why, whylen, "totals");
    uint64_t s[6] = {0};
    for (unsigned k = 0; k < MR_AGG_NBUCKETS; k++)
        if (!add_within(&s[0], a->hist_count[k], lim) || !add_within(&s[1], a->hist_bytes[k], lim))
            return mr_varbytes_fail(why, whylen, "size histogram");
    if (s[0] != t->allocations || s[1] != t->bytes_allocated)
        return mr_varbytes_fail(why, whylen, "size histogram");
    memset(s, 0, sizeof s);
    for (size_t i = 0; i < a->nthreads; i++) {
        const mr_agg_thread* th = &a->threads[i];
        if ((i && th->tid <= a->threads[i - 1].tid) || th->live_blocks > th->allocations ||
            th->live_bytes > th->bytes || !add_within(&s[0], th->allocations, lim) ||
            !add_within(&s[1], th->bytes, lim) || !add_within(&s[2], th->frees, lim) ||
            !add_within(&s[3], th->temporary, lim) || !add_within(&s[4], th->live_bytes, lim) ||
            !add_within(&s[5], th->live_blocks, lim))
            return mr_varbytes_fail(why, whylen, "thread %zu", i);
    }
    if (s[0] != t->allocations || s[1] != t->bytes_allocated || s[2] != t->frees ||
        s[3] != a->temporaries || s[4] != t->live_bytes || s[5] != t->live_blocks ||
        (t->events && !a->nthreads))
        return mr_varbytes_fail(why, whylen, "threads");
    uint64_t r6[7] = {0};
    for (size_t i = 0; i < a->peak.nrows; i++) {
        const mr_profile_row* r = &a->peak.rows[i];
        if ((i && r->callsite <= a->peak.rows[i - 1].callsite) || !r->alloc_count ||
            r->live_blocks > r->alloc_count || r->end_blocks > r->alloc_count ||
            r->live_bytes > r->alloc_bytes || r->end_bytes > r->alloc_bytes ||
            a->temporary[i] > r->alloc_count || !add_within(&r6[0], r->live_bytes, lim) ||
            !add_within(&r6[1], r->live_blocks, lim) || !add_within(&r6[2], r->end_bytes, lim) ||
            !add_within(&r6[3], r->end_blocks, lim) || !add_within(&r6[4], r->alloc_bytes, lim) ||
            !add_within(&r6[5], r->alloc_count, lim) || !add_within(&r6[6], a->temporary[i], lim))
            return mr_varbytes_fail(why, whylen, "callsite row %zu", i);
    }
    if (r6[0] != t->peak_bytes || r6[2] != t->live_bytes || r6[3] != t->live_blocks ||
        r6[4] != t->bytes_allocated || r6[5] != t->allocations || r6[6] != a->temporaries)
        return mr_varbytes_fail(why, whylen, "callsite rows");
    return 0;
}

// The peak profile's own fields, from its rows and the heap's totals (as finish() and
// mr_profile_build_moments set them).
static void peak_fields(mr_profile* p) {
    const mr_heap_totals* t = &p->heap;
    p->moment_seq = t->peak_seq;
    p->moment_ts = t->peak_ts;
    p->live_bytes = p->live_blocks = p->end_bytes = p->end_blocks = 0;
    p->alloc_bytes = p->alloc_count = 0;
    for (size_t i = 0; i < p->nrows; i++) {
        p->live_bytes += p->rows[i].live_bytes;
        p->live_blocks += p->rows[i].live_blocks;
        p->end_bytes += p->rows[i].end_bytes;
        p->end_blocks += p->rows[i].end_blocks;
        p->alloc_bytes += p->rows[i].alloc_bytes;
        p->alloc_count += p->rows[i].alloc_count;
    }
    p->peak_bytes = t->peak_bytes;
    p->peak_seq = t->peak_seq;
    p->peak_ts = t->peak_ts;
    p->events = t->events;
    p->first_ts = t->first_ts;
    p->last_ts = t->last_ts;
}

int mr_aggregates_decode(const uint8_t* p, size_t len, int heap, mr_aggregates* out, char* why,
                         size_t whylen) {
    memset(out, 0, sizeof *out);
    mr_varreader r;
    if (len < 8)
        return mr_varbytes_fail(why, whylen, "too short");
    if (!mr_varbytes_open(p, len, AGG_K0, AGG_K1, &r))
        return mr_varbytes_fail(why, whylen, "checksum mismatch");
    mr_heap_totals* t = &out->peak.heap;
    t->heap = heap;
    t->events = mr_varbytes_get(&r);
    t->allocations = mr_varbytes_get(&r);
    t->frees = mr_varbytes_get(&r);
    t->unmatched_frees = mr_varbytes_get(&r);
    t->bytes_allocated = mr_varbytes_get(&r);
    t->live_bytes = mr_varbytes_get(&r);
    t->live_blocks = mr_varbytes_get(&r);
    t->peak_bytes = mr_varbytes_get(&r);
    t->peak_seq = mr_varbytes_get(&r);
    t->peak_ts = mr_varbytes_get_signed(&r);
    t->last_seq = mr_varbytes_get(&r);
    t->first_ts = mr_varbytes_get_signed(&r);
    t->last_ts = mr_varbytes_get_signed(&r);
    out->frees = mr_varbytes_get(&r);
    out->temporaries = mr_varbytes_get(&r);
    for (unsigned k = 0; k < MR_AGG_NBUCKETS; k++) {
        out->hist_count[k] = mr_varbytes_get(&r);
        out->hist_bytes[k] = mr_varbytes_get(&r);
    }
    // Each thread and row takes at least 7 and 8 bytes: a count beyond what is left is a
    // damaged one, refused before anything is allocated for it.
    uint64_t n = mr_varbytes_get(&r);
    if (r.bad || n > (size_t)(r.end - r.p) / 7)
        return mr_varbytes_fail(why, whylen, "truncated");
    if (n && !(out->threads = calloc(n, sizeof *out->threads)))
        return -ENOMEM;
    out->nthreads = n;
    for (size_t i = 0; i < n; i++) {
        mr_agg_thread* th = &out->threads[i];
        uint64_t tid = mr_varbytes_get(&r);
        th->tid = (uint32_t)tid;
        th->allocations = mr_varbytes_get(&r);
        th->bytes = mr_varbytes_get(&r);
        th->frees = mr_varbytes_get(&r);
        th->temporary = mr_varbytes_get(&r);
        th->live_bytes = mr_varbytes_get(&r);
        th->live_blocks = mr_varbytes_get(&r);
        r.bad |= tid > UINT32_MAX;
    }
    n = mr_varbytes_get(&r);
    int rc = 0;
    if (r.bad || n > (size_t)(r.end - r.p) / 8)
        rc = mr_varbytes_fail(why, whylen, "truncated");
    else if (n && (!(out->peak.rows = calloc(n, sizeof *out->peak.rows)) ||
                   !(out->temporary = calloc(n, sizeof *out->temporary))))
        rc = -ENOMEM;
    out->peak.nrows = rc ? 0 : n;
    for (size_t i = 0; !rc && i < n; i++) {
        mr_profile_row* row = &out->peak.rows[i];
        uint64_t c = mr_varbytes_get(&r);
        row->callsite = (uint32_t)c;
        row->live_bytes = mr_varbytes_get(&r);
        row->live_blocks = mr_varbytes_get(&r);
        row->end_bytes = mr_varbytes_get(&r);
        row->end_blocks = mr_varbytes_get(&r);
        row->alloc_bytes = mr_varbytes_get(&r);
        row->alloc_count = mr_varbytes_get(&r);
        out->temporary[i] = mr_varbytes_get(&r);
        r.bad |= c > UINT32_MAX;
    }
    if (!rc && (r.bad || r.p != r.end))
        rc = mr_varbytes_fail(why, whylen, "truncated");
    if (!rc)
        rc = check(out, why, whylen);
    if (rc) {
        mr_aggregates_free(out);
        return rc;
    }
    peak_fields(&out->peak);
    return 0;
}

// ---- stored, or computed

// Stored aggregates of the capture's events as they are now, checked: 0 with *out, 1 when
// there are none to use (when they are damaged, with the note in err), or -ENOMEM.
static int load(mt_capture* cap, int heap, uint64_t fingerprint, mr_aggregates* out, char* err,
                size_t errlen) {
    int64_t format = 0;
    uint64_t stored_fp = 0;
    uint8_t* data;
    size_t len;
    int rc = mt_capture_aggregate_read(cap, heap, &format, &stored_fp, &data, &len);
    if (rc <= 0)
        return rc < 0 ? rc : 1;
    char why[128];
    mt_heap_span span;
    if (format != MR_AGGREGATES_FORMAT || stored_fp != fingerprint) {
        // Another version's, or of events since changed (whose own reading says what is
        // wrong with them, if anything): replaced by a replay's, which is right either way.
        rc = 1;
    } else if (!(rc = mr_aggregates_decode(data, len, heap, out, why, sizeof why)) &&
               (mt_capture_heap_span(cap, heap, &span) < 0 ||
                span.events != out->peak.heap.events)) {
        snprintf(why, sizeof why, "not the chunks' event count");
        mr_aggregates_free(out);
        rc = -EPROTO;
    } else if (!rc && out->peak.heap.bytes_allocated > mr_replay_alloc_limit()) {
        // Read with other processes, whose sums share the limit: the replay refuses it in
        // its own words (mr_replay_share_limit).
        mr_aggregates_free(out);
        rc = 1;
    }
    if (rc == -EPROTO) {
        snprintf(err, errlen, "the stored aggregates are damaged (%s); reading the events", why);
        rc = 1;
    }
    free(data);
    return rc;
}

// need: compute them even when they cannot be stored; checkpoints: only aggregates whose
// checkpoints are stored (computed again, with them, when they are not). Returns 0 (*fp: the
// events' fingerprint), 1 (none: not stored and not storable, and not needed), or a negative
// errno with the reason in err.
static int aggregates_for(mt_capture* cap, int heap, const char* progress, bool need,
                          bool checkpoints, mr_aggregates* out, uint64_t* fp, char* err,
                          size_t errlen) {
    *fp = 0;
    bool usable = !disabled && mt_capture_aggregate_fingerprint(cap, heap, fp) == 0;
    int rc = usable ? load(cap, heap, *fp, out, err, errlen) : 1;
    if (rc == 0 && checkpoints && !mr_checkpoints_present(cap, heap, *fp)) {
        mr_aggregates_free(out); // stored before checkpoints were, or not whole
        rc = 1;
    }
    if (rc <= 0) {
        if (rc)
            snprintf(err, errlen, "out of memory");
        return rc;
    }
    bool store = usable && mt_capture_writable(cap);
    if (!store && (!need || checkpoints))
        return 1;
    if ((rc = compute(cap, heap, progress, store ? fp : NULL, out, err, errlen)))
        return rc;
    size_t len;
    uint8_t* data = store ? mr_aggregates_encode(out, &len) : NULL;
    // A capture that cannot take them (full disk, locked) is read as it is, every time.
    if (data)
        mt_capture_aggregate_store(cap, heap, MR_AGGREGATES_FORMAT, *fp, data, len);
    free(data);
    return 0;
}

int mr_aggregates_get(mt_capture* cap, int heap, const char* progress, mr_aggregates* out,
                      char* err, size_t errlen) {
    uint64_t fp;
    return aggregates_for(cap, heap, progress, true, false, out, &fp, err, errlen);
}

int mr_aggregates_checkpointed(mt_capture* cap, int heap, const char* progress, mr_aggregates* out,
                               uint64_t* fingerprint, char* err, size_t errlen) {
    return aggregates_for(cap, heap, progress, false, true, out, fingerprint, err, errlen);
}

int mr_aggregates_answer(mt_capture* cap, const mr_query* qs, size_t n, mr_profile* out, char* err,
                         size_t errlen) {
    for (size_t k = 0; k < n; k++)
        if (!mr_profile_is_default(&qs[k]))
            return 1;
    mr_aggregates a;
    uint64_t fp;
    int rc = aggregates_for(cap, qs[0].heap, qs[0].progress, false, false, &a, &fp, err, errlen);
    if (rc)
        return rc;
    for (size_t k = 0; k < n && !rc; k++)
        if ((rc = mr_profile_moment_of(&a.peak, qs[k].moment, &out[k])))
            snprintf(err, errlen, "out of memory");
    if (rc)
        for (size_t k = 0; k < n; k++)
            mr_profile_free(&out[k]);
    mr_aggregates_free(&a);
    return rc;
}
