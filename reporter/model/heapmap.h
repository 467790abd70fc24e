// SPDX-License-Identifier: MIT
// The live-block table of a replay: address -> block. Open addressing, linear probing with
// backward-shift deletion, keyed by SipHash-1-3 with a per-process random key, because the
// addresses come from the traced program and a predictable hash can be driven quadratic.
//
// The table is split into MR_HEAPMAP_PARTS parts chosen by the hash's top bits, each growing
// on its own: a growth copies one part, not the whole table, so a replay's memory never
// holds two copies of a million-block live set (the replay's memory is this table). A slot
// keeps the low 32 bits of its key's hash, so moving a block (growth, deletion) never hashes
// again; that is what lets a part fill to 4/5 and grow by a quarter, where hashing every
// moved block kept the table at most half full and doubling (heapmap.c).
#ifndef MR_HEAPMAP_H
#define MR_HEAPMAP_H

#include "siphash.h" // mr_siphash_u64: tests recompute home slots with it
#include "u64map.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

// What the views need of a live block. When it was allocated is the event's.
typedef struct mr_block {
    uint64_t addr;
    uint64_t size;
    union {
        struct {
            uint32_t callsite; // a replay's blocks
            uint32_t tid;
        };
        uint64_t id; // a writer's own name for the block (export_csv: its allocation's seq)
    };
} mr_block;

// 24 bytes: a block as the table holds it.
typedef struct mr_heapmap_slot {
    uint64_t addr;    // 0 marks an empty slot (0 is never a live block address)
    uint64_t payload; // the block's callsite and tid, or id (mr_block's union)
    uint32_t size;    // MR_HEAPMAP_BIG: the size is in the table's `big` map
    uint32_t hash;    // the low 32 bits of the address's hash: its home slot
} mr_heapmap_slot;

#define MR_HEAPMAP_BIG UINT32_MAX

// 16 parts: a growth copies 1/16 of the table, and a part of a large table still spans
// 2 MiB pages (heapmap.c).
enum { MR_HEAPMAP_PART_BITS = 4, MR_HEAPMAP_PARTS = 1 << MR_HEAPMAP_PART_BITS };

typedef struct mr_heapmap_part {
    mr_heapmap_slot* slots;
    size_t cap;   // slots (below 2^32: a home slot is (hash * cap) >> 32)
    size_t count; // blocks held
    size_t limit; // the count at which the part grows
} mr_heapmap_part;

typedef struct mr_heapmap {
    mr_heapmap_part parts[MR_HEAPMAP_PARTS]; // part: the hash's top MR_HEAPMAP_PART_BITS bits
    size_t count;
    uint64_t k0, k1;
    // address -> size of the blocks of MR_HEAPMAP_BIG bytes or more (an entry outlives its
    // block: a slot's size says whether to look here)
    mr_u64map big;
} mr_heapmap;

int mr_heapmap_init(mr_heapmap* m);
void mr_heapmap_free(mr_heapmap* m);
// Inserts or replaces. Returns 0 or -ENOMEM. *replaced (optional) gets the old block.
int mr_heapmap_put(mr_heapmap* m, const mr_block* b, mr_block* replaced, bool* had);
// Removes addr; returns true and fills *out if it was live.
bool mr_heapmap_take(mr_heapmap* m, uint64_t addr, mr_block* out);
// Whether addr is live; if so, *out (optional) gets its block.
bool mr_heapmap_get(const mr_heapmap* m, uint64_t addr, mr_block* out);
// Hints that addr will be looked up soon (prefetches its home slot) and returns its hash,
// for the _hashed calls below: a replay then hashes each event's address once.
uint64_t mr_heapmap_prefetch(const mr_heapmap* m, uint64_t addr);
// addr's hash, as mr_heapmap_prefetch returns it.
uint64_t mr_heapmap_hash(const mr_heapmap* m, uint64_t addr);
// mr_heapmap_put and mr_heapmap_take with h = what mr_heapmap_prefetch returned for the
// block's address (still valid after the table grows: it is the whole hash).
int mr_heapmap_put_hashed(mr_heapmap* m, const mr_block* b, uint64_t h, mr_block* replaced,
                          bool* had);
bool mr_heapmap_take_hashed(mr_heapmap* m, uint64_t addr, uint64_t h, mr_block* out);
// Iteration: for (size_t i = 0; mr_heapmap_next(m, &i, &b);) ... (b: an mr_block, a copy)
bool mr_heapmap_next(const mr_heapmap* m, size_t* i, mr_block* b);
// Copies part k's blocks (m->parts[k].count of them) into out, in slot order.
void mr_heapmap_part_blocks(const mr_heapmap* m, size_t k, mr_block* out);
#endif
