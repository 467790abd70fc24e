// SPDX-License-Identifier: MIT
// Live bytes per callsite at each time bucket's highest moment (reporter/model/moments.h)
// on the standard fixture capture (tests/reports/fixture.c: ts = seq * 1000 ns; live bytes
// after seq 1..14: 1000 1200 1000 5000 5300 10300 10364 5364 5464 4464 4514 4214 4814 4814).
#include "moments.h"

#include "../check.h"
#include "../reports/fixture.h"
#include "memtrace/schema.h"

#include <stdio.h>

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
    CHECK_EQ_I64(mr_moments_build(cap, MT_HEAP_LIBC, 14000, 14, &m, err, sizeof err), 0);
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
    CHECK_EQ_I64(mr_moments_build(cap, MT_HEAP_LIBC, 14000, 28, &m, err, sizeof err), 0);
    CHECK_EQ_I64(m.width, 501);
    CHECK_EQ_I64(m.seq[m.bucket_moment[0]], 0); // [0, 501): before seq 1
    CHECK_EQ_I64(m.bytes[m.bucket_moment[0]], 0);
    CHECK_EQ_I64(m.seq[m.bucket_moment[1]], 1);   // seq 1 at 1000 us
    CHECK_EQ_I64(m.seq[m.bucket_moment[2]], 1);   // [1002, 1503): carried in
    CHECK_EQ_I64(m.seq[m.bucket_moment[27]], 13); // after the last event
    check_value(&m, C, m.bucket_moment[27], 4000, 1);
    mr_moments_free(&m);
}

int main(void) {
    char path[512];
    snprintf(path, sizeof path, "%s/standard.db", fx_tmpdir());
    fx_standard(path);
    mt_capture* cap;
    char err[256];
    CHECK_EQ_I64(mt_capture_open(path, &cap, err, sizeof err), 0);
    test_one_event_per_bucket(cap);
    test_empty_buckets(cap);
    mt_capture_close(cap);
    CHECK_DONE();
}
