// SPDX-License-Identifier: MIT
// The keyed 128-bit hash that names a stack in the per-thread callsite cache. Computed from
// the outermost frame to the leaf, so a walk that shares its outer frames with the previous
// one resumes from a stored state and hashes only its new frames. Two independent
// multiply-add chains: a false cache hit needs a 128-bit collision.
#ifndef MT_STACKHASH_H
#define MT_STACKHASH_H

#include <stdint.h>

typedef struct mt_stackhash {
    uint64_t h1, h2;
} mt_stackhash;

extern uint64_t mt_stackhash_keys[3]; // random, set once by mt_trie_init

static inline mt_stackhash mt_stackhash_begin(void) {
    return (mt_stackhash){mt_stackhash_keys[0], mt_stackhash_keys[2]};
}

static inline void mt_stackhash_add(mt_stackhash* h, uintptr_t pc) {
    h->h1 = (h->h1 + pc) * 0x9e3779b97f4a7c15ull;
    h->h2 = (h->h2 ^ pc) * 0xc2b2ae3d27d4eb4full + mt_stackhash_keys[1];
}

// The state of a whole stack, pcs outermost frame first.
static inline mt_stackhash mt_stackhash_of(const uintptr_t* pcs, int n) {
    mt_stackhash h = mt_stackhash_begin();
    for (int i = 0; i < n; i++)
        mt_stackhash_add(&h, pcs[i]);
    return h;
}

#endif
