// SPDX-License-Identifier: MIT
// The live blocks by address, for the allocations table (sql_internal.h).
#define _GNU_SOURCE
#ifdef MT_SQL_EXTENSION
#include <sqlite3ext.h>
SQLITE_EXTENSION_INIT3
#else
#include <sqlite3.h>
#endif

#include "sql_internal.h"

#include "memtrace/schema.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

// ---- address map of the live blocks, for allocations

static size_t addr_hash(const addr_map* m, uint64_t a) {
    uint64_t h = 0;
    for (int i = 0; i < 8; i++, a >>= 8)
        h ^= m->table[i][a & 0xff];
    return (size_t)h;
}

int mt_sql_map_init(addr_map* m) {
    memset(m, 0, sizeof *m);
    if (getrandom(m->table, sizeof m->table, 0) != (ssize_t)sizeof m->table) {
        // No entropy source: a seeded generator still keeps the tables unknown in advance.
        uint64_t x = (uint64_t)time(NULL) ^ (uint64_t)(uintptr_t)m;
        for (int i = 0; i < 8; i++)
            for (int j = 0; j < 256; j++) {
                x += 0x9e3779b97f4a7c15ull;
                uint64_t z = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
                z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
                m->table[i][j] = z ^ (z >> 31);
            }
    }
    m->slots = sqlite3_malloc64(1024 * sizeof *m->slots);
    if (!m->slots)
        return SQLITE_NOMEM;
    memset(m->slots, 0, 1024 * sizeof *m->slots);
    m->mask = 1023;
    return SQLITE_OK;
}

void mt_sql_map_clear(addr_map* m) {
    memset(m->slots, 0, (m->mask + 1) * sizeof *m->slots);
    m->count = 0;
    m->has_zero = false;
}

static size_t map_find(const addr_map* m, uint64_t addr) {
    size_t i = addr_hash(m, addr) & m->mask;
    while (m->slots[i].addr && m->slots[i].addr != addr)
        i = (i + 1) & m->mask;
    return i;
}

static int map_grow(addr_map* m) {
    size_t cap = 2 * (m->mask + 1);
    live_block* old = m->slots;
    size_t oldcap = m->mask + 1;
    live_block* slots = sqlite3_malloc64(cap * sizeof *slots);
    if (!slots)
        return SQLITE_NOMEM;
    memset(slots, 0, cap * sizeof *slots);
    m->slots = slots;
    m->mask = cap - 1;
    for (size_t i = 0; i < oldcap; i++)
        if (old[i].addr)
            m->slots[map_find(m, old[i].addr)] = old[i];
    sqlite3_free(old);
    return SQLITE_OK;
}

// Inserts b; a block already live at that address is returned in *old (had = true).
int mt_sql_map_put(addr_map* m, const live_block* b, live_block* old, bool* had) {
    if (b->addr == 0) {
        *had = m->has_zero;
        *old = m->zero;
        m->zero = *b;
        m->has_zero = true;
        return SQLITE_OK;
    }
    if (2 * (m->count + 1) > m->mask + 1 && map_grow(m) != SQLITE_OK)
        return SQLITE_NOMEM;
    size_t i = map_find(m, b->addr);
    *had = m->slots[i].addr != 0;
    *old = m->slots[i];
    if (!*had)
        m->count++;
    m->slots[i] = *b;
    return SQLITE_OK;
}

// Removes the block at addr into *out; false when none is live there.
bool mt_sql_map_take(addr_map* m, uint64_t addr, live_block* out) {
    if (addr == 0) {
        *out = m->zero;
        bool had = m->has_zero;
        m->has_zero = false;
        return had;
    }
    size_t i = map_find(m, addr);
    if (!m->slots[i].addr)
        return false;
    *out = m->slots[i];
    m->count--;
    // Backward-shift deletion: pull later entries of the probe run into the hole.
    for (size_t j = i;;) {
        j = (j + 1) & m->mask;
        if (!m->slots[j].addr)
            break;
        size_t home = addr_hash(m, m->slots[j].addr) & m->mask;
        if (((j - home) & m->mask) >= ((j - i) & m->mask)) {
            m->slots[i] = m->slots[j];
            i = j;
        }
    }
    m->slots[i].addr = 0;
    return true;
}
