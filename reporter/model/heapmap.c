// SPDX-License-Identifier: MIT
// Live-block hash table (see heapmap.h for why the hash is keyed SipHash and split in parts).
#include "heapmap.h"

#include "siphash.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

enum { PART_MIN_SLOTS = 16, HUGE_PAGE = 2 << 20 };

// A part holds at most 4/5 of its slots: with the hashes kept in the slots a longer probe
// chain costs reads of adjacent slots, not hashing (linear probing's miss cost: 13 slots at
// 4/5, against 8.5 at 3/4 and 2.5 at 1/2).
#define LOAD_NUM 4
#define LOAD_DEN 5

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

// The home slot of a hash: its low 32 bits scaled to the part's capacity (any capacity, not
// only powers of two; independent of the top bits that chose the part).
static size_t home_in(const mr_heapmap_part* p, uint32_t hash) {
    return (size_t)(((uint64_t)hash * p->cap) >> 32);
}

static where home_of_hash(const mr_heapmap* m, uint64_t h) {
    mr_heapmap_part* p = (mr_heapmap_part*)&m->parts[part_index(h)];
    return (where){p, home_in(p, (uint32_t)h)};
}

static size_t next_slot(const mr_heapmap_part* p, size_t i) {
    return i + 1 == p->cap ? 0 : i + 1;
}

static void set_cap(mr_heapmap_part* p, size_t cap) {
    p->cap = cap;
    p->limit = cap / LOAD_DEN * LOAD_NUM + cap % LOAD_DEN * LOAD_NUM / LOAD_DEN;
}

int mr_heapmap_init(mr_heapmap* m) {
    memset(m, 0, sizeof *m);
    uint64_t key[2];
    mr_siphash_random_key(key, m);
    m->k0 = key[0];
    m->k1 = key[1];
    if (mr_u64map_init(&m->big))
        return -ENOMEM;
    for (size_t i = 0; i < MR_HEAPMAP_PARTS; i++) {
        mr_heapmap_part* p = &m->parts[i];
        if (!(p->slots = calloc(PART_MIN_SLOTS, sizeof *p->slots))) {
            mr_heapmap_free(m);
            return -ENOMEM;
        }
        set_cap(p, PART_MIN_SLOTS);
    }
    return 0;
}

void mr_heapmap_free(mr_heapmap* m) {
    for (size_t i = 0; i < MR_HEAPMAP_PARTS; i++)
        free(m->parts[i].slots);
    mr_u64map_free(&m->big);
    memset(m, 0, sizeof *m);
}

// Zeroed slots. A large table is asked for in whole 2 MiB pages: a replay touches its slots
// at random, and with 4 KiB pages most lookups would also miss the TLB.
static mr_heapmap_slot* new_slots(size_t cap) {
    size_t bytes = cap * sizeof(mr_heapmap_slot);
    if (bytes < HUGE_PAGE)
        return calloc(cap, sizeof(mr_heapmap_slot));
    void* p;
    if (posix_memalign(&p, HUGE_PAGE, bytes))
        return NULL;
    madvise(p, bytes, MADV_HUGEPAGE); // only a hint: without it the pages are small
    return memset(p, 0, bytes);
}

// The next capacity of a part of cap slots: double while small; then a quarter more,
// rounded up to whole 2 MiB pages (the pages it takes anyway), so that a part is 64-80%
// full after it grows, not 25-50% as when doubling from half full.
static size_t next_cap(size_t cap) {
    if (cap * 2 * sizeof(mr_heapmap_slot) <= HUGE_PAGE)
        return cap * 2;
    size_t bytes = cap * sizeof(mr_heapmap_slot);
    bytes += bytes / 4;
    bytes = (bytes + HUGE_PAGE - 1) / HUGE_PAGE * HUGE_PAGE;
    return bytes / sizeof(mr_heapmap_slot);
}

static int grow(mr_heapmap_part* p) {
    size_t cap = next_cap(p->cap);
    if (cap > UINT32_MAX)
        return -ENOMEM;
    mr_heapmap_slot* slots = new_slots(cap);
    if (!slots)
        return -ENOMEM;
    mr_heapmap_part grown = {.slots = slots};
    set_cap(&grown, cap);
    for (size_t i = 0; i < p->cap; i++) {
        if (!p->slots[i].addr)
            continue;
        size_t j = home_in(&grown, p->slots[i].hash);
        while (slots[j].addr)
            j = next_slot(&grown, j);
        slots[j] = p->slots[i];
    }
    free(p->slots);
    grown.count = p->count;
    *p = grown;
    return 0;
}

// The slot holding addr, or the empty slot ending its probe chain.
static size_t probe(const mr_heapmap_part* p, size_t i, uint64_t addr) {
    while (p->slots[i].addr && p->slots[i].addr != addr)
        i = next_slot(p, i);
    return i;
}

static void to_block(const mr_heapmap* m, const mr_heapmap_slot* s, mr_block* b) {
    b->addr = s->addr;
    b->id = s->payload;
    if (s->size != MR_HEAPMAP_BIG) {
        b->size = s->size;
    } else {
        const uint64_t* size = mr_u64map_get((mr_u64map*)&m->big, s->addr);
        b->size = size ? *size : 0; // always there: put stored it first
    }
}

int mr_heapmap_put(mr_heapmap* m, const mr_block* b, mr_block* replaced, bool* had) {
    return mr_heapmap_put_hashed(m, b, hash_of(m, b->addr), replaced, had);
}

int mr_heapmap_put_hashed(mr_heapmap* m, const mr_block* b, uint64_t h, mr_block* replaced,
                          bool* had) {
    if (had)
        *had = false;
    where w = home_of_hash(m, h);
    if (w.part->count >= w.part->limit) {
        if (grow(w.part))
            return -ENOMEM;
        w = home_of_hash(m, h);
    }
    mr_heapmap_slot* s = &w.part->slots[probe(w.part, w.slot, b->addr)];
    if (s->addr) {
        if (replaced)
            to_block(m, s, replaced);
        if (had)
            *had = true;
    } else {
        w.part->count++;
        m->count++;
    }
    // The old block's size is read above before a big one takes its place in `big`.
    if (b->size >= MR_HEAPMAP_BIG && mr_u64map_put(&m->big, b->addr, b->size)) {
        if (!s->addr) { // nothing was put: the counts go back
            w.part->count--;
            m->count--;
        }
        return -ENOMEM;
    }
    *s = (mr_heapmap_slot){.addr = b->addr,
                           .payload = b->id,
                           .size = b->size >= MR_HEAPMAP_BIG ? MR_HEAPMAP_BIG : (uint32_t)b->size,
                           .hash = (uint32_t)h};
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

bool mr_heapmap_get(const mr_heapmap* m, uint64_t addr, mr_block* out) {
    if (!addr)
        return false;
    where w = home_of_hash(m, hash_of(m, addr));
    const mr_heapmap_slot* s = &w.part->slots[probe(w.part, w.slot, addr)];
    if (!s->addr)
        return false;
    if (out)
        to_block(m, s, out);
    return true;
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
        to_block(m, &p->slots[i], out);
    // Backward-shift deletion keeps every probe chain unbroken without tombstones.
    size_t j = i;
    for (;;) {
        j = next_slot(p, j);
        if (!p->slots[j].addr)
            break;
        size_t home = home_in(p, p->slots[j].hash);
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
bool mr_heapmap_next(const mr_heapmap* m, size_t* i, mr_block* b) {
    enum { SLOT_BITS = 40 };
    for (size_t k = *i >> SLOT_BITS; k < MR_HEAPMAP_PARTS; k++) {
        const mr_heapmap_part* p = &m->parts[k];
        size_t s = k == *i >> SLOT_BITS ? *i & (((size_t)1 << SLOT_BITS) - 1) : 0;
        for (; s < p->cap; s++) {
            if (p->slots[s].addr) {
                to_block(m, &p->slots[s], b);
                *i = (k << SLOT_BITS) + s + 1;
                return true;
            }
        }
    }
    *i = (size_t)MR_HEAPMAP_PARTS << SLOT_BITS;
    return false;
}

void mr_heapmap_part_blocks(const mr_heapmap* m, size_t k, mr_block* out) {
    const mr_heapmap_part* p = &m->parts[k];
    for (size_t i = 0, n = 0; n < p->count && i < p->cap; i++)
        if (p->slots[i].addr)
            to_block(m, &p->slots[i], &out[n++]);
}
