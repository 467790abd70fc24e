// SPDX-License-Identifier: MIT
// SipHash-1-3 for hash tables keyed by values the traced program or an input file controls
// (addresses, thread ids, NPU buffer sizes): with a per-table random key nobody can choose
// values that all collide and make the table quadratic.
#ifndef MR_SIPHASH_H
#define MR_SIPHASH_H

#include <stddef.h>
#include <stdint.h>

#define MR_SIP_ROTL(x, b) (uint64_t)(((x) << (b)) | ((x) >> (64 - (b))))
#define MR_SIPROUND                                                                                \
    do {                                                                                           \
        v0 += v1;                                                                                  \
        v1 = MR_SIP_ROTL(v1, 13);                                                                  \
        v1 ^= v0;                                                                                  \
        v0 = MR_SIP_ROTL(v0, 32);                                                                  \
        v2 += v3;                                                                                  \
        v3 = MR_SIP_ROTL(v3, 16);                                                                  \
        v3 ^= v2;                                                                                  \
        v0 += v3;                                                                                  \
        v3 = MR_SIP_ROTL(v3, 21);                                                                  \
        v3 ^= v0;                                                                                  \
        v2 += v1;                                                                                  \
        v1 = MR_SIP_ROTL(v1, 17);                                                                  \
        v1 ^= v2;                                                                                  \
        v2 = MR_SIP_ROTL(v2, 32);                                                                  \
    } while (0)

// SipHash-1-3 of the 8-byte little-endian message v under the key (k0, k1). Inline: the
// live-block table of a replay hashes one address per event, and a call costs as much as
// the rounds.
static inline uint64_t mr_siphash_u64(uint64_t k0, uint64_t k1, uint64_t v) {
    uint64_t v0 = 0x736f6d6570736575ull ^ k0, v1 = 0x646f72616e646f6dull ^ k1;
    uint64_t v2 = 0x6c7967656e657261ull ^ k0, v3 = 0x7465646279746573ull ^ k1;
    v3 ^= v;
    MR_SIPROUND;
    v0 ^= v;
    uint64_t b = (uint64_t)8 << 56;
    v3 ^= b;
    MR_SIPROUND;
    v0 ^= b;
    v2 ^= 0xff;
    MR_SIPROUND;
    MR_SIPROUND;
    MR_SIPROUND;
    return v0 ^ v1 ^ v2 ^ v3;
}
// SipHash-1-3 of the bytes p[0..n) under the key (k0, k1): for string keys.
uint64_t mr_siphash_bytes(uint64_t k0, uint64_t k1, const void* p, size_t n);

// The same over bytes given in pieces (stored bytes read a window at a time): begin, add
// each piece in order, end gives what mr_siphash_bytes gives for them all.
typedef struct mr_siphash_state {
    uint64_t v0, v1, v2, v3;
    uint64_t tail; // the bytes after the last whole word, little-endian
    size_t n;      // bytes added
} mr_siphash_state;
void mr_siphash_begin(mr_siphash_state* s, uint64_t k0, uint64_t k1);
void mr_siphash_add(mr_siphash_state* s, const void* p, size_t n);
uint64_t mr_siphash_end(const mr_siphash_state* s);
// Fills key[2] from getrandom (the clock and salt's address if that fails).
void mr_siphash_random_key(uint64_t key[2], const void* salt);

#endif
