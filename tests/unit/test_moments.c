// SPDX-License-Identifier: MIT
// Live bytes per callsite at each time bucket's highest moment (reporter/model/moments.h)
// on the standard fixture capture (tests/reports/fixture.c: ts = seq * 1000 ns; live bytes
// after seq 1..14: 1000 1200 1000 5000 5300 10300 10364 5364 5464 4464 4514 4214 4814 4814).
#include "aggregates.h"
#include "heap_timeline.h"
#include "moments.h"
#include "profile.h"

#include "../check.h"
#include "../reports/fixture.h"
#include "../rng.h"
#include "../tmpdir.h"
#include "memtrace/schema.h"

#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { A = 4, B = 5, C = 6, D = 7, E = 8, F = 9 };

// A callsite's value at candidate k: its last change at or before k.
static void value_at(const mr_moments* m, uint32_t cs, uint32_t k, uint64_t* bytes,
                     uint64_t* blocks) {
    *bytes = *blocks = 0;
    for (size_t i = 0; i < m->nvalues && m->values[i].moment <= k; i++)
        if (m->values[i].callsite == cs) {
            *bytes = m->values[i].bytes;
            *blocks = m->values[i].blocks;
        }
}

static void check_value(const mr_moments* m, uint32_t cs, uint32_t k, uint64_t bytes,
                        uint64_t blocks) {
    uint64_t b, n;
    value_at(m, cs, k, &b, &n);
    CHECK_EQ_I64(b, bytes);
    CHECK_EQ_I64(n, blocks);
}

// One event per bucket: a bucket whose event lowers the heap keeps the state carried in.
static void test_one_event_per_bucket(mt_capture* cap) {
    mr_moments m;
    char err[256] = "";
    CHECK_EQ_I64(mr_moments_build(cap, MT_HEAP_LIBC, 0, 14000, 14, false, &m, err, sizeof err), 0);
    static const uint64_t seq[] = {1, 2, 4, 5, 6, 7, 9, 11, 13};
    static const uint64_t bytes[] = {1000, 1200, 5000, 5300, 10300, 10364, 5464, 4514, 4814};
    static const uint32_t bucket[] = {0, 1, 1, 2, 3, 4, 5, 5, 6, 6, 7, 7, 8, 8};
    CHECK_EQ_I64(m.n, 9);
    for (size_t i = 0; i < m.n && i < 9; i++) {
        CHECK_EQ_I64(m.seq[i], seq[i]);
        CHECK_EQ_I64(m.bytes[i], bytes[i]);
        CHECK_EQ_I64(m.ts[i], (int64_t)seq[i] * 1000);
    }
    CHECK_EQ_I64(m.nbuckets, 14);
    for (size_t k = 0; k < 14; k++)
        CHECK_EQ_I64(m.bucket_moment[k], bucket[k]);
    check_value(&m, A, 0, 1000, 1);
    check_value(&m, B, 1, 200, 1);
    check_value(&m, B, 2, 0, 0); // freed at seq 3
    check_value(&m, C, 5, 4000, 1);
    check_value(&m, F, 4, 5000, 1);
    check_value(&m, F, 6, 0, 0);   // freed at seq 8
    check_value(&m, F, 7, 50, 1);  // seq 11
    check_value(&m, D, 5, 300, 1); // at the peak
    check_value(&m, D, 8, 700, 2); // realloc'd to 600, and 100 more
    check_value(&m, A, 8, 0, 0);   // freed at seq 10
    check_value(&m, E, 8, 64, 1);
    // The values at each candidate add up to its live bytes.
    for (uint32_t k = 0; k < m.n; k++) {
        uint64_t sum = 0, b, n;
        for (uint32_t cs = A; cs <= F; cs++) {
            value_at(&m, cs, k, &b, &n);
            sum += b;
        }
        CHECK_EQ_I64(sum, m.bytes[k]);
    }
    mr_moments_free(&m);
}

// Buckets without events: the state carried in, and before any event nothing is live.
static void test_empty_buckets(mt_capture* cap) {
    mr_moments m;
    char err[256] = "";
    CHECK_EQ_I64(mr_moments_build(cap, MT_HEAP_LIBC, 0, 14000, 28, false, &m, err, sizeof err), 0);
    CHECK_EQ_I64(m.width, 501);
    CHECK_EQ_I64(m.seq[m.bucket_moment[0]], 0); // [0, 501): before seq 1
    CHECK_EQ_I64(m.bytes[m.bucket_moment[0]], 0);
    CHECK_EQ_I64(m.seq[m.bucket_moment[1]], 1);   // seq 1 at 1000 us
    CHECK_EQ_I64(m.seq[m.bucket_moment[2]], 1);   // [1002, 1503): carried in
    CHECK_EQ_I64(m.seq[m.bucket_moment[27]], 13); // after the last event
    check_value(&m, C, m.bucket_moment[27], 4000, 1);
    mr_moments_free(&m);
}

static uint32_t next_random(uint64_t* state) {
    return (uint32_t)(test_lcg(state) >> 33);
}

// The live rows after event `seq` (ts = seq * 1000), from a build of their own.
static void live_after(mt_capture* cap, uint64_t seq, mr_profile* p) {
    mr_query q = MR_QUERY_INIT(MT_HEAP_LIBC);
    q.moment = MR_AT_TIME;
    q.at = (int64_t)seq * 1000;
    char err[256] = "";
    CHECK_EQ_I64(mr_profile_build(cap, &q, p, err, sizeof err), 0);
}

// Checks every candidate of `buckets` buckets against builds of their own: each bucket's
// candidate is the first moment of its highest live bytes (the state carried in counts),
// and each callsite's values there are the live ones.
static void check_against_builds(mt_capture* cap, uint64_t nev, const uint64_t* live,
                                 size_t buckets) {
    mr_moments m;
    char err[256] = "";
    int64_t end = (int64_t)nev * 1000;
    CHECK_EQ_I64(mr_moments_build(cap, MT_HEAP_LIBC, 0, end, buckets, false, &m, err, sizeof err),
                 0);
    uint64_t seq = 0; // the last event before the bucket
    for (size_t k = 0; k < m.nbuckets; k++) {
        uint64_t best = seq;
        for (; seq + 1 <= nev && (int64_t)(seq + 1) * 1000 < (int64_t)(k + 1) * m.width; seq++)
            if (live[seq + 1] > live[best])
                best = seq + 1;
        if (k + 1 == m.nbuckets) // the last bucket takes whatever is left
            for (; seq + 1 <= nev; seq++)
                if (live[seq + 1] > live[best])
                    best = seq + 1;
        CHECK_EQ_I64(m.seq[m.bucket_moment[k]], best);
        CHECK_EQ_I64(m.bytes[m.bucket_moment[k]], live[best]);
        CHECK_EQ_I64(m.ts[m.bucket_moment[k]], (int64_t)best * 1000);
    }
    for (uint32_t k = 0; k < m.n; k++) {
        if (k)
            CHECK(m.seq[k] > m.seq[k - 1]);
        mr_profile p = {0};
        if (m.seq[k])
            live_after(cap, m.seq[k], &p);
        for (uint32_t cs = 1; cs <= 6; cs++) {
            uint64_t want = 0, want_blocks = 0;
            for (size_t i = 0; i < p.nrows; i++)
                if (p.rows[i].callsite == cs) {
                    want = p.rows[i].live_bytes;
                    want_blocks = p.rows[i].live_blocks;
                }
            check_value(&m, cs, k, want, want_blocks);
        }
        mr_profile_free(&p);
    }
    mr_moments_free(&m);
}

// The ends of the buckets from..to-1, per callsite 1..6: the blocks allocated in them still
// live at the end, against the profile's (range_blocks) of their span.
static void check_ends(mt_capture* cap, const mr_moments* m, uint32_t tid, size_t from, size_t to) {
    mr_query q = MR_QUERY_INIT(MT_HEAP_LIBC);
    q.moment = MR_AT_END;
    q.tid = tid;
    q.range_blocks = true;
    q.from = (int64_t)from * m->width;
    q.to = (int64_t)to * m->width - 1;
    mr_profile p;
    char err[256] = "";
    CHECK_EQ_I64(mr_profile_build(cap, &q, &p, err, sizeof err), 0);
    for (uint32_t cs = 1; cs <= 6; cs++) {
        uint64_t want = 0, want_blocks = 0, got = 0, got_blocks = 0;
        for (size_t i = 0; i < p.nrows; i++)
            if (p.rows[i].callsite == cs) {
                want = p.rows[i].end_bytes;
                want_blocks = p.rows[i].end_blocks;
            }
        for (size_t i = 0; i < m->nends; i++)
            if (m->ends[i].callsite == cs && m->ends[i].bucket >= from && m->ends[i].bucket < to) {
                got += m->ends[i].bytes;
                got_blocks += m->ends[i].blocks;
            }
        CHECK_EQ_I64(got, want);
        CHECK_EQ_I64(got_blocks, want_blocks);
    }
    mr_profile_free(&p);
}

// With edges: the candidates stay those without; each edge's values are the live ones at
// its time less 1 ns (the end of the bucket before it, as memreport --at reads it), each
// bucket's allocations per callsite are the range's of its span, and the ends those of
// profile's range_blocks. With tid, all of it of that thread's blocks (top --thread).
static void check_edges(mt_capture* cap, uint64_t nev, size_t buckets, uint32_t tid) {
    mr_moments m, plain;
    char err[256] = "";
    int64_t end = (int64_t)nev * 1000;
    CHECK_EQ_I64(mr_moments_build(cap, MT_HEAP_LIBC, tid, end, buckets, true, &m, err, sizeof err),
                 0);
    CHECK_EQ_I64(
        mr_moments_build(cap, MT_HEAP_LIBC, 0, end, buckets, false, &plain, err, sizeof err), 0);
    for (size_t k = 0; k < m.nbuckets; k++) {
        CHECK_EQ_I64(m.seq[m.bucket_moment[k]], plain.seq[plain.bucket_moment[k]]);
        CHECK_EQ_I64(m.bytes[m.bucket_moment[k]], plain.bytes[plain.bucket_moment[k]]);
    }
    CHECK_EQ_I64(m.seq[m.edge_moment[0]], 0);
    for (size_t k = 1; k <= m.nbuckets; k++) {
        mr_query q = MR_QUERY_INIT(MT_HEAP_LIBC);
        q.moment = MR_AT_TIME;
        q.at = (int64_t)k * m.width - 1;
        q.from = (int64_t)(k - 1) * m.width;
        q.to = q.at;
        q.tid = tid;
        mr_profile p;
        CHECK_EQ_I64(mr_profile_build(cap, &q, &p, err, sizeof err), 0);
        if (!tid) // with a thread, the moments' bytes stay the whole heap's
            CHECK_EQ_I64(m.bytes[m.edge_moment[k]], p.live_bytes);
        for (uint32_t cs = 1; cs <= 6; cs++) {
            uint64_t live = 0, live_blocks = 0, alloc = 0, count = 0, got = 0, got_count = 0;
            for (size_t i = 0; i < p.nrows; i++)
                if (p.rows[i].callsite == cs) {
                    live = p.rows[i].live_bytes;
                    live_blocks = p.rows[i].live_blocks;
                    alloc = p.rows[i].alloc_bytes;
                    count = p.rows[i].alloc_count;
                }
            check_value(&m, cs, m.edge_moment[k], live, live_blocks);
            for (size_t i = 0; i < m.nallocs; i++)
                if (m.allocs[i].moment == k - 1 && m.allocs[i].callsite == cs) {
                    got += m.allocs[i].bytes;
                    got_count += m.allocs[i].blocks;
                }
            CHECK_EQ_I64(got, alloc);
            CHECK_EQ_I64(got_count, count);
        }
        mr_profile_free(&p);
    }
    for (size_t i = 1; i < m.nallocs; i++)
        CHECK(m.allocs[i].moment >= m.allocs[i - 1].moment);
    check_ends(cap, &m, tid, 0, m.nbuckets);
    check_ends(cap, &m, tid, m.nbuckets / 3, m.nbuckets / 3 + 1 + m.nbuckets / 2);
    mr_moments_free(&m);
    mr_moments_free(&plain);
}

// The values (allocs: the allocations) of two moments, however each holds them, equal.
static void check_same_values(const mr_moments* a, const mr_moments* b, bool allocs) {
    mr_moments_cursor x, y;
    CHECK_EQ_I64(mr_moments_cursor_open(a, allocs, &x), 0);
    CHECK_EQ_I64(mr_moments_cursor_open(b, allocs, &y), 0);
    mr_moment_value u, v;
    int more;
    size_t n = 0;
    while ((more = mr_moments_cursor_next(&x, &u)) == 1) {
        CHECK_EQ_I64(mr_moments_cursor_next(&y, &v), 1);
        CHECK(!memcmp(&u, &v, sizeof u));
        n++;
    }
    CHECK_EQ_I64(more, 0);
    CHECK_EQ_I64(mr_moments_cursor_next(&y, &v), 0);
    CHECK_EQ_I64(n, allocs ? a->nallocs : a->nvalues);
    mr_moments_cursor_close(&x);
    mr_moments_cursor_close(&y);
}

// Two moments equal in every field.
static void check_same(const mr_moments* a, const mr_moments* b, bool edges) {
    CHECK_EQ_I64(a->t0, b->t0);
    CHECK_EQ_I64(a->width, b->width);
    CHECK_EQ_I64(a->nbuckets, b->nbuckets);
    CHECK_EQ_I64(a->n, b->n);
    CHECK_EQ_I64(a->nvalues, b->nvalues);
    CHECK_EQ_I64(a->events, b->events);
    if (a->nbuckets != b->nbuckets || a->n != b->n || a->nvalues != b->nvalues)
        return;
    for (size_t k = 0; k < a->nbuckets; k++)
        CHECK_EQ_I64(a->bucket_moment[k], b->bucket_moment[k]);
    for (size_t k = 0; k < a->n; k++) {
        CHECK_EQ_I64(a->seq[k], b->seq[k]);
        CHECK_EQ_I64(a->ts[k], b->ts[k]);
        CHECK_EQ_I64(a->bytes[k], b->bytes[k]);
    }
    check_same_values(a, b, false);
    CHECK_EQ_I64(!!a->edge_moment, edges);
    CHECK_EQ_I64(!!b->edge_moment, edges);
    if (!edges || !a->edge_moment || !b->edge_moment)
        return;
    for (size_t k = 0; k <= a->nbuckets; k++)
        CHECK_EQ_I64(a->edge_moment[k], b->edge_moment[k]);
    CHECK_EQ_I64(a->nallocs, b->nallocs);
    CHECK_EQ_I64(a->threads, b->threads);
    CHECK_EQ_I64(a->nends, b->nends);
    if (a->nallocs == b->nallocs)
        check_same_values(a, b, true);
    if (a->threads == b->threads) {
        CHECK(!memcmp(a->tids, b->tids, a->threads * sizeof *a->tids));
        CHECK(!memcmp(a->tid_allocs, b->tid_allocs, a->threads * sizeof *a->tid_allocs));
    }
    for (size_t i = 0; a->nends == b->nends && i < a->nends; i++) {
        CHECK_EQ_I64(a->ends[i].bucket, b->ends[i].bucket);
        CHECK_EQ_I64(a->ends[i].callsite, b->ends[i].callsite);
        CHECK_EQ_I64(a->ends[i].kind, b->ends[i].kind);
        CHECK_EQ_I64(a->ends[i].bytes, b->ends[i].bytes);
        CHECK_EQ_I64(a->ends[i].blocks, b->ends[i].blocks);
    }
    CHECK_EQ_I64(a->scanned, b->scanned);
    CHECK_EQ_STR(a->why_unscanned, b->why_unscanned);
}

// Stored moments (mr_moments_get) against a replay's (mr_moments_build) for one query: the
// first get computes and stores them, the second reads them; both equal the replay's. A
// stored answer with other numbers (sealed anew) is what a get reads, and what --replay
// (mr_aggregates_enable(false)) does not; a damaged one is said and replaced.
static void check_stored(mt_capture* cap, int64_t end, uint32_t tid, size_t buckets, bool edges) {
    mr_moments truth, m;
    char err[256] = "";
    CHECK_EQ_I64(
        mr_moments_build(cap, MT_HEAP_LIBC, tid, end, buckets, edges, &truth, err, sizeof err), 0);
    for (int pass = 0; pass < 2; pass++) {
        CHECK_EQ_I64(
            mr_moments_get(cap, MT_HEAP_LIBC, tid, end, buckets, edges, &m, err, sizeof err), 0);
        CHECK_EQ_STR(err, "");
        check_same(&truth, &m, edges);
        // Read back, the values and allocations stay where they are stored: a view's 100 M
        // events store tens of MB of them, read a window at a time.
        if (pass == 1) {
            CHECK(m.stored != NULL);
            CHECK_NULL(m.values);
            CHECK_NULL(m.allocs);
        }
        mr_moments_free(&m);
    }
    uint8_t* data;
    size_t len;
    int64_t key = mr_moments_key(tid, buckets, edges), format;
    // Read back, then the row replaced under it: its cursors say so, never read the new one.
    CHECK_EQ_I64(mr_moments_get(cap, MT_HEAP_LIBC, tid, end, buckets, edges, &m, err, sizeof err),
                 0);
    CHECK_EQ_I64(mt_capture_derived_store(cap, MT_HEAP_LIBC, key, MR_MOMENTS_FORMAT, 0, "x", 1), 0);
    mr_moments_cursor c;
    mr_moment_value v;
    CHECK_EQ_I64(mr_moments_cursor_open(&m, false, &c), 0);
    CHECK(mr_moments_cursor_next(&c, &v) < 0);
    mr_moments_cursor_close(&c);
    mr_moments_free(&m);
    CHECK_EQ_I64(mr_moments_get(cap, MT_HEAP_LIBC, tid, end, buckets, edges, &m, err, sizeof err),
                 0); // another fingerprint: computed and stored again
    check_same(&truth, &m, edges);
    mr_moments_free(&m);
    uint64_t fp, stored_fp;
    CHECK_EQ_I64(mt_capture_aggregate_fingerprint(cap, MT_HEAP_LIBC, &fp), 0);
    CHECK_EQ_I64(mt_capture_derived_read(cap, MT_HEAP_LIBC, key, &format, &stored_fp, &data, &len),
                 1);
    CHECK_EQ_I64(format, MR_MOMENTS_FORMAT);
    CHECK_EQ_I64(stored_fp, fp);
    // Forged: one candidate's bytes higher, sealed.
    mr_moments forged;
    CHECK_EQ_I64(mr_moments_decode(data, len, tid, end, buckets, edges, &forged, err, sizeof err),
                 0);
    forged.bytes[0]++;
    size_t flen;
    uint8_t* f = mr_moments_encode(&forged, tid, end, edges, &flen);
    CHECK(f != NULL);
    CHECK_EQ_I64(mt_capture_derived_store(cap, MT_HEAP_LIBC, key, MR_MOMENTS_FORMAT, fp, f, flen),
                 0);
    CHECK_EQ_I64(mr_moments_get(cap, MT_HEAP_LIBC, tid, end, buckets, edges, &m, err, sizeof err),
                 0);
    check_same(&forged, &m, edges);
    mr_moments_free(&m);
    mr_aggregates_enable(false);
    CHECK_EQ_I64(mr_moments_get(cap, MT_HEAP_LIBC, tid, end, buckets, edges, &m, err, sizeof err),
                 0);
    mr_aggregates_enable(true);
    check_same(&truth, &m, edges);
    mr_moments_free(&m);
    // Another query's answer under this key: computed anew.
    CHECK_EQ_I64(
        mt_capture_derived_store(cap, MT_HEAP_LIBC, key, MR_MOMENTS_FORMAT, fp + 1, f, flen), 0);
    CHECK_EQ_I64(mr_moments_get(cap, MT_HEAP_LIBC, tid, end, buckets, edges, &m, err, sizeof err),
                 0);
    check_same(&truth, &m, edges);
    mr_moments_free(&m);
    free(f);
    mr_moments_free(&forged);
    // Damaged: a byte flipped, the checksum fails.
    data[len / 2] ^= 0x40;
    CHECK_EQ_I64(mt_capture_derived_store(cap, MT_HEAP_LIBC, key, MR_MOMENTS_FORMAT, fp, data, len),
                 0);
    CHECK_EQ_I64(mr_moments_get(cap, MT_HEAP_LIBC, tid, end, buckets, edges, &m, err, sizeof err),
                 0);
    CHECK_EQ_STR(err, "the stored moments are damaged (checksum mismatch); reading the events");
    check_same(&truth, &m, edges);
    mr_moments_free(&m);
    err[0] = 0;
    CHECK_EQ_I64(mr_moments_get(cap, MT_HEAP_LIBC, tid, end, buckets, edges, &m, err, sizeof err),
                 0);
    CHECK_EQ_STR(err, ""); // replaced by the replay's
    check_same(&truth, &m, edges);
    mr_moments_free(&m);
    free(data);
    mr_moments_free(&truth);
}

static void check_same_heap(const mr_heap_timeline* a, const mr_heap_timeline* b) {
    CHECK_EQ_I64(a->peak, b->peak);
    CHECK_EQ_I64(a->peak_ts, b->peak_ts);
    CHECK_EQ_I64(a->heap.n, b->heap.n);
    if (a->heap.n == b->heap.n)
        CHECK(!memcmp(a->heap.v, b->heap.v, a->heap.n * sizeof *a->heap.v));
}

// The heap timeline's series stored (heap_timeline.h) against a replay's, as check_stored.
static void check_timeline(mt_capture* cap, int64_t buckets) {
    mr_timeline_opts o = {.buckets = buckets};
    mr_heap_timeline truth, t;
    char msg[256];
    mr_aggregates_enable(false);
    CHECK_EQ_I64(mr_heap_timeline_build(cap, &o, &truth, msg, sizeof msg), 0);
    mr_aggregates_enable(true);
    CHECK_EQ_STR(msg, "");
    int64_t width = truth.duration / buckets + 1;
    int64_t key = mr_heap_timeline_key(0, width), format;
    uint64_t fp, stored_fp;
    CHECK_EQ_I64(mt_capture_aggregate_fingerprint(cap, MT_HEAP_LIBC, &fp), 0);
    uint8_t* data = NULL;
    size_t len;
    for (int pass = 0; pass < 2; pass++) {
        CHECK_EQ_I64(mr_heap_timeline_build(cap, &o, &t, msg, sizeof msg), 0);
        CHECK_EQ_STR(msg, "");
        check_same_heap(&truth, &t);
        mr_heap_timeline_free(&t);
        free(data);
        CHECK_EQ_I64(
            mt_capture_derived_read(cap, MT_HEAP_LIBC, key, &format, &stored_fp, &data, &len), 1);
        CHECK_EQ_I64(stored_fp, fp);
    }
    // Forged: the peak higher, sealed anew: read as stored, not under --replay.
    truth.peak++;
    size_t flen;
    uint8_t* f = mr_heap_timeline_encode(&truth, 0, width, &flen);
    CHECK(f != NULL);
    CHECK_EQ_I64(
        mt_capture_derived_store(cap, MT_HEAP_LIBC, key, MR_HEAP_TIMELINE_FORMAT, fp, f, flen), 0);
    free(f);
    CHECK_EQ_I64(mr_heap_timeline_build(cap, &o, &t, msg, sizeof msg), 0);
    check_same_heap(&truth, &t);
    mr_heap_timeline_free(&t);
    truth.peak--;
    mr_aggregates_enable(false);
    CHECK_EQ_I64(mr_heap_timeline_build(cap, &o, &t, msg, sizeof msg), 0);
    mr_aggregates_enable(true);
    check_same_heap(&truth, &t);
    mr_heap_timeline_free(&t);
    // Damaged: said, replaced.
    data[len / 2] ^= 0x40;
    CHECK_EQ_I64(
        mt_capture_derived_store(cap, MT_HEAP_LIBC, key, MR_HEAP_TIMELINE_FORMAT, fp, data, len),
        0);
    CHECK_EQ_I64(mr_heap_timeline_build(cap, &o, &t, msg, sizeof msg), 0);
    CHECK_EQ_STR(msg, "the stored timeline is damaged (checksum mismatch); reading the events");
    check_same_heap(&truth, &t);
    mr_heap_timeline_free(&t);
    CHECK_EQ_I64(mr_heap_timeline_build(cap, &o, &t, msg, sizeof msg), 0);
    CHECK_EQ_STR(msg, "");
    check_same_heap(&truth, &t);
    mr_heap_timeline_free(&t);
    free(data);
    mr_heap_timeline_free(&truth);
}

// Random streams (allocations, frees, reallocs, addresses allocated twice, frees of
// nothing known) on 3 threads and 6 callsites, cut into few, some and more buckets than
// events.
static void test_random(void) {
    for (uint64_t seed = 1; seed <= 12; seed++) {
        uint64_t rnd = seed;
        // Stored moments read in windows of 16 bytes (every value straddles one), 40, and
        // the default.
        mr_moments_read_window(seed % 3 == 0 ? 16 : seed % 3 == 1 ? 40 : 0);
        char path[512];
        snprintf(path, sizeof path, "%s/moments%llu.db", test_tmpdir(), (unsigned long long)seed);
        fx f;
        fx_open(&f, path);
        uint64_t addrs[64], next_addr = 0x10000;
        size_t nlive = 0, nev = 50 + next_random(&rnd) % 200;
        for (size_t e = 0; e < nev; e++) {
            uint32_t tid = 100 * (1 + next_random(&rnd) % 3), what = next_random(&rnd) % 10;
            uint32_t cs = 1 + next_random(&rnd) % 6;
            uint64_t size = 1 + next_random(&rnd) % 1000;
            if (nlive && what < 4) {
                size_t i = next_random(&rnd) % nlive;
                fx_free(&f, tid, addrs[i]);
                addrs[i] = addrs[--nlive];
            } else if (nlive && what == 4) {
                size_t i = next_random(&rnd) % nlive;
                fx_event(&f, MT_KIND_REALLOC_FREE, tid, addrs[i], 0, cs);
                addrs[i] = next_addr += 0x100;
                fx_event(&f, MT_KIND_REALLOC, tid, addrs[i], size, cs);
            } else if (nlive && what == 5) {
                fx_alloc(&f, tid, addrs[next_random(&rnd) % nlive], size, cs);
            } else if (what == 6) {
                fx_free(&f, tid, 0xdead0000);
            } else if (nlive < 64) {
                fx_alloc(&f, tid, addrs[nlive++] = next_addr += 0x100, size, cs);
            }
        }
        uint64_t events = f.seq;
        fx_finish(&f, "complete");
        if (seed % 2 == 0) // verdicts of every kind, for the ends' kinds
            fx_leak_verdicts(path);
        mt_capture* cap;
        char err[256];
        CHECK_EQ_I64(mt_capture_open(path, &cap, err, sizeof err), 0);
        uint64_t* live = calloc(events + 1, sizeof *live); // after each seq
        for (uint64_t seq = 1; seq <= events; seq++) {
            mr_profile p;
            live_after(cap, seq, &p);
            live[seq] = p.live_bytes;
            mr_profile_free(&p);
        }
        static const size_t buckets[] = {1, 3, 17, 100, 1000};
        for (size_t b = 0; b < sizeof buckets / sizeof *buckets; b++)
            check_against_builds(cap, events, live, buckets[b]);
        for (size_t b = 0; b < sizeof buckets / sizeof *buckets; b++)
            check_edges(cap, events, buckets[b], b == 2 ? 200 : 0);
        for (size_t b = 0; b < sizeof buckets / sizeof *buckets; b++)
            for (int edges = 0; edges < 2; edges++)
                check_stored(cap, (int64_t)events * 1000, b == 2 ? 200 : 0, buckets[b], edges);
        for (size_t b = 0; b < sizeof buckets / sizeof *buckets; b++)
            check_timeline(cap, (int64_t)buckets[b]);
        free(live);
        mt_capture_close(cap);
    }
}

int main(void) {
    char path[512];
    snprintf(path, sizeof path, "%s/standard.db", test_tmpdir());
    fx_standard(path);
    mt_capture* cap;
    char err[256];
    CHECK_EQ_I64(mt_capture_open(path, &cap, err, sizeof err), 0);
    test_one_event_per_bucket(cap);
    test_empty_buckets(cap);
    mt_capture_close(cap);
    test_random();
    CHECK_DONE();
}
