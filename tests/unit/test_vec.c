// SPDX-License-Identifier: MIT
// The growable-array helper: doubling from its minimum, keeping contents, and refusing
// sizes that overflow without touching the array.
#include "../check.h"
#include "memtrace/vec.h"

static void test_grows_and_keeps(void) {
    uint64_t* v = NULL;
    size_t cap = 0;
    CHECK_EQ_I64(MT_VEC_RESERVE(&v, &cap, 0), 0);
    CHECK(v == NULL); // nothing needed, nothing allocated
    CHECK_EQ_I64(MT_VEC_RESERVE(&v, &cap, 1), 0);
    CHECK(v != NULL);
    CHECK_EQ_I64(cap, MT_VEC_MIN_CAP);
    for (size_t i = 0; i < 1000; i++) {
        CHECK_EQ_I64(MT_VEC_RESERVE(&v, &cap, i + 1), 0);
        v[i] = i * 3;
    }
    CHECK_EQ_I64(cap, 1024); // 16 doubled six times
    uint64_t sum = 0;
    for (size_t i = 0; i < 1000; i++)
        sum += v[i] == i * 3;
    CHECK_EQ_I64(sum, 1000);
    CHECK_EQ_I64(MT_VEC_RESERVE(&v, &cap, 5000), 0); // several doublings at once
    CHECK_EQ_I64(cap, 8192);
    CHECK_EQ_I64(v[999], 999 * 3);
    free(v);
}

static void test_overflow(void) {
    uint32_t* v = NULL;
    size_t cap = 0;
    CHECK_EQ_I64(MT_VEC_RESERVE(&v, &cap, 4), 0);
    uint32_t* before = v;
    v[3] = 7;
    // need * elem overflows size_t: refused, array and capacity kept.
    CHECK_EQ_I64(MT_VEC_RESERVE(&v, &cap, SIZE_MAX / 2), -ENOMEM);
    CHECK(v == before);
    CHECK_EQ_I64(cap, MT_VEC_MIN_CAP);
    // doubling past SIZE_MAX: refused as well.
    CHECK_EQ_I64(mt_vec_grow(&v, &cap, SIZE_MAX, 1), -ENOMEM);
    CHECK(v == before);
    CHECK_EQ_I64(v[3], 7);
    CHECK_EQ_I64(mt_vec_grow(&v, &cap, 1, 0), 0); // already enough, whatever the size
    free(v);
}

int main(void) {
    test_grows_and_keeps();
    test_overflow();
    CHECK_DONE();
}
