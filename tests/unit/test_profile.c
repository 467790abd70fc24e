// SPDX-License-Identifier: MIT
// The aggregation model (reporter/model/profile.h) on the standard fixture capture, whose
// events and truth are listed in tests/reports/fixture.c (ts = seq * 1000 ns).
#include "profile.h"

#include "../check.h"
#include "../reports/fixture.h"
#include "../rng.h"
#include "../tmpdir.h"
#include "memtrace/schema.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>

enum { A = 4, B = 5, C = 6, D = 7, E = 8, F = 9 };

static const mr_profile_row* find(const mr_profile* p, uint32_t callsite, uint32_t tid) {
    for (size_t i = 0; i < p->nrows; i++)
        if (p->rows[i].callsite == callsite && p->rows[i].tid == tid)
            return &p->rows[i];
    return NULL;
}

static void check_row(const mr_profile* p, uint32_t callsite, uint32_t tid, uint64_t live,
                      uint64_t blocks, uint64_t alloc, uint64_t count) {
    const mr_profile_row* r = find(p, callsite, tid);
    CHECK(r != NULL);
    if (!r)
        return;
    CHECK_EQ_I64(r->live_bytes, live);
    CHECK_EQ_I64(r->live_blocks, blocks);
    CHECK_EQ_I64(r->alloc_bytes, alloc);
    CHECK_EQ_I64(r->alloc_count, count);
}

static void build(mt_capture* cap, const mr_query* q, mr_profile* p) {
    char err[256] = "";
    int rc = mr_profile_build(cap, q, p, err, sizeof err);
    if (rc)
        fprintf(stderr, "mr_profile_build: %s\n", err);
    CHECK_EQ_I64(rc, 0);
}

// The peak (seq 7): A 1000, C 4000, D 300, E 64, F 5000; allocations of the whole run.
static void test_peak(mt_capture* cap) {
    mr_query q = MR_QUERY_INIT(MT_HEAP_LIBC);
    mr_profile p;
    build(cap, &q, &p);
    CHECK_EQ_I64(p.moment_seq, 7);
    CHECK_EQ_I64(p.moment_ts, 7000);
    CHECK_EQ_I64(p.live_bytes, 10364);
    CHECK_EQ_I64(p.live_blocks, 5);
    CHECK_EQ_I64(p.peak_bytes, 10364);
    CHECK_EQ_I64(p.peak_seq, 7);
    CHECK_EQ_I64(p.events, 14);
    CHECK_EQ_I64(p.alloc_bytes, 11314);
    CHECK_EQ_I64(p.alloc_count, 9);
    CHECK_EQ_I64(p.nrows, 6);
    check_row(&p, A, 0, 1000, 1, 1000, 1);
    check_row(&p, B, 0, 0, 0, 200, 1);
    check_row(&p, C, 0, 4000, 1, 4000, 1);
    check_row(&p, D, 0, 300, 1, 1000, 3); // 300, 100, then realloc to 600
    check_row(&p, E, 0, 64, 1, 64, 1);
    check_row(&p, F, 0, 5000, 1, 5050, 2);
    for (size_t i = 1; i < p.nrows; i++)
        CHECK(p.rows[i - 1].callsite < p.rows[i].callsite);
    // Still live at the end, whatever the moment: C 4000, D 700 in 2, E 64, F 50.
    CHECK_EQ_I64(p.end_bytes, 4814);
    CHECK_EQ_I64(p.end_blocks, 5);
    const mr_profile_row* d = find(&p, D, 0);
    CHECK(d && d->end_bytes == 700 && d->end_blocks == 2);
    const mr_profile_row* a = find(&p, A, 0);
    CHECK(a && a->end_bytes == 0 && a->end_blocks == 0);
    CHECK_EQ_I64(mr_profile_row_value(d, MR_METRIC_END_BYTES), 700);
    CHECK_EQ_I64(mr_profile_row_value(d, MR_METRIC_END_BLOCKS), 2);
    mr_profile_free(&p);
}

// The end: C 4000, D 700 (2 blocks), E 64, F 50 = 4814 in 5 blocks.
static void test_end(mt_capture* cap) {
    mr_query q = MR_QUERY_INIT(MT_HEAP_LIBC);
    q.moment = MR_AT_END;
    mr_profile p;
    build(cap, &q, &p);
    CHECK_EQ_I64(p.live_bytes, 4814);
    CHECK_EQ_I64(p.live_blocks, 5);
    CHECK_EQ_I64(p.moment_seq, 14);
    check_row(&p, A, 0, 0, 0, 1000, 1);
    check_row(&p, D, 0, 700, 2, 1000, 3);
    check_row(&p, F, 0, 50, 1, 5050, 2);
    mr_profile_free(&p);
}

// At 6.5 us, after seq 6: A 1000, C 4000, D 300, F 5000. Before the first event: nothing.
static void test_time(mt_capture* cap) {
    mr_query q = MR_QUERY_INIT(MT_HEAP_LIBC);
    q.moment = MR_AT_TIME;
    q.at = 6500;
    mr_profile p;
    build(cap, &q, &p);
    CHECK_EQ_I64(p.moment_seq, 6);
    CHECK_EQ_I64(p.moment_ts, 6500);
    CHECK_EQ_I64(p.live_bytes, 10300);
    CHECK_EQ_I64(p.live_blocks, 4);
    CHECK(find(&p, E, 0) != NULL); // allocated later, so a row with live 0
    check_row(&p, E, 0, 0, 0, 64, 1);
    mr_profile_free(&p);

    // After seq 9: rows that change later keep their value then (D 400 in 2 blocks before
    // its realloc, F 0 before its second allocation, A 1000 before its free).
    q.at = 9000;
    build(cap, &q, &p);
    CHECK_EQ_I64(p.moment_seq, 9);
    CHECK_EQ_I64(p.live_bytes, 5464);
    CHECK_EQ_I64(p.live_blocks, 5);
    check_row(&p, D, 0, 400, 2, 1000, 3);
    check_row(&p, A, 0, 1000, 1, 1000, 1);
    check_row(&p, F, 0, 0, 0, 5050, 2);
    mr_profile_free(&p);

    q.at = 500;
    build(cap, &q, &p);
    CHECK_EQ_I64(p.moment_seq, 0);
    CHECK_EQ_I64(p.live_bytes, 0);
    CHECK_EQ_I64(p.alloc_count, 9);
    mr_profile_free(&p);
}

// Thread 200 alone at the end: F's 50 bytes; its allocations 5050 in 2. Rows per thread at
// the peak: F under 200, the rest under 100.
static void test_threads(mt_capture* cap) {
    mr_query q = MR_QUERY_INIT(MT_HEAP_LIBC);
    q.moment = MR_AT_END;
    q.tid = 200;
    mr_profile p;
    build(cap, &q, &p);
    CHECK_EQ_I64(p.nrows, 1);
    check_row(&p, F, 0, 50, 1, 5050, 2);
    CHECK_EQ_I64(p.live_bytes, 50);
    CHECK_EQ_I64(p.alloc_bytes, 5050);
    mr_profile_free(&p);

    q = (mr_query)MR_QUERY_INIT(MT_HEAP_LIBC);
    q.by_thread = true;
    build(cap, &q, &p);
    CHECK_EQ_I64(p.nrows, 6);
    check_row(&p, F, 200, 5000, 1, 5050, 2);
    check_row(&p, C, 100, 4000, 1, 4000, 1);
    CHECK(find(&p, F, 100) == NULL);
    mr_profile_free(&p);
}

// Allocations between 2 us and 5 us (seq 2..5): B 200, C 4000, D 300.
static void test_range(mt_capture* cap) {
    mr_query q = MR_QUERY_INIT(MT_HEAP_LIBC);
    q.from = 2000;
    q.to = 5000;
    mr_profile p;
    build(cap, &q, &p);
    CHECK_EQ_I64(p.alloc_bytes, 4500);
    CHECK_EQ_I64(p.alloc_count, 3);
    check_row(&p, D, 0, 300, 1, 300, 1);
    check_row(&p, A, 0, 1000, 1, 0, 0); // live at the peak, allocated before the range
    mr_profile_free(&p);
}

// An address allocated twice without a free between (a free the tracer missed): the first
// block leaves its row when the second replaces it, as it leaves the replay's live set.
static void test_replaced(void) {
    char path[512];
    snprintf(path, sizeof path, "%s/replaced.db", test_tmpdir());
    fx f;
    fx_open(&f, path);
    fx_alloc(&f, 100, 0x1000, 100, A); // seq 1: the peak, 100 bytes
    fx_alloc(&f, 100, 0x1000, 40, B);  // seq 2: replaces A's block
    fx_alloc(&f, 100, 0x2000, 10, A);  // seq 3
    fx_finish(&f, "complete");
    mt_capture* cap;
    char err[256];
    CHECK_EQ_I64(mt_capture_open(path, &cap, err, sizeof err), 0);
    mr_query q = MR_QUERY_INIT(MT_HEAP_LIBC);
    mr_profile p;
    build(cap, &q, &p);
    CHECK_EQ_I64(p.live_bytes, 100);
    CHECK_EQ_I64(p.end_bytes, 50);
    CHECK_EQ_I64(p.end_blocks, 2);
    const mr_profile_row* a = find(&p, A, 0);
    CHECK(a && a->live_bytes == 100 && a->end_bytes == 10 && a->end_blocks == 1);
    mr_profile_free(&p);
    mt_capture_close(cap);
}

// ---- several moments from one replay (mr_profile_build_moments)

static void check_same(const mr_profile* got, const mr_profile* want) {
    CHECK_EQ_I64(got->moment_seq, want->moment_seq);
    CHECK_EQ_I64(got->moment_ts, want->moment_ts);
    CHECK_EQ_I64(got->live_bytes, want->live_bytes);
    CHECK_EQ_I64(got->live_blocks, want->live_blocks);
    CHECK_EQ_I64(got->end_bytes, want->end_bytes);
    CHECK_EQ_I64(got->end_blocks, want->end_blocks);
    CHECK_EQ_I64(got->alloc_bytes, want->alloc_bytes);
    CHECK_EQ_I64(got->alloc_count, want->alloc_count);
    CHECK_EQ_I64(got->peak_bytes, want->peak_bytes);
    CHECK_EQ_I64(got->peak_seq, want->peak_seq);
    CHECK_EQ_I64(got->events, want->events);
    CHECK_EQ_I64(got->nrows, want->nrows);
    for (size_t i = 0; i < got->nrows && i < want->nrows; i++) {
        const mr_profile_row *g = &got->rows[i], *w = &want->rows[i];
        CHECK_EQ_I64(g->callsite, w->callsite);
        CHECK_EQ_I64(g->tid, w->tid);
        CHECK_EQ_I64(g->live_bytes, w->live_bytes);
        CHECK_EQ_I64(g->live_blocks, w->live_blocks);
        CHECK_EQ_I64(g->end_bytes, w->end_bytes);
        CHECK_EQ_I64(g->end_blocks, w->end_blocks);
        CHECK_EQ_I64(g->alloc_bytes, w->alloc_bytes);
        CHECK_EQ_I64(g->alloc_count, w->alloc_count);
    }
}

// The moments ats[] (INT64_MIN: the peak, INT64_MAX: the end) of `base` built at once and
// one by one must agree row for row.
static void check_moments(mt_capture* cap, const mr_query* base, const int64_t* ats, size_t n) {
    mr_query qs[MR_PROFILE_MAX_MOMENTS];
    mr_profile many[MR_PROFILE_MAX_MOMENTS];
    for (size_t k = 0; k < n; k++) {
        qs[k] = *base;
        qs[k].moment = ats[k] == INT64_MIN   ? MR_AT_PEAK
                       : ats[k] == INT64_MAX ? MR_AT_END
                                             : MR_AT_TIME;
        qs[k].at = ats[k];
    }
    char err[256] = "";
    CHECK_EQ_I64(mr_profile_build_moments(cap, qs, n, many, err, sizeof err), 0);
    for (size_t k = 0; k < n; k++) {
        mr_profile one;
        build(cap, &qs[k], &one);
        check_same(&many[k], &one);
        mr_profile_free(&one);
        mr_profile_free(&many[k]);
    }
}

// The standard fixture (events at 1..14 us, the peak after seq 7): before the first event,
// between events, on an event, at the peak's time, after the last, the peak and the end,
// in any order, for every thread, by thread, one thread, and a range.
static void test_moments_fixture(mt_capture* cap) {
    const int64_t ats[] = {500,   6500,      9000,      INT64_MIN, 7000, 3000,
                           12500, 999000000, INT64_MAX, 1000,      13999};
    const size_t n = sizeof ats / sizeof *ats;
    mr_query q = MR_QUERY_INIT(MT_HEAP_LIBC);
    check_moments(cap, &q, ats, n);
    const int64_t reversed[] = {13999, 1000, INT64_MAX, 999000000, 12500, 3000, 7000};
    check_moments(cap, &q, reversed, 7);
    q.by_thread = true;
    check_moments(cap, &q, ats, n);
    q.by_thread = false;
    q.tid = 200;
    check_moments(cap, &q, ats, n);
    q = (mr_query)MR_QUERY_INIT(MT_HEAP_LIBC);
    q.from = 8000; // the peak within 8..12 us
    q.to = 12000;
    check_moments(cap, &q, ats, n);

    // Known truth through the multi-moment path: 10300 at 6.5 us, 5464 at 9 us, the peak.
    mr_query qs[3] = {q, q, q};
    qs[0] = (mr_query)MR_QUERY_INIT(MT_HEAP_LIBC);
    qs[0].moment = qs[1].moment = MR_AT_TIME;
    qs[0].at = 6500;
    qs[1] = qs[0];
    qs[1].at = 9000;
    qs[2] = (mr_query)MR_QUERY_INIT(MT_HEAP_LIBC);
    mr_profile ps[3];
    char err[256];
    CHECK_EQ_I64(mr_profile_build_moments(cap, qs, 3, ps, err, sizeof err), 0);
    CHECK_EQ_I64(ps[0].live_bytes, 10300);
    CHECK_EQ_I64(ps[1].live_bytes, 5464);
    check_row(&ps[1], D, 0, 400, 2, 1000, 3);
    CHECK_EQ_I64(ps[2].live_bytes, 10364);
    CHECK_EQ_I64(ps[2].moment_seq, 7);
    for (size_t k = 0; k < 3; k++)
        mr_profile_free(&ps[k]);

    // Queries that cannot share a replay, and too many moments.
    qs[1].tid = 200;
    CHECK_EQ_I64(mr_profile_build_moments(cap, qs, 3, ps, err, sizeof err), -EINVAL);
    mr_query many[MR_PROFILE_MAX_MOMENTS + 1];
    mr_profile out[MR_PROFILE_MAX_MOMENTS + 1];
    for (size_t k = 0; k <= MR_PROFILE_MAX_MOMENTS; k++)
        many[k] = qs[0];
    CHECK_EQ_I64(
        mr_profile_build_moments(cap, many, MR_PROFILE_MAX_MOMENTS + 1, out, err, sizeof err),
        -EINVAL);
    CHECK_EQ_I64(mr_profile_build_moments(cap, many, MR_PROFILE_MAX_MOMENTS, out, err, sizeof err),
                 0);
    for (size_t k = 0; k < MR_PROFILE_MAX_MOMENTS; k++) {
        CHECK_EQ_I64(out[k].live_bytes, 10300);
        mr_profile_free(&out[k]);
    }
}

static uint32_t next_random(uint64_t* state) {
    return (uint32_t)(test_lcg(state) >> 33);
}

// Random streams of allocations, frees (some of blocks of other threads, some of unknown
// addresses), reallocs and addresses allocated twice, on 3 threads and 6 callsites: every
// moment built at once equals its own build.
static void test_moments_random(void) {
    for (uint64_t seed = 1; seed <= 20; seed++) {
        uint64_t rnd = seed;
        char path[512];
        snprintf(path, sizeof path, "%s/random%llu.db", test_tmpdir(), (unsigned long long)seed);
        fx f;
        fx_open(&f, path);
        uint64_t live[64];
        size_t nlive = 0, nev = 100 + next_random(&rnd) % 300;
        uint64_t next_addr = 0x10000;
        for (size_t e = 0; e < nev; e++) {
            uint32_t tid = 100 * (1 + next_random(&rnd) % 3), what = next_random(&rnd) % 10;
            uint32_t cs = 1 + next_random(&rnd) % 6;
            uint64_t size = 1 + next_random(&rnd) % 1000;
            if (nlive && what < 3) { // free
                size_t i = next_random(&rnd) % nlive;
                fx_free(&f, tid, live[i]);
                live[i] = live[--nlive];
            } else if (nlive && what == 3) { // realloc
                size_t i = next_random(&rnd) % nlive;
                fx_event(&f, MT_KIND_REALLOC_FREE, tid, live[i], 0, cs);
                live[i] = next_addr += 0x100;
                fx_event(&f, MT_KIND_REALLOC, tid, live[i], size, cs);
            } else if (nlive && what == 4) { // allocated again without a free
                fx_alloc(&f, tid, live[next_random(&rnd) % nlive], size, cs);
            } else if (what == 5) { // a free of nothing known
                fx_free(&f, tid, 0xdead0000);
            } else if (nlive < 64) {
                fx_alloc(&f, tid, live[nlive++] = next_addr += 0x100, size, cs);
            }
        }
        fx_finish(&f, "complete");
        mt_capture* cap;
        char err[256];
        CHECK_EQ_I64(mt_capture_open(path, &cap, err, sizeof err), 0);
        mr_query q = MR_QUERY_INIT(MT_HEAP_LIBC);
        mr_profile peak;
        build(cap, &q, &peak);
        int64_t last = (int64_t)f.seq * 1000; // ts = seq * 1000
        int64_t ats[MR_PROFILE_MAX_MOMENTS] = {0,           peak.peak_ts, INT64_MIN,
                                               last + 1000, INT64_MAX,    last};
        size_t n = 6;
        while (n < MR_PROFILE_MAX_MOMENTS) // between events, and on one
            ats[n++] = (int64_t)(next_random(&rnd) % (uint32_t)(last + 1000)) / 500 * 500;
        mr_profile_free(&peak);
        check_moments(cap, &q, ats, n);
        check_moments(cap, &q, ats + 7, 5);
        q.by_thread = true;
        check_moments(cap, &q, ats, n);
        q.by_thread = false;
        q.tid = 300;
        check_moments(cap, &q, ats, n);
        q.tid = 0;
        q.from = last / 3;
        q.to = 2 * last / 3;
        check_moments(cap, &q, ats, n);
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
    test_peak(cap);
    test_end(cap);
    test_time(cap);
    test_threads(cap);
    test_range(cap);
    test_moments_fixture(cap);
    mt_capture_close(cap);
    test_replaced();
    test_moments_random();
    CHECK_DONE();
}
