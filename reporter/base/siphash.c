// SPDX-License-Identifier: MIT
#include "siphash.h"

#include <stddef.h>
#include <sys/random.h>
#include <time.h>

void mr_siphash_begin(mr_siphash_state* s, uint64_t k0, uint64_t k1) {
    *s = (mr_siphash_state){.v0 = 0x736f6d6570736575ull ^ k0,
                            .v1 = 0x646f72616e646f6dull ^ k1,
                            .v2 = 0x6c7967656e657261ull ^ k0,
                            .v3 = 0x7465646279746573ull ^ k1};
}

static void compress(mr_siphash_state* s, uint64_t m) {
    uint64_t v0 = s->v0, v1 = s->v1, v2 = s->v2, v3 = s->v3;
    v3 ^= m;
    MR_SIPROUND;
    v0 ^= m;
    s->v0 = v0, s->v1 = v1, s->v2 = v2, s->v3 = v3;
}

// Whole 8-byte little-endian words as they fill, then (end) the tail with the length in
// the top byte.
void mr_siphash_add(mr_siphash_state* s, const void* p, size_t n) {
    const unsigned char* b = p;
    size_t i = 0;
    for (; i < n && s->n % 8; i++, s->n++)
        s->tail |= (uint64_t)b[i] << (8 * (s->n % 8));
    if (s->n % 8 == 0 && s->n && i) {
        compress(s, s->tail);
        s->tail = 0;
    }
    uint64_t v0 = s->v0, v1 = s->v1, v2 = s->v2, v3 = s->v3; // b may alias s: kept apart
    size_t words = (n - i) / 8;
    s->n += 8 * words;
    for (; words; words--, i += 8) {
        uint64_t m = 0;
        for (int k = 0; k < 8; k++)
            m |= (uint64_t)b[i + k] << (8 * k);
        v3 ^= m;
        MR_SIPROUND;
        v0 ^= m;
    }
    s->v0 = v0, s->v1 = v1, s->v2 = v2, s->v3 = v3;
    for (; i < n; i++, s->n++)
        s->tail |= (uint64_t)b[i] << (8 * (s->n % 8));
}

uint64_t mr_siphash_end(const mr_siphash_state* st) {
    mr_siphash_state s = *st;
    compress(&s, s.tail | (uint64_t)(s.n & 0xff) << 56);
    uint64_t v0 = s.v0, v1 = s.v1, v2 = s.v2 ^ 0xff, v3 = s.v3;
    MR_SIPROUND;
    MR_SIPROUND;
    MR_SIPROUND;
    return v0 ^ v1 ^ v2 ^ v3;
}

uint64_t mr_siphash_bytes(uint64_t k0, uint64_t k1, const void* p, size_t n) {
    mr_siphash_state s;
    mr_siphash_begin(&s, k0, k1);
    mr_siphash_add(&s, p, n);
    return mr_siphash_end(&s);
}

void mr_siphash_random_key(uint64_t key[2], const void* salt) {
    if (getrandom(key, 2 * sizeof *key, GRND_NONBLOCK) == (ssize_t)(2 * sizeof *key))
        return;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    key[0] = (uint64_t)ts.tv_nsec * 0x9e3779b97f4a7c15ull ^ (uint64_t)(uintptr_t)salt;
    key[1] = (uint64_t)ts.tv_sec ^ 0xd6e8feb86659fd93ull;
}
