// SPDX-License-Identifier: MIT
// Live-block hash table (see heapmap.h for why the hash is keyed SipHash).
#include "heapmap.h"

#include "siphash.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static size_t slot_of(const mr_heapmap* m, uint64_t addr) {
    return (size_t)mr_siphash_u64(m->k0, m->k1, addr) & m->mask;
}

int mr_heapmap_init(mr_heapmap* m) {
    memset(m, 0, sizeof *m);
    uint64_t key[2];
    mr_siphash_random_key(key, m);
    m->k0 = key[0];
    m->k1 = key[1];
    m->slots = calloc(1024, sizeof *m->slots);
    if (!m->slots)
        return -ENOMEM;
    m->mask = 1023;
    return 0;
}

void mr_heapmap_free(mr_heapmap* m) {
    free(m->slots);
    memset(m, 0, sizeof *m);
}

static int grow(mr_heapmap* m) {
    size_t cap = (m->mask + 1) * 2;
    mr_block* old = m->slots;
    size_t oldcap = m->mask + 1;
    mr_block* slots = calloc(cap, sizeof *slots);
    if (!slots)
        return -ENOMEM;
    m->slots = slots;
    m->mask = cap - 1;
    for (size_t i = 0; i < oldcap; i++) {
        if (!old[i].addr)
            continue;
        size_t j = slot_of(m, old[i].addr);
        while (slots[j].addr)
            j = (j + 1) & m->mask;
        slots[j] = old[i];
    }
    free(old);
    return 0;
}

int mr_heapmap_put(mr_heapmap* m, const mr_block* b, mr_block* replaced, bool* had) {
    if (had)
        *had = false;
    // At most half full: linear probing's miss cost grows fast beyond (8.5 probes at 75%).
    if ((m->count + 1) * 2 > m->mask + 1 && grow(m))
        return -ENOMEM;
    size_t i = slot_of(m, b->addr);
    while (m->slots[i].addr) {
        if (m->slots[i].addr == b->addr) {
            if (replaced)
                *replaced = m->slots[i];
            if (had)
                *had = true;
            m->slots[i] = *b;
            return 0;
        }
        i = (i + 1) & m->mask;
    }
    m->slots[i] = *b;
    m->count++;
    return 0;
}

void mr_heapmap_prefetch(const mr_heapmap* m, uint64_t addr) {
    __builtin_prefetch(&m->slots[slot_of(m, addr)]);
}

const mr_block* mr_heapmap_get(const mr_heapmap* m, uint64_t addr) {
    if (!addr)
        return NULL;
    for (size_t i = slot_of(m, addr); m->slots[i].addr; i = (i + 1) & m->mask)
        if (m->slots[i].addr == addr)
            return &m->slots[i];
    return NULL;
}

bool mr_heapmap_take(mr_heapmap* m, uint64_t addr, mr_block* out) {
    const mr_block* found = mr_heapmap_get(m, addr);
    if (!found)
        return false;
    size_t i = (size_t)(found - m->slots);
    if (out)
        *out = *found;
    // Backward-shift deletion keeps every probe chain unbroken without tombstones.
    size_t j = i;
    for (;;) {
        j = (j + 1) & m->mask;
        if (!m->slots[j].addr)
            break;
        size_t home = slot_of(m, m->slots[j].addr);
        // Move j back to i unless its home lies cyclically in (i, j].
        bool stays = (i <= j) ? (home > i && home <= j) : (home > i || home <= j);
        if (!stays) {
            m->slots[i] = m->slots[j];
            i = j;
        }
    }
    m->slots[i].addr = 0;
    m->count--;
    return true;
}

bool mr_heapmap_next(const mr_heapmap* m, size_t* i, const mr_block** b) {
    for (; *i <= m->mask; (*i)++) {
        if (m->slots[*i].addr) {
            *b = &m->slots[(*i)++];
            return true;
        }
    }
    return false;
}
