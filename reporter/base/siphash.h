// SPDX-License-Identifier: MIT
// SipHash-1-3 for hash tables keyed by values the traced program or an input file controls
// (addresses, thread ids, NPU buffer sizes): with a per-table random key nobody can choose
// values that all collide and make the table quadratic.
#ifndef MR_SIPHASH_H
#define MR_SIPHASH_H

#include <stddef.h>
#include <stdint.h>

// SipHash-1-3 of the 8-byte little-endian message v under the key (k0, k1).
uint64_t mr_siphash_u64(uint64_t k0, uint64_t k1, uint64_t v);
// SipHash-1-3 of the bytes p[0..n) under the key (k0, k1): for string keys.
uint64_t mr_siphash_bytes(uint64_t k0, uint64_t k1, const void* p, size_t n);
// Fills key[2] from getrandom (the clock and salt's address if that fails).
void mr_siphash_random_key(uint64_t key[2], const void* salt);

#endif
