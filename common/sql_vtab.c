// SPDX-License-Identifier: MIT
// The SQL views of a capture's events (memtrace/sql.h): the virtual tables `events` (the
// event chunks decoded on the fly and merged in seq order; constraints on seq, ts and heap
// choose which chunks are decoded at all) and `allocations` (each allocation paired with
// its free by replaying a heap in seq order, as the reports' replay pairs them), and the
// view `stacks`. Built twice: into memtrace_common and, with MT_SQL_EXTENSION, as the
// loadable SQLite extension memtrace_sqlite.so. Reads the capture; never writes it.
#define _GNU_SOURCE
#ifdef MT_SQL_EXTENSION
#include <sqlite3ext.h>
SQLITE_EXTENSION_INIT1
#else
#include <sqlite3.h>
#endif

#include "memtrace/codec.h"
#include "memtrace/schema.h"
#include "memtrace/sql.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

// Upper bound of events in one chunk; a larger count means a corrupt row (as the reader).
#define MAX_CHUNK_EVENTS (1u << 22)

// ---- chunk merge: the events of the selected chunks in (seq, heap) order

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
    chunk_info* chunks; // selected chunks, by seq_first
    size_t nchunks, next;
    chunk_events** heap; // min-heap of loaded chunks on their current event
    size_t nheap;
    event_bounds b;
    char* err; // sqlite3_malloc'd message after a failure
} chunk_merge;

static bool event_before(const mt_event* a, const mt_event* b) {
    return a->seq < b->seq || (a->seq == b->seq && a->heap < b->heap);
}

static const mt_event* top_event(const chunk_merge* m, size_t i) {
    return &m->heap[i]->ev[m->heap[i]->pos];
}

static void sift_down(chunk_merge* m, size_t i) {
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, s = i;
        if (l < m->nheap && event_before(top_event(m, l), top_event(m, s)))
            s = l;
        if (r < m->nheap && event_before(top_event(m, r), top_event(m, s)))
            s = r;
        if (s == i)
            return;
        chunk_events* t = m->heap[i];
        m->heap[i] = m->heap[s];
        m->heap[s] = t;
        i = s;
    }
}

static void sift_up(chunk_merge* m, size_t i) {
    while (i > 0) {
        size_t p = (i - 1) / 2;
        if (!event_before(top_event(m, i), top_event(m, p)))
            return;
        chunk_events* t = m->heap[i];
        m->heap[i] = m->heap[p];
        m->heap[p] = t;
        i = p;
    }
}

static void chunk_events_free(chunk_events* c) {
    if (c) {
        sqlite3_free(c->ev);
        sqlite3_free(c);
    }
}

static void merge_reset(chunk_merge* m) {
    for (size_t i = 0; i < m->nheap; i++)
        chunk_events_free(m->heap[i]);
    sqlite3_free(m->heap);
    sqlite3_free(m->chunks);
    sqlite3_free(m->err);
    m->heap = NULL;
    m->chunks = NULL;
    m->err = NULL;
    m->nheap = m->nchunks = m->next = 0;
}

static void merge_free(chunk_merge* m) {
    merge_reset(m);
    sqlite3_finalize(m->blob);
    m->blob = NULL;
}

static int merge_fail(chunk_merge* m, int rc, const char* what, int64_t id) {
    sqlite3_free(m->err);
    m->err = id ? sqlite3_mprintf("event chunk %lld is corrupt (%s)", (long long)id, what)
                : sqlite3_mprintf("%s", what);
    return rc;
}

static int merge_init(chunk_merge* m, sqlite3* db) {
    memset(m, 0, sizeof *m);
    m->db = db;
    sqlite3_stmt* st;
    if (sqlite3_prepare_v2(db, "PRAGMA main.user_version", -1, &st, NULL) != SQLITE_OK)
        return SQLITE_ERROR;
    int64_t version = sqlite3_step(st) == SQLITE_ROW ? sqlite3_column_int64(st, 0) : 0;
    sqlite3_finalize(st);
    // Schema 1 chunks have no checksum; since schema 2 every chunk has one.
    m->want_codec = version >= 2 ? MT_CODEC_VARINT_COLUMNS_CRC32C : MT_CODEC_VARINT_COLUMNS;
    return SQLITE_OK;
}

// Selects the chunks that may hold events inside b: the chunk bounds do the pushdown.
static int merge_start(chunk_merge* m, const event_bounds* b) {
    merge_reset(m);
    m->b = *b;
    sqlite3_stmt* st;
    int rc = sqlite3_prepare_v2(m->db,
                                "SELECT id, heap, seq_first, seq_last, ts_first, ts_last, count,"
                                " codec FROM main.event_chunk WHERE heap BETWEEN ?1 AND ?2"
                                " AND seq_last >= ?3 AND seq_first <= ?4 AND ts_last >= ?5"
                                " AND ts_first <= ?6 ORDER BY seq_first, heap, id",
                                -1, &st, NULL);
    if (rc != SQLITE_OK)
        return merge_fail(m, rc, sqlite3_errmsg(m->db), 0);
    const int64_t bind[] = {b->heap_lo, b->heap_hi, b->seq_lo, b->seq_hi, b->ts_lo, b->ts_hi};
    for (int i = 0; i < 6; i++)
        sqlite3_bind_int64(st, i + 1, bind[i]);
    size_t cap = 0;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (m->nchunks == cap) {
            cap = cap ? 2 * cap : 256;
            chunk_info* grown = sqlite3_realloc64(m->chunks, cap * sizeof *grown);
            if (!grown) {
                sqlite3_finalize(st);
                return merge_fail(m, SQLITE_NOMEM, "out of memory", 0);
            }
            m->chunks = grown;
        }
        chunk_info* c = &m->chunks[m->nchunks++];
        c->id = sqlite3_column_int64(st, 0);
        c->h = (mt_chunk_header){.heap = sqlite3_column_int64(st, 1),
                                 .seq_first = sqlite3_column_int64(st, 2),
                                 .seq_last = sqlite3_column_int64(st, 3),
                                 .ts_first = sqlite3_column_int64(st, 4),
                                 .ts_last = sqlite3_column_int64(st, 5),
                                 .count = sqlite3_column_int64(st, 6)};
        c->codec = sqlite3_column_int64(st, 7);
    }
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE)
        return merge_fail(m, rc, sqlite3_errmsg(m->db), 0);
    if (m->nchunks && !(m->heap = sqlite3_malloc64(m->nchunks * sizeof *m->heap)))
        return merge_fail(m, SQLITE_NOMEM, "out of memory", 0);
    return SQLITE_OK;
}

// Decodes the next selected chunk, after checking its checksum, onto the merge heap.
static int load_chunk(chunk_merge* m) {
    const chunk_info* c = &m->chunks[m->next++];
    if (c->codec != m->want_codec)
        return merge_fail(m, SQLITE_CORRUPT, "unexpected codec", c->id);
    if (c->h.count <= 0 || c->h.count > MAX_CHUNK_EVENTS || c->h.heap < 0 || c->h.heap > 255)
        return merge_fail(m, SQLITE_CORRUPT, "impossible event count or heap", c->id);
    if (!m->blob && sqlite3_prepare_v2(m->db, "SELECT data FROM main.event_chunk WHERE id=?1", -1,
                                       &m->blob, NULL) != SQLITE_OK)
        return merge_fail(m, SQLITE_ERROR, sqlite3_errmsg(m->db), 0);
    sqlite3_bind_int64(m->blob, 1, c->id);
    int rc = sqlite3_step(m->blob);
    if (rc != SQLITE_ROW) {
        sqlite3_reset(m->blob);
        return rc == SQLITE_DONE ? merge_fail(m, SQLITE_CORRUPT, "its row vanished", c->id)
                                 : merge_fail(m, rc, sqlite3_errmsg(m->db), 0);
    }
    const uint8_t* data = sqlite3_column_blob(m->blob, 0);
    size_t len = (size_t)sqlite3_column_bytes(m->blob, 0);
    if (c->codec == MT_CODEC_VARINT_COLUMNS_CRC32C) {
        long payload = mt_chunk_verify(&c->h, data, len);
        if (payload < 0) {
            sqlite3_reset(m->blob);
            return merge_fail(m, SQLITE_CORRUPT, "checksum mismatch", c->id);
        }
        len = (size_t)payload;
    }
    chunk_events* ce = sqlite3_malloc(sizeof *ce);
    mt_event* ev = sqlite3_malloc64((uint64_t)c->h.count * sizeof *ev);
    if (!ce || !ev) {
        sqlite3_free(ce);
        sqlite3_free(ev);
        sqlite3_reset(m->blob);
        return merge_fail(m, SQLITE_NOMEM, "out of memory", 0);
    }
    *ce = (chunk_events){ev, (size_t)c->h.count, 0};
    rc = mt_codec_decode(data, len, ce->n, (uint8_t)c->h.heap, ev);
    sqlite3_reset(m->blob);
    if (rc != 0 || ev[0].seq != (uint64_t)c->h.seq_first) {
        chunk_events_free(ce);
        return merge_fail(m, SQLITE_CORRUPT, "its events do not decode", c->id);
    }
    m->heap[m->nheap] = ce;
    sift_up(m, m->nheap++);
    return SQLITE_OK;
}

static bool in_bounds(const event_bounds* b, const mt_event* e) {
    return (int64_t)e->seq >= b->seq_lo && (int64_t)e->seq <= b->seq_hi && e->ts >= b->ts_lo &&
           e->ts <= b->ts_hi;
}

// The next event inside the bounds: 1 with *ev filled, 0 at the end, or an SQLite error.
static int merge_next(chunk_merge* m, mt_event* ev) {
    for (;;) {
        // An unread event of smaller seq lives in a chunk starting at or below it, so every
        // chunk starting at or below the smallest loaded seq is loaded first.
        while (m->next < m->nchunks &&
               (m->nheap == 0 || m->chunks[m->next].h.seq_first <= (int64_t)top_event(m, 0)->seq)) {
            int rc = load_chunk(m);
            if (rc != SQLITE_OK)
                return rc;
        }
        if (m->nheap == 0)
            return 0;
        chunk_events* c = m->heap[0];
        *ev = c->ev[c->pos++];
        if (c->pos == c->n) {
            m->heap[0] = m->heap[--m->nheap];
            chunk_events_free(c);
        }
        if (m->nheap > 0)
            sift_down(m, 0);
        if ((int64_t)ev->seq > m->b.seq_hi && m->next == m->nchunks &&
            (m->nheap == 0 || (int64_t)top_event(m, 0)->seq > m->b.seq_hi))
            return 0; // past the range: nothing left can be inside it
        if (in_bounds(&m->b, ev))
            return 1;
    }
}

// ---- constraint pushdown, shared by xBestIndex and xFilter

// idxStr holds one (column, operator) letter pair per argv value: column 's' seq, 't' ts,
// 'h' heap; operator '=', '<', '{' (<=), '>', '}' (>=).
static int best_index(sqlite3_vtab* vt, sqlite3_index_info* info, int seq_col, int ts_col,
                      int heap_col) {
    char* plan = sqlite3_malloc(2 * info->nConstraint + 1);
    if (!plan)
        return SQLITE_NOMEM;
    int argc = 0;
    double cost = 1e7;
    for (int i = 0; i < info->nConstraint; i++) {
        const struct sqlite3_index_constraint* c = &info->aConstraint[i];
        if (!c->usable)
            continue;
        char col = c->iColumn == seq_col    ? 's'
                   : c->iColumn == ts_col   ? 't'
                   : c->iColumn == heap_col ? 'h'
                                            : 0;
        char op = c->op == SQLITE_INDEX_CONSTRAINT_EQ   ? '='
                  : c->op == SQLITE_INDEX_CONSTRAINT_LT ? '<'
                  : c->op == SQLITE_INDEX_CONSTRAINT_LE ? '{'
                  : c->op == SQLITE_INDEX_CONSTRAINT_GT ? '>'
                  : c->op == SQLITE_INDEX_CONSTRAINT_GE ? '}'
                                                        : 0;
        if (!col || !op)
            continue;
        plan[2 * argc] = col;
        plan[2 * argc + 1] = op;
        // SQLite still checks every row (omit stays 0): the bounds only narrow the chunks.
        info->aConstraintUsage[i].argvIndex = ++argc;
        cost /= op == '=' ? 1000 : 10;
    }
    plan[2 * argc] = 0;
    info->idxStr = plan;
    info->needToFreeIdxStr = 1;
    info->estimatedCost = cost;
    info->estimatedRows = (sqlite3_int64)cost;
    (void)vt;
    return SQLITE_OK;
}

// An SQL value as a bound: a non-numeric value narrows nothing (SQLite compares it itself);
// a real is rounded outwards so no integer it admits is left out.
static bool value_bound(sqlite3_value* v, bool lower, int64_t* out) {
    int type = sqlite3_value_numeric_type(v);
    if (type == SQLITE_INTEGER) {
        *out = sqlite3_value_int64(v);
        return true;
    }
    if (type != SQLITE_FLOAT)
        return false;
    double d = sqlite3_value_double(v);
    if (d != d)
        return false;
    if (d <= -9.2e18 || d >= 9.2e18)
        return false;
    int64_t i = (int64_t)d; // toward zero
    if (lower && (double)i > d)
        i--;
    if (!lower && (double)i < d)
        i++;
    *out = i;
    return true;
}

static void narrow(int64_t* lo, int64_t* hi, char op, sqlite3_value* v) {
    int64_t x;
    bool lower = op == '>' || op == '}';
    if (!value_bound(v, lower || op == '=', &x))
        return;
    if (op == '=') {
        int64_t y;
        if (!value_bound(v, false, &y))
            return;
        if (x > *lo)
            *lo = x;
        if (y < *hi)
            *hi = y;
    } else if (op == '>' || op == '}') {
        if (op == '>' && x < INT64_MAX && sqlite3_value_numeric_type(v) == SQLITE_INTEGER)
            x++;
        if (x > *lo)
            *lo = x;
    } else {
        if (op == '<' && x > INT64_MIN && sqlite3_value_numeric_type(v) == SQLITE_INTEGER)
            x--;
        if (x < *hi)
            *hi = x;
    }
}

static event_bounds bounds_from(const char* plan, int argc, sqlite3_value** argv) {
    event_bounds b = {0, INT64_MAX, INT64_MIN, INT64_MAX, 0, 255};
    for (int i = 0; i < argc && plan && plan[2 * i]; i++) {
        char col = plan[2 * i], op = plan[2 * i + 1];
        int64_t* lo = col == 's' ? &b.seq_lo : col == 't' ? &b.ts_lo : &b.heap_lo;
        int64_t* hi = col == 's' ? &b.seq_hi : col == 't' ? &b.ts_hi : &b.heap_hi;
        narrow(lo, hi, op, argv[i]);
    }
    return b;
}

// ---- the virtual tables' common parts

typedef struct capture_vtab {
    sqlite3_vtab base;
    sqlite3* db;
} capture_vtab;

static int vtab_connect(sqlite3* db, const char* schema, sqlite3_vtab** out) {
    int rc = sqlite3_declare_vtab(db, schema);
    if (rc != SQLITE_OK)
        return rc;
    capture_vtab* vt = sqlite3_malloc(sizeof *vt);
    if (!vt)
        return SQLITE_NOMEM;
    memset(vt, 0, sizeof *vt);
    vt->db = db;
    sqlite3_vtab_config(db, SQLITE_VTAB_INNOCUOUS);
    *out = &vt->base;
    return SQLITE_OK;
}

static int vtab_disconnect(sqlite3_vtab* vt) {
    sqlite3_free(vt);
    return SQLITE_OK;
}

static sqlite3* cursor_db(sqlite3_vtab_cursor* cur) {
    return ((capture_vtab*)cur->pVtab)->db;
}

// Hands a merge failure's message to SQLite.
static int cursor_error(sqlite3_vtab_cursor* cur, chunk_merge* m, int rc) {
    sqlite3_free(cur->pVtab->zErrMsg);
    cur->pVtab->zErrMsg = sqlite3_mprintf("%s", m->err ? m->err : sqlite3_errstr(rc));
    return rc;
}

// ---- events

enum { EV_SEQ, EV_TS, EV_KIND, EV_HEAP, EV_TID, EV_ADDR, EV_SIZE, EV_CALLSITE };

typedef struct events_cursor {
    sqlite3_vtab_cursor base;
    chunk_merge m;
    mt_event ev;
    bool eof;
    sqlite3_int64 rowid;
} events_cursor;

static int events_connect(sqlite3* db, void* aux, int argc, const char* const* argv,
                          sqlite3_vtab** out, char** err) {
    (void)aux, (void)argc, (void)argv, (void)err;
    return vtab_connect(db,
                        "CREATE TABLE x(seq INTEGER, ts INTEGER, kind TEXT, heap INTEGER,"
                        " tid INTEGER, addr INTEGER, size INTEGER, callsite INTEGER)",
                        out);
}

static int events_best_index(sqlite3_vtab* vt, sqlite3_index_info* info) {
    // Rows come in seq order, so ORDER BY seq costs nothing.
    if (info->nOrderBy == 1 && info->aOrderBy[0].iColumn == EV_SEQ && !info->aOrderBy[0].desc)
        info->orderByConsumed = 1;
    return best_index(vt, info, EV_SEQ, EV_TS, EV_HEAP);
}

static int events_open(sqlite3_vtab* vt, sqlite3_vtab_cursor** out) {
    events_cursor* c = sqlite3_malloc(sizeof *c);
    if (!c)
        return SQLITE_NOMEM;
    memset(c, 0, sizeof *c);
    (void)vt;
    *out = &c->base;
    return SQLITE_OK;
}

static int events_close(sqlite3_vtab_cursor* cur) {
    events_cursor* c = (events_cursor*)cur;
    merge_free(&c->m);
    sqlite3_free(c);
    return SQLITE_OK;
}

static int events_next(sqlite3_vtab_cursor* cur) {
    events_cursor* c = (events_cursor*)cur;
    int rc = merge_next(&c->m, &c->ev);
    if (rc != 0 && rc != 1)
        return cursor_error(cur, &c->m, rc);
    c->eof = rc == 0;
    c->rowid++;
    return SQLITE_OK;
}

static int events_filter(sqlite3_vtab_cursor* cur, int idx, const char* plan, int argc,
                         sqlite3_value** argv) {
    events_cursor* c = (events_cursor*)cur;
    (void)idx;
    merge_free(&c->m);
    c->rowid = 0;
    event_bounds b = bounds_from(plan, argc, argv);
    int rc = merge_init(&c->m, cursor_db(cur));
    if (rc == SQLITE_OK)
        rc = merge_start(&c->m, &b);
    if (rc != SQLITE_OK)
        return cursor_error(cur, &c->m, rc);
    return events_next(cur);
}

static int events_eof(sqlite3_vtab_cursor* cur) {
    return ((events_cursor*)cur)->eof;
}

static int events_column(sqlite3_vtab_cursor* cur, sqlite3_context* ctx, int col) {
    const mt_event* e = &((events_cursor*)cur)->ev;
    switch (col) {
    case EV_SEQ:
        sqlite3_result_int64(ctx, (sqlite3_int64)e->seq);
        break;
    case EV_TS:
        sqlite3_result_int64(ctx, e->ts);
        break;
    case EV_KIND:
        sqlite3_result_text(ctx, mt_kind_name(e->kind), -1, SQLITE_STATIC);
        break;
    case EV_HEAP:
        sqlite3_result_int(ctx, e->heap);
        break;
    case EV_TID:
        sqlite3_result_int64(ctx, e->tid);
        break;
    case EV_ADDR:
        sqlite3_result_int64(ctx, (sqlite3_int64)e->addr);
        break;
    case EV_SIZE:
        sqlite3_result_int64(ctx, (sqlite3_int64)e->size);
        break;
    default:
        sqlite3_result_int64(ctx, e->callsite);
        break;
    }
    return SQLITE_OK;
}

static int events_rowid(sqlite3_vtab_cursor* cur, sqlite3_int64* rowid) {
    *rowid = ((events_cursor*)cur)->rowid;
    return SQLITE_OK;
}

static sqlite3_module events_module = {
    .xConnect = events_connect,
    .xBestIndex = events_best_index,
    .xDisconnect = vtab_disconnect,
    .xOpen = events_open,
    .xClose = events_close,
    .xFilter = events_filter,
    .xNext = events_next,
    .xEof = events_eof,
    .xColumn = events_column,
    .xRowid = events_rowid,
};

// ---- address map of the live blocks, for allocations

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

static size_t addr_hash(const addr_map* m, uint64_t a) {
    uint64_t h = 0;
    for (int i = 0; i < 8; i++, a >>= 8)
        h ^= m->table[i][a & 0xff];
    return (size_t)h;
}

static int map_init(addr_map* m) {
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

static void map_clear(addr_map* m) {
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
static int map_put(addr_map* m, const live_block* b, live_block* old, bool* had) {
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
static bool map_take(addr_map* m, uint64_t addr, live_block* out) {
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

// ---- allocations

enum { AL_SEQ, AL_TS, AL_SIZE, AL_TID, AL_CALLSITE, AL_FREED_TS, AL_FREED_TID, AL_ADDR, AL_HEAP };

typedef struct alloc_cursor {
    sqlite3_vtab_cursor base;
    chunk_merge m;
    addr_map live;
    int64_t* heaps; // the heaps with events, replayed one after the other
    size_t nheaps, heap_i;
    bool draining; // the heap's events are done: the blocks still live are the rows left
    size_t drain_i;
    live_block row;
    bool freed, freed_tid_known;
    int64_t freed_ts, freed_tid;
    bool eof;
    sqlite3_int64 rowid;
} alloc_cursor;

static int alloc_connect(sqlite3* db, void* aux, int argc, const char* const* argv,
                         sqlite3_vtab** out, char** err) {
    (void)aux, (void)argc, (void)argv, (void)err;
    return vtab_connect(db,
                        "CREATE TABLE x(seq INTEGER, ts INTEGER, size INTEGER, tid INTEGER,"
                        " callsite INTEGER, freed_ts INTEGER, freed_tid INTEGER, addr INTEGER,"
                        " heap INTEGER)",
                        out);
}

static int alloc_best_index(sqlite3_vtab* vt, sqlite3_index_info* info) {
    (void)vt;
    info->estimatedCost = 1e8; // pairing needs the whole replay: nothing narrows it
    return SQLITE_OK;
}

static int alloc_open(sqlite3_vtab* vt, sqlite3_vtab_cursor** out) {
    alloc_cursor* c = sqlite3_malloc(sizeof *c);
    if (!c)
        return SQLITE_NOMEM;
    memset(c, 0, sizeof *c);
    (void)vt;
    if (map_init(&c->live) != SQLITE_OK) {
        sqlite3_free(c);
        return SQLITE_NOMEM;
    }
    *out = &c->base;
    return SQLITE_OK;
}

static int alloc_close(sqlite3_vtab_cursor* cur) {
    alloc_cursor* c = (alloc_cursor*)cur;
    merge_free(&c->m);
    sqlite3_free(c->live.slots);
    sqlite3_free(c->heaps);
    sqlite3_free(c);
    return SQLITE_OK;
}

static int start_heap(alloc_cursor* c) {
    map_clear(&c->live);
    c->draining = false;
    c->drain_i = 0;
    event_bounds b = {0, INT64_MAX, INT64_MIN, INT64_MAX, c->heaps[c->heap_i], c->heaps[c->heap_i]};
    return merge_start(&c->m, &b);
}

// The next block still live at the end of the heap's events; false when none is left.
static bool next_unfreed(alloc_cursor* c) {
    addr_map* m = &c->live;
    for (; c->drain_i <= m->mask; c->drain_i++)
        if (m->slots[c->drain_i].addr) {
            c->row = m->slots[c->drain_i++];
            return true;
        }
    if (m->has_zero) {
        m->has_zero = false;
        c->row = m->zero;
        return true;
    }
    return false;
}

// Replays events until an allocation's row is complete: freed (or its address allocated
// again, which the reports' replay also takes as the end of the old block), or live at
// the end. Pairs exactly as the reports do, so the unfreed rows are the leaks.
static int alloc_next(sqlite3_vtab_cursor* cur) {
    alloc_cursor* c = (alloc_cursor*)cur;
    c->rowid++;
    for (;;) {
        if (c->heap_i == c->nheaps) {
            c->eof = true;
            return SQLITE_OK;
        }
        if (c->draining) {
            if (next_unfreed(c)) {
                c->freed = c->freed_tid_known = false;
                return SQLITE_OK;
            }
            if (++c->heap_i < c->nheaps) {
                int rc = start_heap(c);
                if (rc != SQLITE_OK)
                    return cursor_error(cur, &c->m, rc);
            }
            continue;
        }
        mt_event ev;
        int rc = merge_next(&c->m, &ev);
        if (rc == 0) {
            c->draining = true;
            continue;
        }
        if (rc != 1)
            return cursor_error(cur, &c->m, rc);
        if (mt_kind_is_alloc(ev.kind)) {
            live_block b = {ev.addr, ev.size, ev.seq, ev.ts, ev.callsite, ev.tid};
            bool had;
            if (map_put(&c->live, &b, &c->row, &had) != SQLITE_OK)
                return cursor_error(cur, &c->m,
                                    merge_fail(&c->m, SQLITE_NOMEM, "out of memory", 0));
            if (had) {
                c->freed = true;
                c->freed_tid_known = false; // no free was seen: the address was reused
                c->freed_ts = ev.ts;
                return SQLITE_OK;
            }
        } else if (mt_kind_is_free(ev.kind) && map_take(&c->live, ev.addr, &c->row)) {
            c->freed = c->freed_tid_known = true;
            c->freed_ts = ev.ts;
            c->freed_tid = ev.tid;
            return SQLITE_OK;
        }
    }
}

static int alloc_filter(sqlite3_vtab_cursor* cur, int idx, const char* plan, int argc,
                        sqlite3_value** argv) {
    alloc_cursor* c = (alloc_cursor*)cur;
    (void)idx, (void)plan, (void)argc, (void)argv;
    merge_free(&c->m);
    sqlite3_free(c->heaps);
    c->heaps = NULL;
    c->nheaps = c->heap_i = 0;
    c->eof = false;
    c->rowid = 0;
    int rc = merge_init(&c->m, cursor_db(cur));
    if (rc != SQLITE_OK)
        return cursor_error(cur, &c->m, rc);
    sqlite3_stmt* st;
    rc = sqlite3_prepare_v2(cursor_db(cur), "SELECT DISTINCT heap FROM main.event_chunk ORDER BY 1",
                            -1, &st, NULL);
    if (rc != SQLITE_OK)
        return cursor_error(cur, &c->m, merge_fail(&c->m, rc, sqlite3_errmsg(cursor_db(cur)), 0));
    size_t cap = 0;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (c->nheaps == cap) {
            cap = cap ? 2 * cap : 4;
            int64_t* grown = sqlite3_realloc64(c->heaps, cap * sizeof *grown);
            if (!grown) {
                rc = SQLITE_NOMEM;
                break;
            }
            c->heaps = grown;
        }
        c->heaps[c->nheaps++] = sqlite3_column_int64(st, 0);
    }
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE)
        return cursor_error(cur, &c->m, merge_fail(&c->m, rc, sqlite3_errstr(rc), 0));
    if (c->nheaps && (rc = start_heap(c)) != SQLITE_OK)
        return cursor_error(cur, &c->m, rc);
    return alloc_next(cur);
}

static int alloc_eof(sqlite3_vtab_cursor* cur) {
    return ((alloc_cursor*)cur)->eof;
}

static int alloc_column(sqlite3_vtab_cursor* cur, sqlite3_context* ctx, int col) {
    const alloc_cursor* c = (const alloc_cursor*)cur;
    const live_block* b = &c->row;
    switch (col) {
    case AL_SEQ:
        sqlite3_result_int64(ctx, (sqlite3_int64)b->seq);
        break;
    case AL_TS:
        sqlite3_result_int64(ctx, b->ts);
        break;
    case AL_SIZE:
        sqlite3_result_int64(ctx, (sqlite3_int64)b->size);
        break;
    case AL_TID:
        sqlite3_result_int64(ctx, b->tid);
        break;
    case AL_CALLSITE:
        sqlite3_result_int64(ctx, b->callsite);
        break;
    case AL_FREED_TS:
        if (c->freed)
            sqlite3_result_int64(ctx, c->freed_ts);
        break;
    case AL_FREED_TID:
        if (c->freed_tid_known)
            sqlite3_result_int64(ctx, c->freed_tid);
        break;
    case AL_ADDR:
        sqlite3_result_int64(ctx, (sqlite3_int64)b->addr);
        break;
    default:
        sqlite3_result_int64(ctx, c->heap_i < c->nheaps ? c->heaps[c->heap_i] : 0);
        break;
    }
    return SQLITE_OK;
}

static int alloc_rowid(sqlite3_vtab_cursor* cur, sqlite3_int64* rowid) {
    *rowid = ((alloc_cursor*)cur)->rowid;
    return SQLITE_OK;
}

static sqlite3_module alloc_module = {
    .xConnect = alloc_connect,
    .xBestIndex = alloc_best_index,
    .xDisconnect = vtab_disconnect,
    .xOpen = alloc_open,
    .xClose = alloc_close,
    .xFilter = alloc_filter,
    .xNext = alloc_next,
    .xEof = alloc_eof,
    .xColumn = alloc_column,
    .xRowid = alloc_rowid,
};

// ---- registration

// One row per frame of each callsite, depth 0 the leaf (the allocating function), as
// heaptrack and memray list a stack. The depth guard stops a damaged, cyclic tree.
#define STACKS_VIEW_SQL                                                                            \
    "CREATE TEMP VIEW IF NOT EXISTS stacks(callsite, depth, function, file, line, module) AS"      \
    " WITH RECURSIVE walk(callsite, node, depth) AS ("                                             \
    "  SELECT id, id, 0 FROM main.callsite"                                                        \
    "  UNION ALL SELECT w.callsite, c.parent_id, w.depth + 1 FROM walk w"                          \
    "  JOIN main.callsite c ON c.id = w.node WHERE c.parent_id != 0 AND w.depth < 100000)"         \
    " SELECT w.callsite, w.depth, f.function, f.file, f.line, m.path FROM walk w"                  \
    " JOIN main.callsite c ON c.id = w.node LEFT JOIN main.frame f ON f.id = c.frame_id"           \
    " LEFT JOIN main.mapping m ON m.id = f.mapping_id ORDER BY w.callsite, w.depth"

int mt_sql_register(sqlite3* db, char** errmsg) {
    int rc = sqlite3_create_module(db, "events", &events_module, NULL);
    if (rc == SQLITE_OK)
        rc = sqlite3_create_module(db, "allocations", &alloc_module, NULL);
    if (rc == SQLITE_OK)
        rc = sqlite3_exec(db, STACKS_VIEW_SQL, NULL, NULL, errmsg);
    return rc;
}

#ifdef MT_SQL_EXTENSION
// The entry point SQLite derives from the file name memtrace_sqlite.so.
int sqlite3_memtracesqlite_init(sqlite3* db, char** errmsg, const sqlite3_api_routines* api);
__attribute__((visibility("default"))) int
sqlite3_memtracesqlite_init(sqlite3* db, char** errmsg, const sqlite3_api_routines* api) {
    SQLITE_EXTENSION_INIT2(api);
    return mt_sql_register(db, errmsg);
}
#endif
