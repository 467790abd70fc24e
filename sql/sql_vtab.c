// SPDX-License-Identifier: MIT
// The SQL views of a capture's events (memtrace/sql.h): the virtual tables `events` (the
// event chunks decoded on the fly and merged in seq order; constraints on seq, ts and heap
// choose which chunks are decoded at all), `allocations` (each allocation paired with its
// free by replaying a heap in seq order, as the reports' replay pairs them) and `stacks`
// (each callsite's frames, walked only for the callsites a query names). Built twice: into
// memtrace_sql and, with MT_SQL_EXTENSION, as the loadable SQLite extension
// memtrace_sqlite.so. Reads the capture; never writes it.
#define _GNU_SOURCE
#ifdef MT_SQL_EXTENSION
#include <sqlite3ext.h>
SQLITE_EXTENSION_INIT1
#else
#include <sqlite3.h>
#endif

#include "sql_internal.h"

#include "memtrace/capture.h"
#include "memtrace/codec.h"
#include "memtrace/schema.h"
#include "memtrace/sql.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

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
    // No column used anywhere in the statement (count(*)): the rows need not be decoded.
    info->idxNum = info->colUsed == 0;
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
    mt_sql_merge_free(&c->m);
    sqlite3_free(c);
    return SQLITE_OK;
}

static int events_next(sqlite3_vtab_cursor* cur) {
    events_cursor* c = (events_cursor*)cur;
    int rc = mt_sql_merge_next(&c->m, &c->ev);
    if (rc != 0 && rc != 1)
        return cursor_error(cur, &c->m, rc);
    c->eof = rc == 0;
    c->rowid++;
    return SQLITE_OK;
}

static int events_filter(sqlite3_vtab_cursor* cur, int idx, const char* plan, int argc,
                         sqlite3_value** argv) {
    events_cursor* c = (events_cursor*)cur;
    mt_sql_merge_free(&c->m);
    c->rowid = 0;
    event_bounds b = bounds_from(plan, argc, argv);
    int rc = mt_sql_merge_init(&c->m, cursor_db(cur));
    if (rc == SQLITE_OK)
        rc = mt_sql_merge_start(&c->m, &b);
    if (rc != SQLITE_OK)
        return cursor_error(cur, &c->m, rc);
    c->m.headers_only = idx == 1;
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
    if (mt_sql_map_init(&c->live) != SQLITE_OK) {
        sqlite3_free(c);
        return SQLITE_NOMEM;
    }
    *out = &c->base;
    return SQLITE_OK;
}

static int alloc_close(sqlite3_vtab_cursor* cur) {
    alloc_cursor* c = (alloc_cursor*)cur;
    mt_sql_merge_free(&c->m);
    sqlite3_free(c->live.slots);
    sqlite3_free(c->heaps);
    sqlite3_free(c);
    return SQLITE_OK;
}

static int start_heap(alloc_cursor* c) {
    mt_sql_map_clear(&c->live);
    c->draining = false;
    c->drain_i = 0;
    event_bounds b = {0, INT64_MAX, INT64_MIN, INT64_MAX, c->heaps[c->heap_i], c->heaps[c->heap_i]};
    return mt_sql_merge_start(&c->m, &b);
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
        int rc = mt_sql_merge_next(&c->m, &ev);
        if (rc == 0) {
            c->draining = true;
            continue;
        }
        if (rc != 1)
            return cursor_error(cur, &c->m, rc);
        if (mt_kind_is_alloc(ev.kind)) {
            live_block b = {ev.addr, ev.size, ev.seq, ev.ts, ev.callsite, ev.tid};
            bool had;
            if (mt_sql_map_put(&c->live, &b, &c->row, &had) != SQLITE_OK)
                return cursor_error(cur, &c->m,
                                    mt_sql_merge_fail(&c->m, SQLITE_NOMEM, "out of memory", 0));
            if (had) {
                c->freed = true;
                c->freed_tid_known = false; // no free was seen: the address was reused
                c->freed_ts = ev.ts;
                return SQLITE_OK;
            }
        } else if (mt_kind_is_free(ev.kind) && mt_sql_map_take(&c->live, ev.addr, &c->row)) {
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
    mt_sql_merge_free(&c->m);
    sqlite3_free(c->heaps);
    c->heaps = NULL;
    c->nheaps = c->heap_i = 0;
    c->eof = false;
    c->rowid = 0;
    int rc = mt_sql_merge_init(&c->m, cursor_db(cur));
    if (rc != SQLITE_OK)
        return cursor_error(cur, &c->m, rc);
    sqlite3_stmt* st;
    rc = sqlite3_prepare_v2(cursor_db(cur), "SELECT DISTINCT heap FROM main.event_chunk ORDER BY 1",
                            -1, &st, NULL);
    if (rc != SQLITE_OK)
        return cursor_error(cur, &c->m,
                            mt_sql_merge_fail(&c->m, rc, sqlite3_errmsg(cursor_db(cur)), 0));
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
        return cursor_error(cur, &c->m, mt_sql_merge_fail(&c->m, rc, sqlite3_errstr(rc), 0));
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

// ---- stacks

// One row per frame of each callsite, depth 0 the leaf (the allocating function), as
// heaptrack and memray list a stack: each callsite's chain of parents walked as the rows
// are read, so a condition on callsite (=, IN, a range, a join on it) walks only the
// chains it names, and one on depth stops each walk there.
enum { ST_CALLSITE, ST_DEPTH, ST_FUNCTION, ST_FILE, ST_LINE, ST_MODULE };

// A walk goes no deeper: a damaged, cyclic tree ends here.
#define STACK_DEPTH_MAX 100000

typedef struct stacks_cursor {
    sqlite3_vtab_cursor base;
    sqlite3_stmt* ids;   // the callsites to walk, in id order
    sqlite3_stmt* node;  // a callsite's parent and frame
    sqlite3_stmt* frame; // a frame's columns and its module
    int64_t depth_lo, depth_hi;
    int64_t callsite, parent, depth;
    bool walking, has_frame, eof;
    sqlite3_int64 rowid;
} stacks_cursor;

static int stacks_connect(sqlite3* db, void* aux, int argc, const char* const* argv,
                          sqlite3_vtab** out, char** err) {
    (void)aux, (void)argc, (void)argv, (void)err;
    return vtab_connect(db,
                        "CREATE TABLE x(callsite INTEGER, depth INTEGER, function TEXT,"
                        " file TEXT, line INTEGER, module TEXT)",
                        out);
}

// idxStr as best_index's: 'c' callsite, 'd' depth. SQLite still checks every row.
static int stacks_best_index(sqlite3_vtab* vt, sqlite3_index_info* info) {
    (void)vt;
    char* plan = sqlite3_malloc(2 * info->nConstraint + 1);
    if (!plan)
        return SQLITE_NOMEM;
    int argc = 0;
    double cost = 1e6, rows = 1e6;
    for (int i = 0; i < info->nConstraint; i++) {
        const struct sqlite3_index_constraint* c = &info->aConstraint[i];
        char col = c->iColumn == ST_CALLSITE ? 'c' : c->iColumn == ST_DEPTH ? 'd' : 0;
        char op = c->op == SQLITE_INDEX_CONSTRAINT_EQ   ? '='
                  : c->op == SQLITE_INDEX_CONSTRAINT_LT ? '<'
                  : c->op == SQLITE_INDEX_CONSTRAINT_LE ? '{'
                  : c->op == SQLITE_INDEX_CONSTRAINT_GT ? '>'
                  : c->op == SQLITE_INDEX_CONSTRAINT_GE ? '}'
                                                        : 0;
        if (!c->usable || !col || !op)
            continue;
        plan[2 * argc] = col;
        plan[2 * argc + 1] = op;
        info->aConstraintUsage[i].argvIndex = ++argc;
        // One callsite's chain is a few dozen frames.
        double by = col == 'c' ? (op == '=' ? 1e5 : 10) : 2;
        cost /= by;
        rows /= by;
    }
    plan[2 * argc] = 0;
    info->idxStr = plan;
    info->needToFreeIdxStr = 1;
    info->estimatedCost = cost < 1 ? 1 : cost;
    info->estimatedRows = rows < 1 ? 1 : (sqlite3_int64)rows;
    // Rows come by callsite, then depth.
    if (info->nOrderBy >= 1 && info->nOrderBy <= 2 && info->aOrderBy[0].iColumn == ST_CALLSITE &&
        !info->aOrderBy[0].desc &&
        (info->nOrderBy == 1 || (info->aOrderBy[1].iColumn == ST_DEPTH && !info->aOrderBy[1].desc)))
        info->orderByConsumed = 1;
    return SQLITE_OK;
}

static int stacks_close(sqlite3_vtab_cursor* cur) {
    stacks_cursor* c = (stacks_cursor*)cur;
    sqlite3_finalize(c->ids);
    sqlite3_finalize(c->node);
    sqlite3_finalize(c->frame);
    sqlite3_free(c);
    return SQLITE_OK;
}

static int stacks_open(sqlite3_vtab* vt, sqlite3_vtab_cursor** out) {
    stacks_cursor* c = sqlite3_malloc(sizeof *c);
    if (!c)
        return SQLITE_NOMEM;
    memset(c, 0, sizeof *c);
    sqlite3* db = ((capture_vtab*)vt)->db;
    // Schema 6: the callsites mt_sql_register read out of their chunks.
    sqlite3_stmt* probe = NULL;
    bool temp = sqlite3_prepare_v2(db, "SELECT 1 FROM temp.sqlite_master WHERE name = 'callsite'",
                                   -1, &probe, NULL) == SQLITE_OK &&
                sqlite3_step(probe) == SQLITE_ROW;
    sqlite3_finalize(probe);
    int rc = sqlite3_prepare_v2(db,
                                temp ? "SELECT id FROM temp.callsite WHERE id BETWEEN ?1 AND ?2"
                                       " ORDER BY id"
                                     : "SELECT id FROM main.callsite WHERE id BETWEEN ?1 AND ?2"
                                       " ORDER BY id",
                                -1, &c->ids, NULL);
    if (rc == SQLITE_OK)
        rc =
            sqlite3_prepare_v2(db,
                               temp ? "SELECT parent_id, frame_id FROM temp.callsite WHERE id = ?1"
                                    : "SELECT parent_id, frame_id FROM main.callsite WHERE id = ?1",
                               -1, &c->node, NULL);
    if (rc == SQLITE_OK)
        rc = sqlite3_prepare_v2(db,
                                "SELECT f.function, f.file, f.line, m.path FROM main.frame f"
                                " LEFT JOIN main.mapping m ON m.id = f.mapping_id WHERE f.id = ?1",
                                -1, &c->frame, NULL);
    if (rc != SQLITE_OK) {
        sqlite3_free(vt->zErrMsg);
        vt->zErrMsg = sqlite3_mprintf("%s", sqlite3_errmsg(db));
        stacks_close(&c->base);
        return rc;
    }
    *out = &c->base;
    return SQLITE_OK;
}

static int stacks_error(sqlite3_vtab_cursor* cur, int rc) {
    sqlite3_free(cur->pVtab->zErrMsg);
    cur->pVtab->zErrMsg = sqlite3_mprintf("%s", sqlite3_errmsg(cursor_db(cur)));
    return rc;
}

// Makes callsite id the current frame: its parent and its frame's columns (none when the
// frame is missing, as a LEFT JOIN gives). *found is false when there is no such callsite.
static int load_node(stacks_cursor* c, int64_t id, bool* found) {
    sqlite3_reset(c->node);
    sqlite3_bind_int64(c->node, 1, id);
    int rc = sqlite3_step(c->node);
    *found = rc == SQLITE_ROW;
    if (rc != SQLITE_ROW)
        return rc == SQLITE_DONE ? SQLITE_OK : rc;
    c->parent = sqlite3_column_int64(c->node, 0);
    sqlite3_reset(c->frame);
    sqlite3_bind_value(c->frame, 1, sqlite3_column_value(c->node, 1));
    rc = sqlite3_step(c->frame);
    c->has_frame = rc == SQLITE_ROW;
    return rc == SQLITE_ROW || rc == SQLITE_DONE ? SQLITE_OK : rc;
}

static int stacks_next(sqlite3_vtab_cursor* cur) {
    stacks_cursor* c = (stacks_cursor*)cur;
    c->rowid++;
    for (;;) {
        bool found = false;
        int rc;
        if (c->walking && c->parent != 0 && c->depth < c->depth_hi && c->depth < STACK_DEPTH_MAX) {
            if ((rc = load_node(c, c->parent, &found)) != SQLITE_OK)
                return stacks_error(cur, rc);
            c->depth++;
        }
        if (!found) { // this walk is over (a parent 0, missing, or too deep): the next one
            c->walking = false;
            rc = sqlite3_step(c->ids);
            if (rc == SQLITE_DONE) {
                c->eof = true;
                return SQLITE_OK;
            }
            if (rc != SQLITE_ROW)
                return stacks_error(cur, rc);
            c->callsite = sqlite3_column_int64(c->ids, 0);
            if ((rc = load_node(c, c->callsite, &found)) != SQLITE_OK)
                return stacks_error(cur, rc);
            if (!found)
                continue;
            c->walking = true;
            c->depth = 0;
        }
        if (c->depth >= c->depth_lo)
            return SQLITE_OK;
    }
}

static int stacks_filter(sqlite3_vtab_cursor* cur, int idx, const char* plan, int argc,
                         sqlite3_value** argv) {
    stacks_cursor* c = (stacks_cursor*)cur;
    (void)idx;
    int64_t lo = INT64_MIN, hi = INT64_MAX;
    c->depth_lo = INT64_MIN;
    c->depth_hi = INT64_MAX;
    for (int i = 0; i < argc && plan && plan[2 * i]; i++) {
        if (plan[2 * i] == 'c')
            narrow(&lo, &hi, plan[2 * i + 1], argv[i]);
        else
            narrow(&c->depth_lo, &c->depth_hi, plan[2 * i + 1], argv[i]);
    }
    sqlite3_reset(c->ids);
    sqlite3_bind_int64(c->ids, 1, lo);
    sqlite3_bind_int64(c->ids, 2, hi);
    c->walking = c->eof = false;
    c->rowid = 0;
    return stacks_next(cur);
}

static int stacks_eof(sqlite3_vtab_cursor* cur) {
    return ((stacks_cursor*)cur)->eof;
}

static int stacks_column(sqlite3_vtab_cursor* cur, sqlite3_context* ctx, int col) {
    const stacks_cursor* c = (const stacks_cursor*)cur;
    if (col == ST_CALLSITE)
        sqlite3_result_int64(ctx, c->callsite);
    else if (col == ST_DEPTH)
        sqlite3_result_int64(ctx, c->depth);
    else if (c->has_frame) // function, file, line, module: the frame statement's columns
        sqlite3_result_value(ctx, sqlite3_column_value(c->frame, col - ST_FUNCTION));
    return SQLITE_OK;
}

static int stacks_rowid(sqlite3_vtab_cursor* cur, sqlite3_int64* rowid) {
    *rowid = ((stacks_cursor*)cur)->rowid;
    return SQLITE_OK;
}

static sqlite3_module stacks_module = {
    .xConnect = stacks_connect,
    .xBestIndex = stacks_best_index,
    .xDisconnect = vtab_disconnect,
    .xOpen = stacks_open,
    .xClose = stacks_close,
    .xFilter = stacks_filter,
    .xNext = stacks_next,
    .xEof = stacks_eof,
    .xColumn = stacks_column,
    .xRowid = stacks_rowid,
};

// ---- registration

// ---- callsite: schema 6 keeps callsites in compressed chunks (table callsite_chunk, read
// by common/'s codec); a query sees them as they always were, table callsite: a TEMP table
// (found before main's) filled here with main.callsite's rows and the chunks' callsites.

static int fill_callsites(sqlite3* db, sqlite3_stmt* chunks, sqlite3_stmt* ins, char** errmsg) {
    mt_callsite_rec* dec = NULL;
    int rc = SQLITE_OK, step;
    while (rc == SQLITE_OK && (step = sqlite3_step(chunks)) == SQLITE_ROW) {
        int64_t id = sqlite3_column_int64(chunks, 0), count = sqlite3_column_int64(chunks, 1);
        const void* data = sqlite3_column_blob(chunks, 2);
        int len = sqlite3_column_bytes(chunks, 2);
        bool sane = count > 0 && count <= MT_CALLSITE_CHUNK_MAX && data;
        mt_callsite_rec* p = sane ? sqlite3_realloc64(dec, (uint64_t)count * sizeof *p) : NULL;
        if (sane && !p) {
            rc = SQLITE_NOMEM;
            break;
        }
        if (p)
            dec = p;
        if (!sane || mt_capture_callsite_chunk_decode(data, (size_t)len, count, dec) != 0) {
            *errmsg = sqlite3_mprintf("callsite chunk %lld is corrupt", (long long)id);
            rc = SQLITE_CORRUPT;
            break;
        }
        for (int64_t i = 0; rc == SQLITE_OK && i < count; i++) {
            sqlite3_bind_int64(ins, 1, dec[i].id);
            sqlite3_bind_int64(ins, 2, dec[i].parent_id);
            sqlite3_bind_int64(ins, 3, dec[i].frame_id);
            sqlite3_bind_int64(ins, 4, dec[i].depth);
            if (sqlite3_step(ins) != SQLITE_DONE)
                rc = sqlite3_errcode(db);
            sqlite3_reset(ins);
        }
    }
    if (rc == SQLITE_OK && step != SQLITE_DONE)
        rc = sqlite3_errcode(db);
    sqlite3_free(dec);
    return rc;
}

static int materialize_callsites(sqlite3* db, char** errmsg) {
    sqlite3_stmt* chunks = NULL;
    // No such table (schemas 1 to 5, or not a capture): nothing to do.
    if (sqlite3_prepare_v2(db, "SELECT id, count, data FROM main.callsite_chunk ORDER BY id", -1,
                           &chunks, NULL) != SQLITE_OK)
        return SQLITE_OK;
    int rc = sqlite3_exec(db,
                          "CREATE TEMP TABLE callsite(id INTEGER PRIMARY KEY,"
                          " parent_id INTEGER NOT NULL, frame_id INTEGER NOT NULL,"
                          " depth INTEGER NOT NULL);"
                          "BEGIN; INSERT INTO temp.callsite SELECT id, parent_id, frame_id, depth"
                          " FROM main.callsite",
                          NULL, NULL, errmsg);
    sqlite3_stmt* ins = NULL;
    if (rc == SQLITE_OK)
        rc = sqlite3_prepare_v2(db, "INSERT OR REPLACE INTO temp.callsite VALUES(?1,?2,?3,?4)", -1,
                                &ins, NULL);
    if (rc == SQLITE_OK)
        rc = fill_callsites(db, chunks, ins, errmsg);
    sqlite3_finalize(ins);
    sqlite3_finalize(chunks);
    if (rc == SQLITE_OK)
        rc = sqlite3_exec(db, "COMMIT", NULL, NULL, errmsg);
    if (rc != SQLITE_OK && !sqlite3_get_autocommit(db))
        sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
    return rc;
}

int mt_sql_register(sqlite3* db, char** errmsg) {
    int rc = materialize_callsites(db, errmsg);
    if (rc == SQLITE_OK)
        rc = sqlite3_create_module(db, "events", &events_module, NULL);
    if (rc == SQLITE_OK)
        rc = sqlite3_create_module(db, "allocations", &alloc_module, NULL);
    if (rc == SQLITE_OK)
        rc = sqlite3_create_module(db, "stacks", &stacks_module, NULL);
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
