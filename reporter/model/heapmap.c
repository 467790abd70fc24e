// SPDX-License-Identifier: MIT
// Live-block hash table (see heapmap.h for why the hash is keyed SipHash and split in parts).
#include "heapmap.h"

#include "siphash.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

enum { PART_MIN_SLOTS = 16 };

typedef struct where {
    mr_heapmap_part* part;
    size_t slot;
} where;

static uint64_t hash_of(const mr_heapmap* m, uint64_t addr) {
    return mr_siphash_u64(m->k0, m->k1, addr);
}

static size_t part_index(uint64_t h) {
    return (size_t)(h >> (64 - MR_HEAPMAP_PART_BITS));
}

static where home_of_hash(const mr_heapmap* m, uint64_t h) {
    mr_heapmap_part* p = (mr_heapmap_part*)&m->parts[part_index(h)];
    return (where){p, (size_t)h & p->mask};
}

static where home_of(const mr_heapmap* m, uint64_t addr) {
    return home_of_hash(m, hash_of(m, addr));
}

int mr_heapmap_init(mr_heapmap* m) {
    memset(m, 0, sizeof *m);
    uint64_t key[2];
    mr_siphash_random_key(key, m);
    m->k0 = key[0];
    m->k1 = key[1];
    for (size_t i = 0; i < MR_HEAPMAP_PARTS; i++) {
        mr_heapmap_part* p = &m->parts[i];
        if (!(p->slots = calloc(PART_MIN_SLOTS, sizeof *p->slots))) {
            mr_heapmap_free(m);
            return -ENOMEM;
        }
        p->mask = PART_MIN_SLOTS - 1;
    }
    return 0;
}

void mr_heapmap_free(mr_heapmap* m) {
    for (size_t i = 0; i < MR_HEAPMAP_PARTS; i++)
        free(m->parts[i].slots);
    memset(m, 0, sizeof *m);
}

// Zeroed slots. A large table is asked for in 2 MiB pages: a replay touches its slots at
// random, and with 4 KiB pages most lookups would also miss the TLB.
static mr_block* new_slots(size_t cap) {
    enum { HUGE_PAGE = 2 << 20 };
    size_t bytes = cap * sizeof(mr_block);
    if (bytes < HUGE_PAGE)
        return calloc(cap, sizeof(mr_block));
    void* p;
    if (posix_memalign(&p, HUGE_PAGE, bytes))
        return NULL;
    madvise(p, bytes, MADV_HUGEPAGE); // only a hint: without it the pages are small
    return memset(p, 0, bytes);
}

static int grow(const mr_heapmap* m, mr_heapmap_part* p) {
    size_t oldcap = p->mask + 1, cap = oldcap * 2;
    mr_block* slots = new_slots(cap);
    if (!slots)
        return -ENOMEM;
    for (size_t i = 0; i < oldcap; i++) {
        if (!p->slots[i].addr)
            continue;
        size_t j = (size_t)hash_of(m, p->slots[i].addr) & (cap - 1);
        while (slots[j].addr)
            j = (j + 1) & (cap - 1);
        slots[j] = p->slots[i];
    }
    free(p->slots);
    p->slots = slots;
    p->mask = cap - 1;
    return 0;
}

// The slot holding addr, or the empty slot ending its probe chain.
static size_t probe(const mr_heapmap_part* p, size_t i, uint64_t addr) {
    while (p->slots[i].addr && p->slots[i].addr != addr)
        i = (i + 1) & p->mask;
    return i;
}

int mr_heapmap_put(mr_heapmap* m, const mr_block* b, mr_block* replaced, bool* had) {
    return mr_heapmap_put_hashed(m, b, hash_of(m, b->addr), replaced, had);
}

int mr_heapmap_put_hashed(mr_heapmap* m, const mr_block* b, uint64_t h, mr_block* replaced,
                          bool* had) {
    if (had)
        *had = false;
    where w = home_of_hash(m, h);
    // At most half full: linear probing's miss cost grows fast beyond (8.5 probes at 75%).
    if ((w.part->count + 1) * 2 > w.part->mask + 1) {
        if (grow(m, w.part))
            return -ENOMEM;
        w = home_of_hash(m, h);
    }
    mr_block* s = &w.part->slots[probe(w.part, w.slot, b->addr)];
    if (s->addr) {
        if (replaced)
            *replaced = *s;
        if (had)
            *had = true;
    } else {
        w.part->count++;
        m->count++;
    }
    *s = *b;
    return 0;
}

uint64_t mr_heapmap_hash(const mr_heapmap* m, uint64_t addr) {
    return hash_of(m, addr);
}

uint64_t mr_heapmap_prefetch(const mr_heapmap* m, uint64_t addr) {
    uint64_t h = hash_of(m, addr);
    where w = home_of_hash(m, h);
    __builtin_prefetch(&w.part->slots[w.slot]);
    return h;
}

const mr_block* mr_heapmap_get(const mr_heapmap* m, uint64_t addr) {
    if (!addr)
        return NULL;
    where w = home_of(m, addr);
    const mr_block* s = &w.part->slots[probe(w.part, w.slot, addr)];
    return s->addr ? s : NULL;
}

bool mr_heapmap_take(mr_heapmap* m, uint64_t addr, mr_block* out) {
    return mr_heapmap_take_hashed(m, addr, hash_of(m, addr), out);
}

bool mr_heapmap_take_hashed(mr_heapmap* m, uint64_t addr, uint64_t h, mr_block* out) {
    if (!addr)
        return false;
    where w = home_of_hash(m, h);
    mr_heapmap_part* p = w.part;
    size_t i = probe(p, w.slot, addr);
    if (!p->slots[i].addr)
        return false;
    if (out)
        *out = p->slots[i];
    // Backward-shift deletion keeps every probe chain unbroken without tombstones.
    size_t j = i;
    for (;;) {
        j = (j + 1) & p->mask;
        if (!p->slots[j].addr)
            break;
        size_t home = (size_t)hash_of(m, p->slots[j].addr) & p->mask;
        // Move j back to i unless its home lies cyclically in (i, j].
        bool stays = (i <= j) ? (home > i && home <= j) : (home > i || home <= j);
        if (!stays) {
            p->slots[i] = p->slots[j];
            i = j;
        }
    }
    p->slots[i].addr = 0;
    p->count--;
    m->count--;
    return true;
}

// *i counts slots across the parts in order: part k's slot s is at k * 2^40 + s (a part
// never holds 2^40 slots).
bool mr_heapmap_next(const mr_heapmap* m, size_t* i, const mr_block** b) {
    enum { SLOT_BITS = 40 };
    for (size_t k = *i >> SLOT_BITS; k < MR_HEAPMAP_PARTS; k++) {
        const mr_heapmap_part* p = &m->parts[k];
        size_t s = k == *i >> SLOT_BITS ? *i & (((size_t)1 << SLOT_BITS) - 1) : 0;
        for (; s <= p->mask; s++) {
            if (p->slots[s].addr) {
                *b = &p->slots[s];
                *i = (k << SLOT_BITS) + s + 1;
                return true;
            }
        }
    }
    *i = (size_t)MR_HEAPMAP_PARTS << SLOT_BITS;
    return false;
}
