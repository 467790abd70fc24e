// SPDX-License-Identifier: MIT
#include "u64map.h"

#include "siphash.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define INITIAL_CAP 64

static size_t slot_of(const mr_u64map* m, uint64_t key) {
    return (size_t)mr_siphash_u64(m->k0, m->k1, key) & m->mask;
}

int mr_u64map_init(mr_u64map* m) {
    memset(m, 0, sizeof *m);
    uint64_t key[2];
    mr_siphash_random_key(key, m);
    m->k0 = key[0];
    m->k1 = key[1];
    m->slots = calloc(INITIAL_CAP, sizeof *m->slots);
    if (!m->slots)
        return -ENOMEM;
    m->mask = INITIAL_CAP - 1;
    return 0;
}

void mr_u64map_free(mr_u64map* m) {
    free(m->slots);
    memset(m, 0, sizeof *m);
}

static int grow(mr_u64map* m) {
    size_t oldcap = m->mask + 1;
    mr_u64map_slot* old = m->slots;
    mr_u64map_slot* slots = calloc(oldcap * 2, sizeof *slots);
    if (!slots)
        return -ENOMEM;
    m->slots = slots;
    m->mask = oldcap * 2 - 1;
    for (size_t i = 0; i < oldcap; i++) {
        if (!old[i].key)
            continue;
        size_t j = slot_of(m, old[i].key);
        while (slots[j].key)
            j = (j + 1) & m->mask;
        slots[j] = old[i];
    }
    free(old);
    return 0;
}

uint64_t* mr_u64map_get(mr_u64map* m, uint64_t key) {
    if (!key)
        return m->has_zero ? &m->zero_val : NULL;
    for (size_t i = slot_of(m, key); m->slots[i].key; i = (i + 1) & m->mask)
        if (m->slots[i].key == key)
            return &m->slots[i].val;
    return NULL;
}

int mr_u64map_put(mr_u64map* m, uint64_t key, uint64_t val) {
    uint64_t* have = mr_u64map_get(m, key);
    if (have) {
        *have = val;
        return 0;
    }
    if (!key) {
        m->has_zero = true;
        m->zero_val = val;
        m->count++;
        return 0;
    }
    // At most half full: linear probing's miss cost grows fast beyond.
    if ((m->count + 1) * 2 > m->mask + 1 && grow(m))
        return -ENOMEM;
    size_t i = slot_of(m, key);
    while (m->slots[i].key)
        i = (i + 1) & m->mask;
    m->slots[i] = (mr_u64map_slot){key, val};
    m->count++;
    return 0;
}

bool mr_u64map_next(const mr_u64map* m, size_t* i, uint64_t* key, uint64_t* val) {
    for (; *i <= m->mask; (*i)++) {
        if (m->slots[*i].key) {
            *key = m->slots[*i].key;
            *val = m->slots[(*i)++].val;
            return true;
        }
    }
    if (*i == m->mask + 1 && m->has_zero) {
        (*i)++;
        *key = 0;
        *val = m->zero_val;
        return true;
    }
    return false;
}
