// SPDX-License-Identifier: MIT
// The moments of a heap (moments.h) stored in the capture when first computed, in table
// `derived` under the fingerprint of the events (docs/capture-format.md, "Derived"), and
// read back instead of replaying every event.
#include "aggregates.h"
#include "leak_kinds.h"
#include "moments.h"
#include "varbytes.h"

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
    for (size_t i = 0; i < m->nvalues; i++) {
        const mr_moment_value* v = &m->values[i];
        mr_varbytes_put(&b, v->moment);
        mr_varbytes_put(&b, v->callsite);
        mr_varbytes_put(&b, v->bytes);
        mr_varbytes_put(&b, v->blocks);
    }
    mr_varbytes_put(&b, m->events);
    if (edges) {
        for (size_t k = 0; k <= m->nbuckets; k++)
            mr_varbytes_put(&b, m->edge_moment[k]);
        mr_varbytes_put(&b, m->nallocs);
        for (size_t i = 0; i < m->nallocs; i++) {
            const mr_moment_value* v = &m->allocs[i];
            mr_varbytes_put(&b, v->moment);
            mr_varbytes_put(&b, v->callsite);
            mr_varbytes_put(&b, v->bytes);
            mr_varbytes_put(&b, v->blocks);
        }
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

// A count of items of at least `least` bytes each, refused when beyond what is left.
static bool count_ok(const mr_varreader* r, uint64_t n, size_t least) {
    return !r->bad && n <= (size_t)(r->end - r->p) / least;
}

// An array of n items of `size` bytes, never NULL when it succeeds.
static void* array(uint64_t n, size_t size) {
    return calloc(n ? (size_t)n : 1, size);
}

// A moment or bucket index read from r, below `limit`.
static uint32_t index_below(mr_varreader* r, uint64_t limit) {
    uint64_t v = mr_varbytes_get(r);
    r->bad |= v >= limit;
    return r->bad ? 0 : (uint32_t)v;
}

static uint32_t u32(mr_varreader* r) {
    uint64_t v = mr_varbytes_get(r);
    r->bad |= v > UINT32_MAX;
    return (uint32_t)v;
}

int mr_moments_decode(const uint8_t* p, size_t len, uint32_t tid, int64_t end, size_t buckets,
                      bool edges, mr_moments* m, char* why, size_t whylen) {
    *m = (mr_moments){0};
    mr_varreader r;
    if (!mr_varbytes_open(p, len, MOM_K0, MOM_K1, &r))
        return mr_varbytes_fail(why, whylen, "checksum mismatch");
    uint64_t stid = mr_varbytes_get(&r);
    int64_t send = mr_varbytes_get_signed(&r);
    uint64_t sedges = mr_varbytes_get(&r);
    m->t0 = mr_varbytes_get_signed(&r);
    m->width = mr_varbytes_get_signed(&r);
    uint64_t nb = mr_varbytes_get(&r), n = mr_varbytes_get(&r);
    // The query asked (buckets as mr_moments_build bounds them); another one's is not an
    // answer, and the caller computes it anew.
    size_t want = buckets ? buckets : 1;
    if (edges && want > 0xffff)
        want = 0xffff;
    if (r.bad || stid != tid || send != end || sedges != edges || nb != want)
        return 1;
    if (!count_ok(&r, nb, 1) || !count_ok(&r, n, 3) || n == 0)
        return mr_varbytes_fail(why, whylen, "truncated");
    m->nbuckets = (size_t)nb;
    m->n = (size_t)n;
    int rc = 0;
    if (!(m->bucket_moment = array(nb, sizeof *m->bucket_moment)) ||
        !(m->seq = array(n, sizeof *m->seq)) || !(m->ts = array(n, sizeof *m->ts)) ||
        !(m->bytes = array(n, sizeof *m->bytes)))
        rc = -ENOMEM;
    for (size_t k = 0; !rc && k < nb; k++)
        m->bucket_moment[k] = index_below(&r, n);
    for (size_t k = 0; !rc && k < n; k++) {
        m->seq[k] = mr_varbytes_get(&r);
        m->ts[k] = mr_varbytes_get_signed(&r);
        m->bytes[k] = mr_varbytes_get(&r);
    }
    uint64_t nv = rc ? 0 : mr_varbytes_get(&r);
    if (!rc && !count_ok(&r, nv, 4))
        rc = mr_varbytes_fail(why, whylen, "truncated");
    else if (!rc && !(m->values = array(nv, sizeof *m->values)))
        rc = -ENOMEM;
    m->nvalues = m->cap = rc ? 0 : (size_t)nv;
    for (size_t i = 0; !rc && i < nv; i++) {
        mr_moment_value* v = &m->values[i];
        v->moment = index_below(&r, n);
        v->callsite = u32(&r);
        v->bytes = mr_varbytes_get(&r);
        v->blocks = mr_varbytes_get(&r);
    }
    m->events = rc ? 0 : mr_varbytes_get(&r);
    if (!rc && edges) {
        if (!(m->edge_moment = array(nb + 1, sizeof *m->edge_moment)))
            rc = -ENOMEM;
        for (size_t k = 0; !rc && k <= nb; k++)
            m->edge_moment[k] = index_below(&r, n);
        uint64_t na = rc ? 0 : mr_varbytes_get(&r);
        if (!rc && !count_ok(&r, na, 4))
            rc = mr_varbytes_fail(why, whylen, "truncated");
        else if (!rc && na && !(m->allocs = array(na, sizeof *m->allocs)))
            rc = -ENOMEM;
        m->nallocs = m->acap = rc ? 0 : (size_t)na;
        for (size_t i = 0; !rc && i < na; i++) {
            mr_moment_value* v = &m->allocs[i];
            v->moment = index_below(&r, nb);
            v->callsite = u32(&r);
            v->bytes = mr_varbytes_get(&r);
            v->blocks = mr_varbytes_get(&r);
        }
        uint64_t nt = rc ? 0 : mr_varbytes_get(&r);
        if (!rc && !count_ok(&r, nt, 2))
            rc = mr_varbytes_fail(why, whylen, "truncated");
        else if (!rc && (!(m->tids = array(nt, sizeof *m->tids)) ||
                         !(m->tid_allocs = array(nt, sizeof *m->tid_allocs))))
            rc = -ENOMEM;
        m->threads = rc ? 0 : (size_t)nt;
        for (size_t i = 0; !rc && i < nt; i++) {
            m->tids[i] = u32(&r);
            m->tid_allocs[i] = mr_varbytes_get(&r);
        }
        uint64_t ne = rc ? 0 : mr_varbytes_get(&r);
        if (!rc && !count_ok(&r, ne, 5))
            rc = mr_varbytes_fail(why, whylen, "truncated");
        else if (!rc && ne && !(m->ends = array(ne, sizeof *m->ends)))
            rc = -ENOMEM;
        m->nends = rc ? 0 : (size_t)ne;
        for (size_t i = 0; !rc && i < ne; i++) {
            mr_moment_end* e = &m->ends[i];
            e->bucket = index_below(&r, nb);
            e->callsite = u32(&r);
            e->kind = (int)index_below(&r, MT_LEAK_COUNT_);
            e->bytes = mr_varbytes_get(&r);
            e->blocks = mr_varbytes_get(&r);
        }
        m->scanned = !rc && mr_varbytes_get(&r) != 0;
        uint64_t nw = rc ? 0 : mr_varbytes_get(&r);
        r.bad |= nw >= sizeof m->why_unscanned;
        for (size_t i = 0; !rc && !r.bad && i < nw; i++)
            m->why_unscanned[i] = (char)index_below(&r, 256);
    }
    if (!rc && (r.bad || r.p != r.end))
        rc = mr_varbytes_fail(why, whylen, "truncated");
    if (rc)
        mr_moments_free(m);
    return rc;
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
    uint8_t* data = NULL;
    size_t len = 0;
    int rc = usable ? mt_capture_derived_read(cap, heap, key, &format, &stored_fp, &data, &len) : 0;
    if (rc < 0) {
        snprintf(err, errlen, "out of memory");
        return rc;
    }
    char note[256] = "";
    if (rc == 1 && format == MR_MOMENTS_FORMAT && stored_fp == fp) {
        char why[128];
        rc = mr_moments_decode(data, len, tid, end, buckets, edges, m, why, sizeof why);
        if (rc == 0 && edges && !same_scan(cap, m)) {
            mr_moments_free(m);
            rc = 1;
        }
        if (rc == -EPROTO) // said, then replaced by a replay's
            snprintf(note, sizeof note, "the stored moments are damaged (%s); reading the events",
                     why);
        else if (rc <= 0) {
            free(data);
            if (rc)
                snprintf(err, errlen, "out of memory");
            return rc;
        }
    }
    free(data);
    if ((rc = mr_moments_build(cap, heap, tid, end, buckets, edges, m, err, errlen)))
        return rc;
    snprintf(err, errlen, "%s", note);
    if (usable && mt_capture_writable(cap)) {
        // A capture that cannot take them (full disk, locked) is replayed every time.
        data = mr_moments_encode(m, tid, end, edges, &len);
        if (data)
            mt_capture_derived_store(cap, heap, key, MR_MOMENTS_FORMAT, fp, data, len);
        free(data);
    }
    return 0;
}
