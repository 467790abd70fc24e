// SPDX-License-Identifier: MIT
// A heap's aggregates (aggregates.h): the measures observed during one replay, the bytes
// stored in the capture and their checks, and the profiles they answer.
#include "aggregates.h"

#include "messages.h"
#include "siphash.h"

#include "memtrace/schema.h"
#include "memtrace/vec.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// ---- measures

int mr_measures_init(mr_measures* m) {
    memset(m, 0, sizeof *m);
    if (mr_u64map_init(&m->temporary))
        return -ENOMEM;
    if (mr_u64map_init(&m->tid_index)) {
        mr_u64map_free(&m->temporary);
        return -ENOMEM;
    }
    return 0;
}

void mr_measures_free(mr_measures* m) {
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

int mr_measures_observe(mr_replay* r, const mt_event* ev, const mr_block* freed, void* ud) {
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

static int compute(mt_capture* cap, int heap, const char* progress, mr_aggregates* a, char* err,
                   size_t errlen) {
    memset(a, 0, sizeof *a);
    mr_measures m;
    if (mr_measures_init(&m)) {
        snprintf(err, errlen, "out of memory");
        return -ENOMEM;
    }
    mr_query q = MR_QUERY_INIT(heap);
    q.observe = mr_measures_observe;
    q.observe_ud = &m;
    q.progress = progress;
    int rc = mr_profile_build(cap, &q, &a->peak, err, errlen);
    if (!rc && a->peak.nrows && !(a->temporary = calloc(a->peak.nrows, sizeof *a->temporary)))
        rc = -ENOMEM;
    uint64_t c, n;
    for (size_t i = 0; !rc && mr_u64map_next(&m.temporary, &i, &c, &n);) {
        ptrdiff_t k = row_index(&a->peak, (uint32_t)c);
        if (k >= 0) // a freed block's callsite allocated it, so it has a row
            a->temporary[k] = n;
    }
    if (!rc) {
        a->threads = m.threads; // taken over
        a->nthreads = m.nthreads;
        m.threads = NULL;
        if (a->nthreads > 1)
            qsort(a->threads, a->nthreads, sizeof *a->threads, by_tid);
        memcpy(a->hist_count, m.hist_count, sizeof a->hist_count);
        memcpy(a->hist_bytes, m.hist_bytes, sizeof a->hist_bytes);
        a->frees = m.frees;
        a->temporaries = m.temporaries;
    }
    mr_measures_free(&m);
    if (rc == -ENOMEM)
        snprintf(err, errlen, "out of memory");
    if (rc)
        mr_aggregates_free(a);
    return rc;
}

// ---- the stored bytes: LEB128 varints (signed times zigzagged), then a SipHash of them

typedef struct buf {
    uint8_t* p;
    size_t n, cap;
    bool oom;
} buf;

static void put(buf* b, uint64_t v) {
    if (b->oom || mt_vec_grow(&b->p, &b->cap, b->n + 10, 1)) {
        b->oom = true;
        return;
    }
    do {
        uint8_t byte = v & 0x7f;
        v >>= 7;
        b->p[b->n++] = byte | (v ? 0x80 : 0);
    } while (v);
}

static void put_signed(buf* b, int64_t v) {
    put(b, ((uint64_t)v << 1) ^ (uint64_t)(v >> 63));
}

typedef struct reader {
    const uint8_t *p, *end;
    bool bad;
} reader;

static uint64_t get(reader* r) {
    uint64_t v = 0;
    for (unsigned shift = 0; shift < 64; shift += 7) {
        if (r->p == r->end) {
            r->bad = true;
            return 0;
        }
        uint8_t byte = *r->p++;
        v |= (uint64_t)(byte & 0x7f) << shift;
        if (!(byte & 0x80))
            return v;
    }
    r->bad = true;
    return 0;
}

static int64_t get_signed(reader* r) {
    uint64_t v = get(r);
    return (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
}

// The checksum's key: fixed, as it guards against damage, not against a chosen input.
static uint64_t checksum(const uint8_t* p, size_t n) {
    return mr_siphash_bytes(0x6d656d7472616365ull, 0x6167677265676174ull, p, n);
}

uint8_t* mr_aggregates_encode(const mr_aggregates* a, size_t* len) {
    const mr_heap_totals* t = &a->peak.heap;
    buf b = {0};
    put(&b, t->events);
    put(&b, t->allocations);
    put(&b, t->frees);
    put(&b, t->unmatched_frees);
    put(&b, t->bytes_allocated);
    put(&b, t->live_bytes);
    put(&b, t->live_blocks);
    put(&b, t->peak_bytes);
    put(&b, t->peak_seq);
    put_signed(&b, t->peak_ts);
    put(&b, t->last_seq);
    put_signed(&b, t->first_ts);
    put_signed(&b, t->last_ts);
    put(&b, a->frees);
    put(&b, a->temporaries);
    for (unsigned k = 0; k < MR_AGG_NBUCKETS; k++) {
        put(&b, a->hist_count[k]);
        put(&b, a->hist_bytes[k]);
    }
    put(&b, a->nthreads);
    for (size_t i = 0; i < a->nthreads; i++) {
        const mr_agg_thread* th = &a->threads[i];
        put(&b, th->tid);
        put(&b, th->allocations);
        put(&b, th->bytes);
        put(&b, th->frees);
        put(&b, th->temporary);
        put(&b, th->live_bytes);
        put(&b, th->live_blocks);
    }
    put(&b, a->peak.nrows);
    for (size_t i = 0; i < a->peak.nrows; i++) {
        const mr_profile_row* r = &a->peak.rows[i];
        put(&b, r->callsite);
        put(&b, r->live_bytes);
        put(&b, r->live_blocks);
        put(&b, r->end_bytes);
        put(&b, r->end_blocks);
        put(&b, r->alloc_bytes);
        put(&b, r->alloc_count);
        put(&b, a->temporary ? a->temporary[i] : 0);
    }
    uint64_t sum = b.oom ? 0 : checksum(b.p, b.n);
    for (unsigned k = 0; k < 8; k++) {
        uint8_t byte = (uint8_t)(sum >> (8 * k));
        if (!b.oom && !mt_vec_grow(&b.p, &b.cap, b.n + 1, 1))
            b.p[b.n++] = byte;
        else
            b.oom = true;
    }
    if (b.oom) {
        free(b.p);
        return NULL;
    }
    *len = b.n;
    return b.p;
}

// Adds v to *sum unless that passes limit. Returns false when it would.
static bool add_within(uint64_t* sum, uint64_t v, uint64_t limit) {
    if (v > limit || *sum > limit - v)
        return false;
    *sum += v;
    return true;
}

__attribute__((format(printf, 3, 4))) static int fail(char* why, size_t whylen, const char* fmt,
                                                      ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, whylen, fmt, ap);
    va_end(ap);
    return -EPROTO;
}

// Whether the decoded aggregates add up: what a replay gives always does.
static int check(const mr_aggregates* a, char* why, size_t whylen) {
    const mr_heap_totals* t = &a->peak.heap;
    const uint64_t lim = MT_EVENT_SIZE_MAX; // what a replay ever sums (replay.h)
    if (t->bytes_allocated > lim)
        return fail(why, whylen, "over the bytes a heap may allocate");
    if (t->peak_bytes > t->bytes_allocated || t->live_bytes > t->peak_bytes ||
        t->live_blocks > t->allocations || t->unmatched_frees > t->frees || a->frees != t->frees ||
        t->allocations > t->events || t->frees > t->events - t->allocations ||
        a->temporaries > t->frees || t->peak_seq > t->last_seq)
        return fail(why, whylen, "totals");
    uint64_t s[6] = {0};
    for (unsigned k = 0; k < MR_AGG_NBUCKETS; k++)
        if (!add_within(&s[0], a->hist_count[k], lim) || !add_within(&s[1], a->hist_bytes[k], lim))
            return fail(why, whylen, "size histogram");
    if (s[0] != t->allocations || s[1] != t->bytes_allocated)
        return fail(why, whylen, "size histogram");
    memset(s, 0, sizeof s);
    for (size_t i = 0; i < a->nthreads; i++) {
        const mr_agg_thread* th = &a->threads[i];
        if ((i && th->tid <= a->threads[i - 1].tid) || th->live_blocks > th->allocations ||
            th->live_bytes > th->bytes || !add_within(&s[0], th->allocations, lim) ||
            !add_within(&s[1], th->bytes, lim) || !add_within(&s[2], th->frees, lim) ||
            !add_within(&s[3], th->temporary, lim) || !add_within(&s[4], th->live_bytes, lim) ||
            !add_within(&s[5], th->live_blocks, lim))
            return fail(why, whylen, "thread %zu", i);
    }
    if (s[0] != t->allocations || s[1] != t->bytes_allocated || s[2] != t->frees ||
        s[3] != a->temporaries || s[4] != t->live_bytes || s[5] != t->live_blocks ||
        (t->events && !a->nthreads))
        return fail(why, whylen, "threads");
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
            return fail(why, whylen, "callsite row %zu", i);
    }
    if (r6[0] != t->peak_bytes || r6[2] != t->live_bytes || r6[3] != t->live_blocks ||
        r6[4] != t->bytes_allocated || r6[5] != t->allocations || r6[6] != a->temporaries)
        return fail(why, whylen, "callsite rows");
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
    if (len < 8)
        return fail(why, whylen, "too short");
    uint64_t sum = 0;
    for (unsigned k = 0; k < 8; k++)
        sum |= (uint64_t)p[len - 8 + k] << (8 * k);
    if (sum != checksum(p, len - 8))
        return fail(why, whylen, "checksum mismatch");
    reader r = {p, p + len - 8, false};
    mr_heap_totals* t = &out->peak.heap;
    t->heap = heap;
    t->events = get(&r);
    t->allocations = get(&r);
    t->frees = get(&r);
    t->unmatched_frees = get(&r);
    t->bytes_allocated = get(&r);
    t->live_bytes = get(&r);
    t->live_blocks = get(&r);
    t->peak_bytes = get(&r);
    t->peak_seq = get(&r);
    t->peak_ts = get_signed(&r);
    t->last_seq = get(&r);
    t->first_ts = get_signed(&r);
    t->last_ts = get_signed(&r);
    out->frees = get(&r);
    out->temporaries = get(&r);
    for (unsigned k = 0; k < MR_AGG_NBUCKETS; k++) {
        out->hist_count[k] = get(&r);
        out->hist_bytes[k] = get(&r);
    }
    // Each thread and row takes at least 7 and 8 bytes: a count beyond what is left is a
    // damaged one, refused before anything is allocated for it.
    uint64_t n = get(&r);
    if (r.bad || n > (size_t)(r.end - r.p) / 7)
        return fail(why, whylen, "truncated");
    if (n && !(out->threads = calloc(n, sizeof *out->threads)))
        return -ENOMEM;
    out->nthreads = n;
    for (size_t i = 0; i < n; i++) {
        mr_agg_thread* th = &out->threads[i];
        uint64_t tid = get(&r);
        th->tid = (uint32_t)tid;
        th->allocations = get(&r);
        th->bytes = get(&r);
        th->frees = get(&r);
        th->temporary = get(&r);
        th->live_bytes = get(&r);
        th->live_blocks = get(&r);
        r.bad |= tid > UINT32_MAX;
    }
    n = get(&r);
    int rc = 0;
    if (r.bad || n > (size_t)(r.end - r.p) / 8)
        rc = fail(why, whylen, "truncated");
    else if (n && (!(out->peak.rows = calloc(n, sizeof *out->peak.rows)) ||
                   !(out->temporary = calloc(n, sizeof *out->temporary))))
        rc = -ENOMEM;
    out->peak.nrows = rc ? 0 : n;
    for (size_t i = 0; !rc && i < n; i++) {
        mr_profile_row* row = &out->peak.rows[i];
        uint64_t c = get(&r);
        row->callsite = (uint32_t)c;
        row->live_bytes = get(&r);
        row->live_blocks = get(&r);
        row->end_bytes = get(&r);
        row->end_blocks = get(&r);
        row->alloc_bytes = get(&r);
        row->alloc_count = get(&r);
        out->temporary[i] = get(&r);
        r.bad |= c > UINT32_MAX;
    }
    if (!rc && (r.bad || r.p != r.end))
        rc = fail(why, whylen, "truncated");
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
// there are none to use (said on stderr when they are damaged), or -ENOMEM.
static int load(mt_capture* cap, int heap, uint64_t fingerprint, mr_aggregates* out) {
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
        mr_error(mt_capture_path(cap), "the stored aggregates are damaged (%s); reading the events",
                 why);
        rc = 1;
    }
    free(data);
    return rc;
}

// need: compute them even when they cannot be stored. Returns 0, 1 (none: not stored and
// not storable, and not needed), or a negative errno with the reason in err.
static int aggregates_for(mt_capture* cap, int heap, const char* progress, bool need,
                          mr_aggregates* out, char* err, size_t errlen) {
    uint64_t fp = 0;
    bool usable = !disabled && mt_capture_aggregate_fingerprint(cap, heap, &fp) == 0;
    int rc = usable ? load(cap, heap, fp, out) : 1;
    if (rc <= 0) {
        if (rc)
            snprintf(err, errlen, "out of memory");
        return rc;
    }
    bool store = usable && mt_capture_writable(cap);
    if (!store && !need)
        return 1;
    if ((rc = compute(cap, heap, progress, out, err, errlen)))
        return rc;
    size_t len;
    uint8_t* data = store ? mr_aggregates_encode(out, &len) : NULL;
    // A capture that cannot take them (full disk, locked) is read as it is, every time.
    if (data)
        mt_capture_aggregate_store(cap, heap, MR_AGGREGATES_FORMAT, fp, data, len);
    free(data);
    return 0;
}

int mr_aggregates_get(mt_capture* cap, int heap, const char* progress, mr_aggregates* out,
                      char* err, size_t errlen) {
    return aggregates_for(cap, heap, progress, true, out, err, errlen);
}

int mr_aggregates_answer(mt_capture* cap, const mr_query* qs, size_t n, mr_profile* out, char* err,
                         size_t errlen) {
    for (size_t k = 0; k < n; k++)
        if (!mr_profile_is_default(&qs[k]))
            return 1;
    mr_aggregates a;
    int rc = aggregates_for(cap, qs[0].heap, qs[0].progress, false, &a, err, errlen);
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
