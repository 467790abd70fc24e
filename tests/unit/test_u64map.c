// SPDX-License-Identifier: MIT
// The plain u64 -> u64 map: put/get/replace/iterate against a direct-indexed model, key 0
// and UINT64_MAX, growth, and an adversarial key set (values all congruent modulo a large
// power of two) whose probe lengths must stay short because the hash is keyed SipHash.
#include "siphash.h"
#include "u64map.h"

#include "../check.h"
#include "../rng.h"

#include <stdio.h>
#include <stdlib.h>

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static void test_basic(void) {
    mr_u64map m;
    CHECK_EQ_I64(mr_u64map_init(&m), 0);
    CHECK_NULL(mr_u64map_get(&m, 7));
    CHECK_NULL(mr_u64map_get(&m, 0));
    CHECK_EQ_I64(mr_u64map_put(&m, 7, 70), 0);
    CHECK_EQ_I64(mr_u64map_put(&m, 0, 5), 0);
    CHECK_EQ_I64(mr_u64map_put(&m, UINT64_MAX, 9), 0);
    CHECK_EQ_I64(m.count, 3);
    CHECK_EQ_I64(*mr_u64map_get(&m, 7), 70);
    CHECK_EQ_I64(*mr_u64map_get(&m, 0), 5);
    CHECK_EQ_I64(*mr_u64map_get(&m, UINT64_MAX), 9);
    CHECK_EQ_I64(mr_u64map_put(&m, 7, 71), 0); // replace, no new key
    CHECK_EQ_I64(mr_u64map_put(&m, 0, 6), 0);
    CHECK_EQ_I64(m.count, 3);
    (*mr_u64map_get(&m, 7))++; // values are writable in place
    CHECK_EQ_I64(*mr_u64map_get(&m, 7), 72);
    CHECK_EQ_I64(*mr_u64map_get(&m, 0), 6);
    uint64_t key, val, sum = 0;
    size_t seen = 0;
    for (size_t i = 0; mr_u64map_next(&m, &i, &key, &val); seen++)
        sum += key ^ val;
    CHECK_EQ_I64(seen, 3);
    CHECK_EQ_I64(sum, (7 ^ 72) + (0 ^ 6) + (UINT64_MAX ^ 9));
    mr_u64map_free(&m);
}

// Random puts on a small key space (many replacements) through several growths, checked
// against a direct-indexed model; iteration visits exactly the keys put, once.
static void test_model(void) {
    enum { SPACE = 50000, OPS = 200000 };
    uint64_t* model = calloc(SPACE, sizeof *model); // value + 1, 0 = absent
    mr_u64map m;
    CHECK_EQ_I64(mr_u64map_init(&m), 0);
    size_t keys = 0, bad = 0;
    for (size_t op = 0; op < OPS; op++) {
        size_t k = (size_t)(test_rng(&rng) % SPACE);
        uint64_t v = test_rng(&rng) % 1000000;
        uint64_t* have = mr_u64map_get(&m, k * 4096);
        if ((have != NULL) != (model[k] != 0) || (have && *have + 1 != model[k]))
            bad++;
        CHECK_EQ_I64(mr_u64map_put(&m, k * 4096, v), 0);
        keys += !model[k];
        model[k] = v + 1;
        if (m.count != keys)
            bad++;
    }
    CHECK_EQ_I64(bad, 0);
    uint64_t key, val;
    size_t seen = 0;
    for (size_t i = 0; mr_u64map_next(&m, &i, &key, &val); seen++) {
        size_t k = (size_t)(key / 4096);
        if (key % 4096 || k >= SPACE || model[k] != val + 1)
            bad++;
        model[k] = 0; // a second visit would now mismatch
    }
    CHECK_EQ_I64(bad, 0);
    CHECK_EQ_I64(seen, keys);
    mr_u64map_free(&m);
    free(model);
}

// 64K keys i << 20: an identity or multiplicative hash masked to the table size puts them
// all in a handful of home slots, and every insert walks a chain of ~n entries. SipHash
// spreads them like random keys.
static void test_adversarial(void) {
    enum { N = 1 << 16 };
    mr_u64map m;
    CHECK_EQ_I64(mr_u64map_init(&m), 0);
    for (uint64_t i = 1; i <= N; i++)
        CHECK_EQ_I64(mr_u64map_put(&m, i << 20, i), 0);
    CHECK_EQ_I64(m.count, N);
    uint64_t sum = 0, max = 0;
    for (size_t i = 0; i <= m.mask; i++) {
        if (!m.slots[i].key)
            continue;
        size_t home = (size_t)mr_siphash_u64(m.k0, m.k1, m.slots[i].key) & m.mask;
        uint64_t d = (i - home) & m.mask;
        sum += d;
        max = d > max ? d : max;
    }
    printf("adversarial: %d keys in %zu slots, mean displacement %.3f, max %llu\n", N, m.mask + 1,
           (double)sum / N, (unsigned long long)max);
    // Random keys at load <= 1/2 give a mean under one slot and a maximum in the tens;
    // a colliding hash gives a mean around N/2.
    CHECK(sum < 4ull * N);
    CHECK(max < 1000);
    size_t bad = 0;
    for (uint64_t i = 1; i <= N; i++) {
        uint64_t* v = mr_u64map_get(&m, i << 20);
        bad += !v || *v != i;
    }
    CHECK_EQ_I64(bad, 0);
    mr_u64map_free(&m);
}

// Two maps get different keys, so nobody can precompute colliding values.
static void test_keys(void) {
    mr_u64map a, b;
    CHECK_EQ_I64(mr_u64map_init(&a), 0);
    CHECK_EQ_I64(mr_u64map_init(&b), 0);
    CHECK(a.k0 != b.k0 || a.k1 != b.k1);
    mr_u64map_free(&a);
    mr_u64map_free(&b);
}

int main(void) {
    test_basic();
    test_model();
    test_adversarial();
    test_keys();
    CHECK_DONE();
}
