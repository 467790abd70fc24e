// SPDX-License-Identifier: MIT
// The tests' pseudo-random sequences, deterministic so that a seed gives the same run every
// time and a failure can be run again: xorshift64 (test_rng) and Knuth's MMIX linear
// congruential generator (test_lcg, whose high bits are the random ones). Header-only; the
// caller keeps the state.
#ifndef MT_TEST_RNG_H
#define MT_TEST_RNG_H

#include <stdint.h>

// xorshift64: the number after *state (any value but 0), which becomes the state.
static inline uint64_t test_rng(uint64_t* state) {
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    return *state;
}

// The LCG: the number after *state, which becomes the state. Use its high bits (>> 33).
static inline uint64_t test_lcg(uint64_t* state) {
    *state = *state * 6364136223846793005u + 1442695040888963407u;
    return *state;
}

#endif
