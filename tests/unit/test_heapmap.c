// SPDX-License-Identifier: MIT
// The live-block hash table: put/get/take/replace/iterate against a simple model, growth,
// backward-shift deletion, and an adversarial key set (addresses all congruent modulo a
// large power of two) whose probe lengths must stay short because the hash is keyed SipHash.
#include "heapmap.h"

#include "../check.h"
#include "../rng.h"

#include <stdlib.h>

static uint64_t rng = 0x853c49e6748fea9bull;

// Sum and maximum of the distances between each entry's home slot and where it sits: what
// every lookup of that entry costs in extra probes. The home is the part named by the hash's
// top bits and the slot its low 32 bits name, scaled to the part's capacity (heapmap.h);
// each slot keeps those bits.
static void displacement(const mr_heapmap* m, uint64_t* sum, uint64_t* max) {
    *sum = *max = 0;
    for (size_t k = 0; k < MR_HEAPMAP_PARTS; k++) {
        const mr_heapmap_part* p = &m->parts[k];
        for (size_t i = 0; i < p->cap; i++) {
            if (!p->slots[i].addr)
                continue;
            uint64_t h = mr_siphash_u64(m->k0, m->k1, p->slots[i].addr);
            if (h >> (64 - MR_HEAPMAP_PART_BITS) != k || p->slots[i].hash != (uint32_t)h)
                (*max) = UINT64_MAX; // in the wrong part, or its home misread: never found
            size_t home = (size_t)(((uint64_t)(uint32_t)h * p->cap) >> 32);
            uint64_t d = i >= home ? i - home : i + p->cap - home;
            *sum += d;
            if (d > *max && *max != UINT64_MAX)
                *max = d;
        }
    }
}

// All slots of all parts: what the table costs in memory.
static size_t capacity(const mr_heapmap* m) {
    size_t n = 0;
    for (size_t k = 0; k < MR_HEAPMAP_PARTS; k++)
        n += m->parts[k].cap;
    return n;
}

static void test_basic(void) {
    mr_heapmap m;
    CHECK_EQ_I64(mr_heapmap_init(&m), 0);
    CHECK_EQ_I64(m.count, 0);
    CHECK(!mr_heapmap_get(&m, 0x1000, NULL));
    CHECK(!mr_heapmap_get(&m, 0, NULL)); // 0 is never a block
    CHECK(!mr_heapmap_take(&m, 0x1000, NULL));

    mr_block b = {.addr = 0x1000, .size = 24, .callsite = 3, .tid = 9};
    bool had = true;
    CHECK_EQ_I64(mr_heapmap_put(&m, &b, NULL, &had), 0);
    CHECK(!had);
    CHECK_EQ_I64(m.count, 1);
    mr_block g = {0};
    CHECK(mr_heapmap_get(&m, 0x1000, &g));
    CHECK_EQ_I64(g.size, 24);
    CHECK_EQ_I64(g.callsite, 3);
    CHECK_EQ_I64(g.tid, 9);

    // Replacing an address reports the old block and keeps the count.
    mr_block b2 = {.addr = 0x1000, .size = 48, .callsite = 4};
    mr_block old = {0};
    CHECK_EQ_I64(mr_heapmap_put(&m, &b2, &old, &had), 0);
    CHECK(had);
    CHECK_EQ_I64(old.size, 24);
    CHECK_EQ_I64(old.callsite, 3);
    CHECK_EQ_I64(m.count, 1);
    CHECK(mr_heapmap_get(&m, 0x1000, &g));
    CHECK_EQ_I64(g.size, 48);

    mr_block out = {0};
    CHECK(mr_heapmap_take(&m, 0x1000, &out));
    CHECK_EQ_I64(out.size, 48);
    CHECK_EQ_I64(m.count, 0);
    CHECK(!mr_heapmap_take(&m, 0x1000, &out));
    CHECK(!mr_heapmap_get(&m, 0x1000, NULL));
    // Extreme addresses are ordinary keys.
    mr_block hi = {.addr = UINT64_MAX, .size = 1};
    CHECK_EQ_I64(mr_heapmap_put(&m, &hi, NULL, NULL), 0);
    CHECK(mr_heapmap_get(&m, UINT64_MAX, &g));
    CHECK_EQ_I64(g.size, 1);
    CHECK(mr_heapmap_take(&m, UINT64_MAX, NULL));
    mr_heapmap_free(&m);
}

// Random puts and takes on a small address space (many collisions of the same addresses,
// many deletions inside probe chains), checked against a direct-indexed model.
static void test_model(void) {
    enum { SPACE = 20000, OPS = 400000 };
    uint64_t* model = calloc(SPACE, sizeof *model); // size + 1, 0 = absent
    mr_heapmap m;
    CHECK_EQ_I64(mr_heapmap_init(&m), 0);
    size_t live = 0, bad = 0;
    for (size_t op = 0; op < OPS; op++) {
        size_t k = (size_t)(test_rng(&rng) % SPACE);
        uint64_t addr = 0x7f0000000000ull + (uint64_t)k * 16;
        if (test_rng(&rng) % 3 != 0) {
            // One block in eight around and beyond the 32 bits a slot holds of a size.
            uint64_t size = test_rng(&rng) % 8 ? test_rng(&rng) % 5000
                                               : (UINT64_C(1) << (32 + test_rng(&rng) % 30)) - 2 +
                                                     test_rng(&rng) % 4;
            mr_block b = {.addr = addr, .size = size, .tid = (uint32_t)op};
            bool had;
            mr_block old;
            CHECK_EQ_I64(mr_heapmap_put(&m, &b, &old, &had), 0);
            if (had != (model[k] != 0) || (had && old.size + 1 != model[k]))
                bad++;
            if (!model[k])
                live++;
            model[k] = b.size + 1;
        } else {
            mr_block out;
            bool took = mr_heapmap_take(&m, addr, &out);
            if (took != (model[k] != 0) || (took && out.size + 1 != model[k]))
                bad++;
            if (model[k])
                live--;
            model[k] = 0;
        }
        if (m.count != live)
            bad++;
    }
    CHECK_EQ_I64(bad, 0);
    // Every model entry is found, and iteration visits exactly the live set once.
    for (size_t k = 0; k < SPACE; k++) {
        mr_block g;
        bool found = mr_heapmap_get(&m, 0x7f0000000000ull + (uint64_t)k * 16, &g);
        if (found != (model[k] != 0) || (found && g.size + 1 != model[k]))
            bad++;
    }
    CHECK_EQ_I64(bad, 0);
    size_t seen = 0;
    mr_block b;
    for (size_t i = 0; mr_heapmap_next(&m, &i, &b);) {
        size_t k = (size_t)((b.addr - 0x7f0000000000ull) / 16);
        if (k >= SPACE || model[k] != b.size + 1)
            bad++;
        model[k] = 0; // a second visit would now mismatch
        seen++;
    }
    CHECK_EQ_I64(bad, 0);
    CHECK_EQ_I64(seen, live);
    mr_heapmap_free(&m);
    free(model);
}

// 1M addresses i << 20: with an identity or multiplicative hash masked to the table size
// they all share a handful of home slots and every insert walks a chain of ~n entries
// (10^12 probes). SipHash spreads them like random keys.
static void test_adversarial(void) {
    enum { N = 1 << 20 };
    mr_heapmap m;
    CHECK_EQ_I64(mr_heapmap_init(&m), 0);
    for (uint64_t i = 1; i <= N; i++) {
        mr_block b = {.addr = i << 20, .size = i};
        if (mr_heapmap_put(&m, &b, NULL, NULL) != 0) {
            CHECK(!"put failed");
            break;
        }
    }
    CHECK_EQ_I64(m.count, N);
    uint64_t sum, max;
    displacement(&m, &sum, &max);
    printf("adversarial: %d keys in %zu slots, mean displacement %.3f, max %llu\n", N, capacity(&m),
           (double)sum / N, (unsigned long long)max);
    // Random keys at load <= 4/5 give a mean of a few slots and a maximum in the hundreds;
    // a colliding hash gives a mean around N/2.
    CHECK(sum < 4ull * N);
    // Every part at least three fifths full once grown, its 2 MiB pages whole: the memory
    // follows the live set (24 bytes a slot: 40 bytes a block at most here).
    CHECK(capacity(&m) <= 5ull * N / 3);
    CHECK(max < 1000);
    size_t bad = 0;
    for (uint64_t i = 1; i <= N; i += 2) {
        mr_block out;
        if (!mr_heapmap_take(&m, i << 20, &out) || out.size != i)
            bad++;
    }
    CHECK_EQ_I64(bad, 0);
    CHECK_EQ_I64(m.count, N / 2);
    // Backward-shift deletion leaves no tombstones: the chains stay as short as before.
    displacement(&m, &sum, &max);
    CHECK(sum < 4ull * (N / 2));
    for (uint64_t i = 1; i <= N; i++) {
        mr_block g;
        bool found = mr_heapmap_get(&m, i << 20, &g);
        if ((i % 2 == 1) == found || (found && g.size != i))
            bad++;
    }
    CHECK_EQ_I64(bad, 0);
    for (uint64_t i = 2; i <= N; i += 2)
        if (!mr_heapmap_take(&m, i << 20, NULL))
            bad++;
    CHECK_EQ_I64(bad, 0);
    CHECK_EQ_I64(m.count, 0);
    mr_heapmap_free(&m);
}

// Two maps get different keys, so an attacker cannot precompute colliding addresses.
static void test_keys(void) {
    mr_heapmap a, b;
    CHECK_EQ_I64(mr_heapmap_init(&a), 0);
    CHECK_EQ_I64(mr_heapmap_init(&b), 0);
    CHECK(a.k0 != b.k0 || a.k1 != b.k1);
    CHECK(mr_siphash_u64(a.k0, a.k1, 42) != mr_siphash_u64(b.k0, b.k1, 42));
    CHECK(mr_siphash_u64(1, 2, 42) == mr_siphash_u64(1, 2, 42));
    mr_heapmap_free(&a);
    mr_heapmap_free(&b);
}

// SipHash-1-3 of the 8-byte message 00..07 under key 00..0f. The expected value comes from
// an independent implementation (Python) which reproduces the published SipHash-2-4
// vectors for the same key (empty message 0x726fdb47dd0e0e31, 00..07 0x93f5f5799a932462)
// when run with 2-4 rounds.
static void test_siphash_vector(void) {
    uint64_t k0 = 0x0706050403020100ull, k1 = 0x0f0e0d0c0b0a0908ull;
    uint64_t msg = 0x0706050403020100ull;
    CHECK_EQ_I64(mr_siphash_u64(k0, k1, msg), 0x369095118d299a8eull);
}

// The hash mr_heapmap_prefetch returns is the table's (keyed) hash of the address, and the
// _hashed calls given it find blocks as put/take do, also when the table grew between the
// prefetch and the call (a replay prefetches 16 events ahead).
static void test_hashed(void) {
    mr_heapmap m;
    CHECK_EQ_I64(mr_heapmap_init(&m), 0);
    enum { N = 5000 };
    static uint64_t hash[N];
    for (uint64_t i = 0; i < N; i++) {
        uint64_t addr = 0x10000 + i * 32;
        hash[i] = mr_heapmap_prefetch(&m, addr);
        CHECK_EQ_I64(hash[i], mr_siphash_u64(m.k0, m.k1, addr));
        CHECK_EQ_I64(mr_heapmap_hash(&m, addr), hash[i]);
    }
    size_t cap0 = capacity(&m);
    for (uint64_t i = 0; i < N; i++) {
        mr_block b = {.addr = 0x10000 + i * 32, .size = i + 1};
        CHECK_EQ_I64(mr_heapmap_put_hashed(&m, &b, hash[i], NULL, NULL), 0);
    }
    CHECK(capacity(&m) > cap0); // it grew after the hashes were taken
    uint64_t sum, max;
    displacement(&m, &sum, &max);
    CHECK(max != UINT64_MAX); // each block in the part its hash names
    mr_block b = {.addr = 0x10000, .size = 7}, old;
    bool had;
    CHECK_EQ_I64(mr_heapmap_put_hashed(&m, &b, hash[0], &old, &had), 0);
    CHECK(had);
    CHECK_EQ_I64(old.size, 1);
    for (uint64_t i = 0; i < N; i += 2) {
        mr_block out;
        CHECK(mr_heapmap_take_hashed(&m, 0x10000 + i * 32, hash[i], &out));
        CHECK_EQ_I64(out.size, i == 0 ? 7 : i + 1);
    }
    for (uint64_t i = 0; i < N; i++) {
        mr_block g;
        bool found = mr_heapmap_get(&m, 0x10000 + i * 32, &g);
        CHECK(i % 2 ? found && g.size == i + 1 : !found);
    }
    CHECK_EQ_I64(m.count, N / 2);
    CHECK(!mr_heapmap_take_hashed(&m, 0x10000, hash[0], NULL));
    mr_heapmap_free(&m);
}

int main(void) {
    test_basic();
    test_hashed();
    test_model();
    test_keys();
    test_siphash_vector();
    test_adversarial();
    CHECK_DONE();
}
