// SPDX-License-Identifier: MIT
// The aggregation model (reporter/model/profile.h) on the standard fixture capture, whose
// events and truth are listed in tests/reports/fixture.c (ts = seq * 1000 ns).
#include "profile.h"

#include "../check.h"
#include "../reports/fixture.h"
#include "memtrace/schema.h"

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
    snprintf(path, sizeof path, "%s/replaced.db", fx_tmpdir());
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

int main(void) {
    char path[512];
    snprintf(path, sizeof path, "%s/standard.db", fx_tmpdir());
    fx_standard(path);
    mt_capture* cap;
    char err[256];
    CHECK_EQ_I64(mt_capture_open(path, &cap, err, sizeof err), 0);
    test_peak(cap);
    test_end(cap);
    test_time(cap);
    test_threads(cap);
    test_range(cap);
    mt_capture_close(cap);
    test_replaced();
    CHECK_DONE();
}
