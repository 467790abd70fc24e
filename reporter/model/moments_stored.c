// SPDX-License-Identifier: MIT
// The moments of a heap (moments.h) stored in the capture when first computed, in table
// `derived` under the fingerprint of the events (docs/capture-format.md, "Derived"), and
// read back instead of replaying every event.
#include "aggregates.h"
#include "leak_kinds.h"
#include "moments.h"
#include "varbytes.h"
#include "varstream.h"

#include "memtrace/schema.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// The checksum's key (mr_varbytes_seal).
#define MOM_K0 0x6d656d7472616365ull
#define MOM_K1 0x6d6f6d656e747331ull

int64_t mr_moments_key(uint32_t tid, size_t buckets, bool edges) {
    return (int64_t)(1ull << 56 | (uint64_t)edges << 48 | (uint64_t)(buckets & 0xffff) << 32 | tid);
}

// The values (or allocations) of m, however it holds them; b->oom when they cannot be read.
static void put_values(mr_varbuf* b, const mr_moments* m, bool allocs) {
    mr_moments_cursor c;
    mr_moment_value v;
    int e = mr_moments_cursor_open(m, allocs, &c);
    while (e == 0 && (e = mr_moments_cursor_next(&c, &v)) == 1) {
        mr_varbytes_put(b, v.moment);
        mr_varbytes_put(b, v.callsite);
        mr_varbytes_put(b, v.bytes);
        mr_varbytes_put(b, v.blocks);
        e = 0;
    }
    b->oom |= e != 0;
    mr_moments_cursor_close(&c);
}

uint8_t* mr_moments_encode(const mr_moments* m, uint32_t tid, int64_t end, bool edges,
                           size_t* len) {
    mr_varbuf b = {0};
    mr_varbytes_put(&b, tid);
    mr_varbytes_put_signed(&b, end);
    mr_varbytes_put(&b, edges);
    mr_varbytes_put_signed(&b, m->t0);
    mr_varbytes_put_signed(&b, m->width);
    mr_varbytes_put(&b, m->nbuckets);
    mr_varbytes_put(&b, m->n);
    for (size_t k = 0; k < m->nbuckets; k++)
        mr_varbytes_put(&b, m->bucket_moment[k]);
    for (size_t k = 0; k < m->n; k++) {
        mr_varbytes_put(&b, m->seq[k]);
        mr_varbytes_put_signed(&b, m->ts[k]);
        mr_varbytes_put(&b, m->bytes[k]);
    }
    mr_varbytes_put(&b, m->nvalues);
    put_values(&b, m, false);
    mr_varbytes_put(&b, m->events);
    if (edges) {
        for (size_t k = 0; k <= m->nbuckets; k++)
            mr_varbytes_put(&b, m->edge_moment[k]);
        mr_varbytes_put(&b, m->nallocs);
        put_values(&b, m, true);
        mr_varbytes_put(&b, m->threads);
        for (size_t i = 0; i < m->threads; i++) {
            mr_varbytes_put(&b, m->tids[i]);
            mr_varbytes_put(&b, m->tid_allocs[i]);
        }
        mr_varbytes_put(&b, m->nends);
        for (size_t i = 0; i < m->nends; i++) {
            const mr_moment_end* e = &m->ends[i];
            mr_varbytes_put(&b, e->bucket);
            mr_varbytes_put(&b, e->callsite);
            mr_varbytes_put(&b, (uint64_t)e->kind);
            mr_varbytes_put(&b, e->bytes);
            mr_varbytes_put(&b, e->blocks);
        }
        mr_varbytes_put(&b, m->scanned);
        size_t n = strlen(m->why_unscanned);
        mr_varbytes_put(&b, n);
        for (size_t i = 0; i < n; i++)
            mr_varbytes_put(&b, (uint8_t)m->why_unscanned[i]);
    }
    return mr_varbytes_seal(&b, MOM_K0, MOM_K1, len);
}

// ---- reading them back a window at a time

// Where stored moments' values and allocations lie: their bytes are read again, a window at
// a time, for each pass over them (mr_moments_cursor), never held whole.
struct mr_moments_stored {
    mr_varstream_read_fn read;
    void* ud;
    mt_capture_blob* blob; // the source when read from the capture (ud), else NULL
    size_t values_at, allocs_at, end;
};

static size_t read_window = 64 << 10;

void mr_moments_read_window(size_t bytes) {
    read_window = bytes ? bytes : 64 << 10;
}

// A count of items of at least `least` bytes each, refused when beyond what is left.
static bool count_ok(const mr_varstream* s, uint64_t n, size_t least) {
    return !s->r.bad && n <= (s->end - mr_varstream_offset(s)) / least;
}

// An array of n items of `size` bytes, never NULL when it succeeds.
static void* array(uint64_t n, size_t size) {
    return calloc(n ? (size_t)n : 1, size);
}

// A moment or bucket index read from s, below `limit`.
static uint32_t index_below(mr_varstream* s, uint64_t limit) {
    uint64_t v = mr_varstream_get(s);
    s->r.bad |= v >= limit;
    return s->r.bad ? 0 : (uint32_t)v;
}

static uint32_t u32(mr_varstream* s) {
    uint64_t v = mr_varstream_get(s);
    s->r.bad |= v > UINT32_MAX;
    return (uint32_t)v;
}

// A value or an allocation: its moment (bucket) below `limit`.
static void get_value(mr_varstream* s, uint64_t limit, mr_moment_value* v) {
    v->moment = index_below(s, limit);
    v->callsite = u32(s);
    v->bytes = mr_varstream_get(s);
    v->blocks = mr_varstream_get(s);
}

// n values checked and passed over; false when one is bad.
static bool skip_values(mr_varstream* s, uint64_t n, uint64_t limit) {
    mr_moment_value v;
    for (uint64_t i = 0; i < n && !s->r.bad; i++)
        get_value(s, limit, &v);
    return !s->r.bad;
}

// The moments of bytes [0, len) read through `read`, checked whole (every index, the
// checksum) in one pass; the values and allocations are left where they lie (*at: their
// offsets, then the end of the bytes before the checksum). Returns as mr_moments_decode.
static int decode(mr_varstream_read_fn read, void* ud, size_t len, uint32_t tid, int64_t end,
                  size_t buckets, bool edges, mr_moments* m, size_t at[3], char* why,
                  size_t whylen) {
    *m = (mr_moments){0};
    if (len < 8)
        return mr_varbytes_fail(why, whylen, "checksum mismatch");
    mr_varstream st, *s = &st;
    if (mr_varstream_open(s, read, ud, 0, len - 8, read_window, true, MOM_K0, MOM_K1))
        return -ENOMEM;
    uint64_t stid = mr_varstream_get(s);
    int64_t send = mr_varstream_get_signed(s);
    uint64_t sedges = mr_varstream_get(s);
    m->t0 = mr_varstream_get_signed(s);
    m->width = mr_varstream_get_signed(s);
    uint64_t nb = mr_varstream_get(s), n = mr_varstream_get(s);
    // The query asked (buckets as mr_moments_build bounds them); another one's is not an
    // answer, and the caller computes it anew.
    size_t want = buckets ? buckets : 1;
    if (edges && want > 0xffff)
        want = 0xffff;
    int rc = 0;
    if (s->r.bad || stid != tid || send != end || sedges != edges || nb != want)
        rc = 1;
    else if (!count_ok(s, nb, 1) || !count_ok(s, n, 3) || n == 0)
        rc = -EPROTO;
    m->nbuckets = rc ? 0 : (size_t)nb;
    m->n = rc ? 0 : (size_t)n;
    if (!rc && (!(m->bucket_moment = array(nb, sizeof *m->bucket_moment)) ||
                !(m->seq = array(n, sizeof *m->seq)) || !(m->ts = array(n, sizeof *m->ts)) ||
                !(m->bytes = array(n, sizeof *m->bytes))))
        rc = -ENOMEM;
    for (size_t k = 0; !rc && k < nb; k++)
        m->bucket_moment[k] = index_below(s, n);
    for (size_t k = 0; !rc && k < n; k++) {
        m->seq[k] = mr_varstream_get(s);
        m->ts[k] = mr_varstream_get_signed(s);
        m->bytes[k] = mr_varstream_get(s);
    }
    uint64_t nv = rc ? 0 : mr_varstream_get(s);
    at[0] = mr_varstream_offset(s);
    if (!rc && (!count_ok(s, nv, 4) || !skip_values(s, nv, n)))
        rc = -EPROTO;
    m->nvalues = rc ? 0 : (size_t)nv;
    m->events = rc ? 0 : mr_varstream_get(s);
    at[1] = at[2] = 0;
    if (!rc && edges) {
        if (!(m->edge_moment = array(nb + 1, sizeof *m->edge_moment)))
            rc = -ENOMEM;
        for (size_t k = 0; !rc && k <= nb; k++)
            m->edge_moment[k] = index_below(s, n);
        uint64_t na = rc ? 0 : mr_varstream_get(s);
        at[1] = mr_varstream_offset(s);
        if (!rc && (!count_ok(s, na, 4) || !skip_values(s, na, nb)))
            rc = -EPROTO;
        m->nallocs = rc ? 0 : (size_t)na;
        uint64_t nt = rc ? 0 : mr_varstream_get(s);
        if (!rc && !count_ok(s, nt, 2))
            rc = -EPROTO;
        else if (!rc && (!(m->tids = array(nt, sizeof *m->tids)) ||
                         !(m->tid_allocs = array(nt, sizeof *m->tid_allocs))))
            rc = -ENOMEM;
        m->threads = rc ? 0 : (size_t)nt;
        for (size_t i = 0; !rc && i < nt; i++) {
            m->tids[i] = u32(s);
            m->tid_allocs[i] = mr_varstream_get(s);
        }
        uint64_t ne = rc ? 0 : mr_varstream_get(s);
        if (!rc && !count_ok(s, ne, 5))
            rc = -EPROTO;
        else if (!rc && ne && !(m->ends = array(ne, sizeof *m->ends)))
            rc = -ENOMEM;
        m->nends = rc ? 0 : (size_t)ne;
        for (size_t i = 0; !rc && i < ne; i++) {
            mr_moment_end* e = &m->ends[i];
            e->bucket = index_below(s, nb);
            e->callsite = u32(s);
            e->kind = (int)index_below(s, MT_LEAK_COUNT_);
            e->bytes = mr_varstream_get(s);
            e->blocks = mr_varstream_get(s);
        }
        m->scanned = !rc && mr_varstream_get(s) != 0;
        uint64_t nw = rc ? 0 : mr_varstream_get(s);
        s->r.bad |= nw >= sizeof m->why_unscanned;
        for (size_t i = 0; !rc && !s->r.bad && i < nw; i++)
            m->why_unscanned[i] = (char)index_below(s, 256);
    }
    at[2] = len - 8;
    if (!rc && !mr_varstream_done(s))
        rc = -EPROTO;
    // The checksum decides first: damaged bytes may read as another query or cut short.
    uint64_t sum = 0;
    uint8_t sealed[8];
    int e = rc == -ENOMEM ? 0 : mr_varstream_sum(s, &sum);
    if (!e && rc != -ENOMEM)
        e = read(ud, len - 8, sealed, 8);
    mr_varstream_close(s);
    uint64_t want_sum = 0;
    for (unsigned k = 0; k < 8; k++)
        want_sum |= (uint64_t)sealed[k] << (8 * k);
    if (e)
        rc = mr_varbytes_fail(why, whylen, "unreadable");
    else if (rc != -ENOMEM && sum != want_sum)
        rc = mr_varbytes_fail(why, whylen, "checksum mismatch");
    else if (rc == -EPROTO)
        rc = mr_varbytes_fail(why, whylen, "truncated");
    if (rc)
        mr_moments_free(m);
    return rc;
}

static int read_memory(void* ud, size_t offset, void* buf, size_t n) {
    memcpy(buf, (const uint8_t*)ud + offset, n);
    return 0;
}

static int read_blob(void* ud, size_t offset, void* buf, size_t n) {
    return mt_capture_blob_read(ud, offset, buf, n);
}

// m's values and allocations left where they lie (at: as decode gives them), read through
// (read, ud) by the cursors; the blob (when not NULL) is m's from now on. 0 or -ENOMEM.
static int leave_stored(mr_moments* m, mr_varstream_read_fn read, void* ud, mt_capture_blob* blob,
                        const size_t at[3]) {
    if (!(m->stored = malloc(sizeof *m->stored)))
        return -ENOMEM;
    *m->stored = (struct mr_moments_stored){read, ud, blob, at[0], at[1], at[2]};
    return 0;
}

// Reads every value of a cursor into an array: 0 or a negative errno.
static int read_all(const mr_moments* m, bool allocs, mr_moment_value** out) {
    size_t n = allocs ? m->nallocs : m->nvalues;
    mr_moments_cursor c;
    int e = (*out = array(n, sizeof **out)) ? mr_moments_cursor_open(m, allocs, &c) : -ENOMEM;
    for (size_t i = 0; e == 0 && i < n; i++)
        e = mr_moments_cursor_next(&c, &(*out)[i]) == 1 ? 0 : -EPROTO;
    if (*out)
        mr_moments_cursor_close(&c);
    return e;
}

int mr_moments_decode(const uint8_t* p, size_t len, uint32_t tid, int64_t end, size_t buckets,
                      bool edges, mr_moments* m, char* why, size_t whylen) {
    size_t at[3];
    int rc = decode(read_memory, (void*)p, len, tid, end, buckets, edges, m, at, why, whylen);
    if (rc)
        return rc;
    // In memory already: the arrays, as a replay gives them.
    mr_moment_value *values = NULL, *allocs = NULL;
    if (!(rc = leave_stored(m, read_memory, (void*)p, NULL, at)) &&
        !(rc = read_all(m, false, &values)) && (!edges || !(rc = read_all(m, true, &allocs)))) {
        free(m->stored);
        m->stored = NULL;
        m->values = values;
        m->cap = m->nvalues;
        m->allocs = allocs;
        m->acap = m->nallocs;
        return 0;
    }
    free(values);
    free(allocs);
    mr_moments_free(m);
    return rc == -ENOMEM ? rc : mr_varbytes_fail(why, whylen, "truncated");
}

int mr_moments_cursor_open(const mr_moments* m, bool allocs, mr_moments_cursor* c) {
    *c = (mr_moments_cursor){.n = allocs ? m->nallocs : m->nvalues,
                             .limit = allocs ? m->nbuckets : m->n};
    const struct mr_moments_stored* st = m->stored;
    if (!st) {
        c->v = allocs ? m->allocs : m->values;
        return 0;
    }
    if (!(c->s = malloc(sizeof *c->s)))
        return -ENOMEM;
    int e = mr_varstream_open(c->s, st->read, st->ud, allocs ? st->allocs_at : st->values_at,
                              st->end, read_window, false, 0, 0);
    if (e) {
        free(c->s);
        c->s = NULL;
    }
    return e;
}

int mr_moments_cursor_next(mr_moments_cursor* c, mr_moment_value* v) {
    if (c->i == c->n)
        return 0;
    c->i++;
    if (!c->s) {
        *v = c->v[c->i - 1];
        return 1;
    }
    get_value(c->s, c->limit, v);
    return c->s->r.bad ? (c->s->err ? c->s->err : -EPROTO) : 1;
}

void mr_moments_cursor_close(mr_moments_cursor* c) {
    if (c->s)
        mr_varstream_close(c->s);
    free(c->s);
    c->s = NULL;
}

// Whether stored moments with edges still have the leak scan the capture says it has (the
// ends' kinds come from it).
static bool same_scan(mt_capture* cap, const mr_moments* m) {
    char why[sizeof m->why_unscanned];
    bool scanned = mr_leak_kinds_scan_complete(cap, why, sizeof why);
    return scanned == m->scanned && !strcmp(why, m->why_unscanned);
}

int mr_moments_get(mt_capture* cap, int heap, uint32_t tid, int64_t end, size_t buckets, bool edges,
                   mr_moments* m, char* err, size_t errlen) {
    uint64_t fp = 0;
    bool usable = mr_aggregates_enabled() && mt_capture_aggregate_fingerprint(cap, heap, &fp) == 0;
    int64_t key = mr_moments_key(tid, buckets, edges);
    int64_t format = 0;
    uint64_t stored_fp = 0;
    mt_capture_blob* blob = NULL;
    size_t len = 0;
    int rc = usable ? mt_capture_derived_open(cap, heap, key, &format, &stored_fp, &blob, &len) : 0;
    if (rc == -ENOMEM) {
        snprintf(err, errlen, "out of memory");
        return rc;
    }
    char note[256] = "";
    if (rc == 1 && format == MR_MOMENTS_FORMAT && stored_fp == fp) {
        char why[128];
        size_t at[3];
        rc = decode(read_blob, blob, len, tid, end, buckets, edges, m, at, why, sizeof why);
        if (rc == 0 && edges && !same_scan(cap, m)) {
            mr_moments_free(m);
            rc = 1;
        }
        if (rc == 0 && (rc = leave_stored(m, read_blob, blob, blob, at)) == 0)
            return 0;      // the blob is m's
        if (rc == -EPROTO) // said, then replaced by a replay's
            snprintf(note, sizeof note, "the stored moments are damaged (%s); reading the events",
                     why);
        else if (rc < 0) {
            mt_capture_blob_close(blob);
            mr_moments_free(m);
            snprintf(err, errlen, "out of memory");
            return rc;
        }
    }
    mt_capture_blob_close(blob); // before the row is replaced
    if ((rc = mr_moments_build(cap, heap, tid, end, buckets, edges, m, err, errlen)))
        return rc;
    snprintf(err, errlen, "%s", note);
    if (usable && mt_capture_writable(cap)) {
        // A capture that cannot take them (full disk, locked) is replayed every time.
        uint8_t* data = mr_moments_encode(m, tid, end, edges, &len);
        if (data)
            mt_capture_derived_store(cap, heap, key, MR_MOMENTS_FORMAT, fp, data, len);
        free(data);
    }
    return 0;
}

void mr_moments_free(mr_moments* m) {
    if (m->stored)
        mt_capture_blob_close(m->stored->blob);
    free(m->stored);
    free(m->bucket_moment);
    free(m->seq);
    free(m->ts);
    free(m->bytes);
    free(m->values);
    free(m->edge_moment);
    free(m->allocs);
    free(m->ends);
    free(m->tids);
    free(m->tid_allocs);
    *m = (mr_moments){0};
}
