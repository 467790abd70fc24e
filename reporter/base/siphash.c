// SPDX-License-Identifier: MIT
#include "siphash.h"

#include <stddef.h>
#include <sys/random.h>
#include <time.h>

uint64_t mr_siphash_bytes(uint64_t k0, uint64_t k1, const void* p, size_t n) {
    const unsigned char* s = p;
    uint64_t v0 = 0x736f6d6570736575ull ^ k0, v1 = 0x646f72616e646f6dull ^ k1;
    uint64_t v2 = 0x6c7967656e657261ull ^ k0, v3 = 0x7465646279746573ull ^ k1;
    // Whole 8-byte little-endian words, then the tail with the length in the top byte.
    size_t whole = n & ~(size_t)7;
    for (size_t i = 0; i <= whole; i += 8) {
        uint64_t m = 0;
        if (i < whole) {
            for (int k = 0; k < 8; k++)
                m |= (uint64_t)s[i + k] << (8 * k);
        } else {
            for (size_t k = 0; k < n - whole; k++)
                m |= (uint64_t)s[i + k] << (8 * k);
            m |= (uint64_t)(n & 0xff) << 56;
        }
        v3 ^= m;
        MR_SIPROUND;
        v0 ^= m;
    }
    v2 ^= 0xff;
    MR_SIPROUND;
    MR_SIPROUND;
    MR_SIPROUND;
    return v0 ^ v1 ^ v2 ^ v3;
}

void mr_siphash_random_key(uint64_t key[2], const void* salt) {
    if (getrandom(key, 2 * sizeof *key, GRND_NONBLOCK) == (ssize_t)(2 * sizeof *key))
        return;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    key[0] = (uint64_t)ts.tv_nsec * 0x9e3779b97f4a7c15ull ^ (uint64_t)(uintptr_t)salt;
    key[1] = (uint64_t)ts.tv_sec ^ 0xd6e8feb86659fd93ull;
}
