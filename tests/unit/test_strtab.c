// SPDX-License-Identifier: MIT
// The interned-string table: dense ids in first-seen order, one copy per string, lookups
// of absent strings, growth through many strings, strings that differ only past a NUL-free
// prefix or in length, and SipHash over bytes agreeing with the one-word SipHash.
#include "siphash.h"
#include "strtab.h"

#include "../check.h"

#include <stdio.h>
#include <string.h>

static void test_basic(void) {
    mr_strtab t;
    CHECK_EQ_I64(mr_strtab_init(&t), 0);
    CHECK_EQ_I64(mr_strtab_find(&t, "malloc"), MR_STRTAB_NONE);
    uint32_t a, b, c;
    bool added;
    CHECK_EQ_I64(mr_strtab_intern(&t, "malloc", &a, &added), 0);
    CHECK(added);
    CHECK_EQ_I64(mr_strtab_intern(&t, "", &b, &added), 0);
    CHECK(added);
    char copy[] = "malloc";
    CHECK_EQ_I64(mr_strtab_intern(&t, copy, &c, &added), 0);
    CHECK(!added);
    CHECK_EQ_I64(a, 0);
    CHECK_EQ_I64(b, 1);
    CHECK_EQ_I64(c, a);
    CHECK_EQ_I64(t.n, 2);
    CHECK(mr_strtab_get(&t, a) != copy); // the table keeps its own copy
    copy[0] = 'M';
    CHECK_EQ_STR(mr_strtab_get(&t, a), "malloc");
    CHECK_EQ_I64(mr_strtab_find(&t, "malloc"), 0);
    CHECK_EQ_I64(mr_strtab_find(&t, ""), 1);
    CHECK_EQ_I64(mr_strtab_find(&t, "mallo"), MR_STRTAB_NONE);
    CHECK_EQ_I64(mr_strtab_find(&t, "malloc "), MR_STRTAB_NONE);
    mr_strtab_free(&t);
}

// 100,000 strings (many table growths), each interned twice: ids stay dense and stable.
static void test_many(void) {
    enum { N = 100000 };
    mr_strtab t;
    CHECK_EQ_I64(mr_strtab_init(&t), 0);
    size_t bad = 0;
    char s[64];
    for (int round = 0; round < 2; round++) {
        for (uint32_t i = 0; i < N; i++) {
            snprintf(s, sizeof s, "function_%u(int, char const*)", i);
            uint32_t id;
            bool added;
            if (mr_strtab_intern(&t, s, &id, &added) || id != i || added != (round == 0))
                bad++;
        }
    }
    CHECK_EQ_I64(bad, 0);
    CHECK_EQ_I64(t.n, N);
    for (uint32_t i = 0; i < N; i += 997) {
        snprintf(s, sizeof s, "function_%u(int, char const*)", i);
        CHECK_EQ_STR(mr_strtab_get(&t, i), s);
        CHECK_EQ_I64(mr_strtab_find(&t, s), i);
    }
    mr_strtab_free(&t);
}

static void test_siphash_bytes(void) {
    uint64_t k0 = 0x0706050403020100ull, k1 = 0x0f0e0d0c0b0a0908ull;
    unsigned char m[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    CHECK_EQ_I64(mr_siphash_bytes(k0, k1, m, 8), mr_siphash_u64(k0, k1, 0x0807060504030201ull));
    // Every length from 0 to 16 hashes differently (the length is part of the message).
    unsigned char z[16] = {0};
    size_t same = 0;
    for (size_t i = 0; i < 16; i++)
        for (size_t j = i + 1; j <= 16; j++)
            same += mr_siphash_bytes(k0, k1, z, i) == mr_siphash_bytes(k0, k1, z, j);
    CHECK_EQ_I64(same, 0);
}

int main(void) {
    test_basic();
    test_many();
    test_siphash_bytes();
    CHECK_DONE();
}
