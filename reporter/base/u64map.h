// SPDX-License-Identifier: MIT
// A plain u64 -> u64 hash map (thread ids -> indexes, distinct values...): open addressing,
// linear probing, keyed SipHash (siphash.h) because its keys come from the capture. The
// live-block table of a replay is heapmap.h; this is for everything else.
#ifndef MR_U64MAP_H
#define MR_U64MAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct mr_u64map_slot {
    uint64_t key; // 0 marks an empty slot (key 0 itself lives in zero_val)
    uint64_t val;
} mr_u64map_slot;

typedef struct mr_u64map {
    mr_u64map_slot* slots;
    size_t mask;  // capacity - 1 (capacity is a power of two)
    size_t count; // keys held, key 0 included
    bool has_zero;
    uint64_t zero_val;
    uint64_t k0, k1;
} mr_u64map;

int mr_u64map_init(mr_u64map* m);
void mr_u64map_free(mr_u64map* m);
// Inserts or replaces key's value. Returns 0 or -ENOMEM.
int mr_u64map_put(mr_u64map* m, uint64_t key, uint64_t val);
// The value of key (writable in place), or NULL when absent.
uint64_t* mr_u64map_get(mr_u64map* m, uint64_t key);
// Iteration: for (size_t i = 0; mr_u64map_next(m, &i, &key, &val);) ...
bool mr_u64map_next(const mr_u64map* m, size_t* i, uint64_t* key, uint64_t* val);

#endif
