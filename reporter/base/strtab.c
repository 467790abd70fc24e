// SPDX-License-Identifier: MIT
// The interned-string table (strtab.h): ids in insertion order, a power-of-two slot array
// of ids with linear probing, kept at most half full.
#include "strtab.h"

#include "siphash.h"

#include "memtrace/vec.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define INITIAL_SLOTS 256

int mr_strtab_init(mr_strtab* t) {
    memset(t, 0, sizeof *t);
    uint64_t key[2];
    mr_siphash_random_key(key, t);
    t->k0 = key[0];
    t->k1 = key[1];
    t->slots = malloc(INITIAL_SLOTS * sizeof *t->slots);
    if (!t->slots)
        return -ENOMEM;
    memset(t->slots, 0xff, INITIAL_SLOTS * sizeof *t->slots); // MR_STRTAB_NONE
    t->mask = INITIAL_SLOTS - 1;
    return 0;
}

void mr_strtab_free(mr_strtab* t) {
    for (size_t i = 0; i < t->n; i++)
        free(t->strings[i]);
    free(t->strings);
    free(t->hashes);
    free(t->slots);
    memset(t, 0, sizeof *t);
}

// The slot holding s (hash h), or the empty slot where it would go.
static size_t slot_of(const mr_strtab* t, const char* s, uint64_t h) {
    size_t i = (size_t)h & t->mask;
    for (uint32_t id; (id = t->slots[i]) != MR_STRTAB_NONE; i = (i + 1) & t->mask)
        if (t->hashes[id] == h && !strcmp(t->strings[id], s))
            break;
    return i;
}

static int grow(mr_strtab* t) {
    size_t nslots = (t->mask + 1) * 2;
    uint32_t* slots = malloc(nslots * sizeof *slots);
    if (!slots)
        return -ENOMEM;
    memset(slots, 0xff, nslots * sizeof *slots);
    free(t->slots);
    t->slots = slots;
    t->mask = nslots - 1;
    for (uint32_t id = 0; id < t->n; id++) {
        size_t i = (size_t)t->hashes[id] & t->mask;
        while (slots[i] != MR_STRTAB_NONE)
            i = (i + 1) & t->mask;
        slots[i] = id;
    }
    return 0;
}

uint32_t mr_strtab_find(const mr_strtab* t, const char* s) {
    return t->slots[slot_of(t, s, mr_siphash_bytes(t->k0, t->k1, s, strlen(s)))];
}

int mr_strtab_intern(mr_strtab* t, const char* s, uint32_t* id, bool* added) {
    uint64_t h = mr_siphash_bytes(t->k0, t->k1, s, strlen(s));
    size_t i = slot_of(t, s, h);
    if (added)
        *added = t->slots[i] == MR_STRTAB_NONE;
    if (t->slots[i] != MR_STRTAB_NONE) {
        *id = t->slots[i];
        return 0;
    }
    if (t->n >= MR_STRTAB_NONE)
        return -ENOMEM;
    // Both arrays share one capacity: it grows once both have.
    size_t cap_strings = t->cap, cap_hashes = t->cap;
    char* copy = strdup(s);
    if (!copy || MT_VEC_RESERVE(&t->strings, &cap_strings, t->n + 1) ||
        MT_VEC_RESERVE(&t->hashes, &cap_hashes, t->n + 1)) {
        free(copy);
        return -ENOMEM;
    }
    t->cap = cap_strings < cap_hashes ? cap_strings : cap_hashes;
    if ((t->n + 1) * 2 > t->mask + 1) {
        if (grow(t)) {
            free(copy);
            return -ENOMEM;
        }
        i = slot_of(t, s, h);
    }
    *id = (uint32_t)t->n;
    t->strings[t->n] = copy;
    t->hashes[t->n++] = h;
    t->slots[i] = *id;
    return 0;
}
