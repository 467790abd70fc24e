// SPDX-License-Identifier: MIT
// Inside common/ only: the parts of the SQL virtual tables (sql_vtab.c) that are not SQLite
// glue: the merge of event chunks in seq order with range pushdown (sql_merge.c) and the
// address map of live blocks that pairs allocations with frees (sql_addrmap.c).
#ifndef MEMTRACE_SQL_INTERNAL_H
#define MEMTRACE_SQL_INTERNAL_H

#ifdef MT_SQL_EXTENSION
#include <sqlite3ext.h>
#else
#include <sqlite3.h>
#endif

#include "memtrace/codec.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct chunk_info {
    int64_t id;
    mt_chunk_header h;
    int64_t codec;
} chunk_info;

typedef struct chunk_events {
    mt_event* ev;
    size_t n, pos;
} chunk_events;

// Which events a scan wants: inclusive bounds (the whole range when unconstrained).
typedef struct event_bounds {
    int64_t seq_lo, seq_hi, ts_lo, ts_hi, heap_lo, heap_hi;
} event_bounds;

typedef struct chunk_merge {
    sqlite3* db;
    sqlite3_stmt* blob; // SELECT data FROM event_chunk WHERE id=?
    int64_t want_codec;
    mt_chunk_coder* coder; // decodes the chunks; made at the first
    chunk_info* chunks;    // selected chunks, by seq_first
    size_t nchunks, next;
    chunk_events** heap; // min-heap of loaded chunks on their current event
    size_t nheap;
    event_bounds b;
    // No column wanted (count(*)): each selected chunk gives its header's count of empty
    // rows, undecoded (its checksum is not read either).
    bool headers_only;
    int64_t left; // rows left in the current chunk, headers_only
    char* err;    // sqlite3_malloc'd message after a failure
} chunk_merge;

// SQLite result codes; a failure leaves its message in m->err.
int mt_sql_merge_init(chunk_merge* m, sqlite3* db);
int mt_sql_merge_start(chunk_merge* m, const event_bounds* b);
// The next event: 1 with *ev filled (left untouched when headers_only), 0 at the end, or an
// SQLite error.
int mt_sql_merge_next(chunk_merge* m, mt_event* ev);
void mt_sql_merge_free(chunk_merge* m);
int mt_sql_merge_fail(chunk_merge* m, int rc, const char* what, int64_t id);

// The address map of the live blocks.
// Open addressing with linear probing, hashed by simple tabulation with random tables: the
// addresses come from the traced program, and with tables drawn after the capture was
// written no set of addresses can be made to collide (linear probing with tabulation
// hashing takes O(1) expected probes whatever the keys).
typedef struct live_block {
    uint64_t addr, size, seq;
    int64_t ts;
    uint32_t callsite, tid;
} live_block;

typedef struct addr_map {
    live_block* slots; // addr 0 marks an empty slot; a block at 0 is kept in `zero`
    size_t mask, count;
    bool has_zero;
    live_block zero;
    uint64_t table[8][256];
} addr_map;

int mt_sql_map_init(addr_map* m);
void mt_sql_map_clear(addr_map* m);
int mt_sql_map_put(addr_map* m, const live_block* b, live_block* old, bool* had);
bool mt_sql_map_take(addr_map* m, uint64_t addr, live_block* out);

#endif
