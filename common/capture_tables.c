// SPDX-License-Identifier: MIT
// Typed reads of a capture's tables (memtrace/capture.h): heaps, event totals, counters,
// marks, call counts and the stacks, each row handed to a callback so readers never see
// SQL. Reads only; must not trust the values (the caller checks ranges it relies on).
#include "capture_db.h"

#include "memtrace/capture.h"
#include "memtrace/schema.h"
#include "memtrace/symbolize.h"

#include <errno.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>

const char* mt_capture_error(mt_capture* cap) {
    return cap->problem[0] ? cap->problem : sqlite3_errmsg(mt_capture_db_sqlite(cap));
}

static const char* column_text(sqlite3_stmt* st, int col) {
    return (const char*)sqlite3_column_text(st, col);
}

// Ends a row reader: fn's nonzero result, else -EPROTO unless every row was read.
static int rows_done(sqlite3_stmt* st, int rc, int step) {
    sqlite3_finalize(st);
    return rc ? rc : step == SQLITE_DONE ? 0 : -EPROTO;
}

static int prepare(mt_capture* cap, const char* sql, sqlite3_stmt** st) {
    return sqlite3_prepare_v2(mt_capture_db_sqlite(cap), sql, -1, st, NULL) == SQLITE_OK ? 0
                                                                                         : -EPROTO;
}

int mt_capture_heaps(mt_capture* cap, mt_heap_fn fn, void* ud) {
    sqlite3_stmt* st;
    if (prepare(cap, "SELECT id, name, kind, time_unit FROM heap ORDER BY id", &st))
        return -EPROTO;
    int rc = 0, step = SQLITE_DONE;
    while (!rc && (step = sqlite3_step(st)) == SQLITE_ROW) {
        mt_heap_rec h = {sqlite3_column_int(st, 0), column_text(st, 1), column_text(st, 2),
                         column_text(st, 3)};
        rc = fn(ud, &h);
    }
    return rows_done(st, rc, step);
}

int mt_capture_heap_span(mt_capture* cap, int heap, mt_heap_span* out) {
    sqlite3_stmt* st;
    *out = (mt_heap_span){0, 0, 0};
    if (prepare(cap,
                "SELECT count(*), sum(count), min(ts_first), max(ts_last) FROM event_chunk"
                " WHERE " MT_HEAP_SQL_MATCH,
                &st))
        return -EPROTO;
    sqlite3_bind_int(st, 1, heap);
    int rc = -EPROTO;
    cap->problem[0] = 0;
    if (sqlite3_step(st) == SQLITE_ROW) {
        rc = sqlite3_column_int64(st, 0) > 0;
        out->events = (uint64_t)sqlite3_column_int64(st, 1);
        out->first_ts = sqlite3_column_int64(st, 2);
        out->last_ts = sqlite3_column_int64(st, 3);
    }
    sqlite3_finalize(st);
    // The chunks' events are held to the same bounds when they are read.
    if (rc == 1 && (out->first_ts <= -MT_EVENT_TS_LIMIT || out->last_ts >= MT_EVENT_TS_LIMIT)) {
        snprintf(cap->problem, sizeof cap->problem,
                 "corrupt capture: an event chunk's time is beyond 2^62 ns");
        *out = (mt_heap_span){0, 0, 0};
        rc = -EPROTO;
    }
    return rc;
}

// The value of sql, a `SELECT max(...)` with ?1 and ?2 (when it has one) bound to a1 and
// a2: 1 with *out, 0 when nothing was there to take it from (0 in *out), or -EPROTO.
static int select_max(mt_capture* cap, const char* sql, int64_t a1, int64_t a2, int64_t* out) {
    sqlite3_stmt* st;
    *out = 0;
    if (prepare(cap, sql, &st))
        return -EPROTO;
    sqlite3_bind_int64(st, 1, a1);
    if (sqlite3_bind_parameter_count(st) > 1)
        sqlite3_bind_int64(st, 2, a2);
    int rc = -EPROTO;
    if (sqlite3_step(st) == SQLITE_ROW) {
        rc = sqlite3_column_type(st, 0) != SQLITE_NULL;
        *out = sqlite3_column_int64(st, 0);
    }
    sqlite3_finalize(st);
    return rc;
}

int mt_capture_heap_seq_until(mt_capture* cap, int heap, int64_t ts, uint64_t* seq) {
    int64_t last;
    int rc = select_max(
        cap, "SELECT max(seq_last) FROM event_chunk WHERE " MT_HEAP_SQL_MATCH " AND ts_first<=?2",
        heap, ts, &last);
    *seq = (uint64_t)last;
    return rc;
}

static int read_counters(sqlite3_stmt* st, mt_counter_fn fn, void* ud) {
    int rc = 0, step = SQLITE_DONE;
    while (!rc && (step = sqlite3_step(st)) == SQLITE_ROW)
        rc = fn(ud, sqlite3_column_int(st, 0), sqlite3_column_int64(st, 1),
                sqlite3_column_int64(st, 2));
    return rows_done(st, rc, step);
}

int mt_capture_counters(mt_capture* cap, int track, mt_counter_fn fn, void* ud) {
    sqlite3_stmt* st;
    if (prepare(cap, "SELECT track, ts, value FROM counter WHERE track=?1 ORDER BY ts, rowid", &st))
        return -EPROTO;
    sqlite3_bind_int(st, 1, track);
    return read_counters(st, fn, ud);
}

int mt_capture_counters_after(mt_capture* cap, int track, int64_t after_ts, mt_counter_fn fn,
                              void* ud) {
    sqlite3_stmt* st;
    if (prepare(cap,
                "SELECT track, ts, value FROM counter WHERE track=?1 AND ts>?2 ORDER BY ts, rowid",
                &st))
        return -EPROTO;
    sqlite3_bind_int(st, 1, track);
    sqlite3_bind_int64(st, 2, after_ts);
    return read_counters(st, fn, ud);
}

int mt_capture_counters_written(mt_capture* cap, int first, int last, mt_counter_fn fn, void* ud) {
    sqlite3_stmt* st;
    if (prepare(cap,
                "SELECT track, ts, value FROM counter NOT INDEXED"
                " WHERE track BETWEEN ?1 AND ?2 ORDER BY rowid",
                &st))
        return -EPROTO;
    sqlite3_bind_int(st, 1, first);
    sqlite3_bind_int(st, 2, last);
    return read_counters(st, fn, ud);
}

int mt_capture_counter_end(mt_capture* cap, int track, int64_t* ts) {
    return select_max(cap, "SELECT max(ts) FROM counter WHERE track=?1", track, 0, ts);
}

int mt_capture_marks(mt_capture* cap, const mt_mark_query* q, mt_mark_fn fn, void* ud) {
    char sql[256];
    snprintf(sql, sizeof sql,
             "SELECT heap, kind, name, ts_begin, ts_end, tid, attrs FROM mark"
             " WHERE heap %s ?1%s ORDER BY %s",
             q->other_heaps ? "!=" : "=", q->kind ? " AND kind=?2" : "",
             q->by_time ? "ts_begin, id" : "id");
    sqlite3_stmt* st;
    if (prepare(cap, sql, &st))
        return -EPROTO;
    // The program's heaps together (a python process) have the process's marks, libc's.
    sqlite3_bind_int(st, 1, q->heap == MT_HEAP_PROGRAM ? MT_HEAP_LIBC : q->heap);
    if (q->kind)
        sqlite3_bind_text(st, 2, q->kind, -1, SQLITE_STATIC);
    int rc = 0, step = SQLITE_DONE;
    while (!rc && (step = sqlite3_step(st)) == SQLITE_ROW) {
        mt_mark_rec m = {.heap = sqlite3_column_int(st, 0),
                         .kind = column_text(st, 1),
                         .name = column_text(st, 2),
                         .ts_begin = sqlite3_column_int64(st, 3),
                         .has_end = sqlite3_column_type(st, 4) != SQLITE_NULL,
                         .ts_end = sqlite3_column_int64(st, 4),
                         .has_tid = sqlite3_column_type(st, 5) != SQLITE_NULL,
                         .tid = sqlite3_column_int64(st, 5),
                         .attrs = column_text(st, 6)};
        rc = fn(ud, &m);
    }
    return rows_done(st, rc, step);
}

int mt_capture_call_counts(mt_capture* cap, mt_call_count_fn fn, void* ud) {
    sqlite3_stmt* st;
    if (prepare(cap, "SELECT name, count FROM call_count ORDER BY name", &st))
        return -EPROTO;
    int rc = 0, step = SQLITE_DONE;
    while (!rc && (step = sqlite3_step(st)) == SQLITE_ROW)
        rc = fn(ud, column_text(st, 0), sqlite3_column_int64(st, 1));
    return rows_done(st, rc, step);
}

// ---- callsites: rows of table callsite (every schema) and of callsite_chunk (schema 6)

typedef struct site_ord {
    mt_callsite_rec c;
    size_t ord; // where it was read: of two rows of an id, the later one is the callsite
} site_ord;

static int by_id_then_ord(const void* a, const void* b) {
    const site_ord *x = a, *y = b;
    if (x->c.id != y->c.id)
        return x->c.id < y->c.id ? -1 : 1;
    return x->ord < y->ord ? -1 : x->ord > y->ord;
}

static int append_site(site_ord** v, size_t* n, size_t* cap, const mt_callsite_rec* c) {
    if (*n == *cap) {
        size_t ncap = *cap ? *cap * 2 : 4096;
        site_ord* p = realloc(*v, ncap * sizeof *p);
        if (!p)
            return -ENOMEM;
        *v = p;
        *cap = ncap;
    }
    (*v)[*n] = (site_ord){*c, *n};
    (*n)++;
    return 0;
}

int mt_capture_db_has_callsite_chunks(sqlite3* db, bool* out) {
    *out = false;
    sqlite3_stmt* st;
    if (sqlite3_prepare_v2(db,
                           "SELECT count(*) FROM sqlite_master WHERE type = 'table'"
                           " AND name = 'callsite_chunk'",
                           -1, &st, NULL) != SQLITE_OK)
        return -EPROTO;
    bool table = sqlite3_step(st) == SQLITE_ROW && sqlite3_column_int(st, 0) == 1;
    sqlite3_finalize(st);
    if (!table)
        return 0;
    if (sqlite3_prepare_v2(db, "SELECT 1 FROM callsite_chunk LIMIT 1", -1, &st, NULL) != SQLITE_OK)
        return -EPROTO;
    int step = sqlite3_step(st);
    sqlite3_finalize(st);
    *out = step == SQLITE_ROW;
    return step == SQLITE_ROW || step == SQLITE_DONE ? 0 : -EPROTO;
}

int mt_capture_db_callsites(sqlite3* db, mt_callsite_rec** out, size_t* n, char* err,
                            size_t errlen) {
    *out = NULL;
    *n = 0;
    site_ord* v = NULL;
    size_t nv = 0, cap = 0;
    mt_callsite_rec* dec = NULL;
    sqlite3_stmt* st = NULL;
    int rc = 0, step;
    bool chunks;
    if (mt_capture_db_has_callsite_chunks(db, &chunks) ||
        sqlite3_prepare_v2(db, "SELECT id, parent_id, frame_id, depth FROM callsite ORDER BY id",
                           -1, &st, NULL) != SQLITE_OK)
        return mt_capture_db_sql_problem(db, "reading its callsites", err, errlen);
    while (!rc && (step = sqlite3_step(st)) == SQLITE_ROW) {
        mt_callsite_rec c = {sqlite3_column_int64(st, 0), sqlite3_column_int64(st, 1),
                             sqlite3_column_int64(st, 2), sqlite3_column_int64(st, 3)};
        rc = append_site(&v, &nv, &cap, &c);
    }
    if (!rc && step != SQLITE_DONE)
        rc = mt_capture_db_sql_problem(db, "reading its callsites", err, errlen);
    sqlite3_finalize(st);
    st = NULL;
    if (!rc && chunks &&
        sqlite3_prepare_v2(db, "SELECT id, count, data FROM callsite_chunk ORDER BY id", -1, &st,
                           NULL) != SQLITE_OK)
        rc = mt_capture_db_sql_problem(db, "reading its callsites", err, errlen);
    while (!rc && st && (step = sqlite3_step(st)) == SQLITE_ROW) {
        int64_t id = sqlite3_column_int64(st, 0), count = sqlite3_column_int64(st, 1);
        const void* data = sqlite3_column_blob(st, 2);
        size_t len = (size_t)sqlite3_column_bytes(st, 2);
        if (count <= 0 || count > MT_CALLSITE_CHUNK_MAX) {
            snprintf(err, errlen, "callsite chunk %lld is corrupt (impossible count %lld)",
                     (long long)id, (long long)count);
            rc = -EPROTO;
            break;
        }
        mt_callsite_rec* p = realloc(dec, (size_t)count * sizeof *p);
        if (!p) {
            rc = -ENOMEM;
            break;
        }
        dec = p;
        rc = data ? mt_capture_callsite_chunk_decode(data, len, count, dec) : -EPROTO;
        if (rc == -EBADMSG || rc == -EPROTO) {
            snprintf(err, errlen, "callsite chunk %lld is corrupt (%s)", (long long)id,
                     rc == -EBADMSG ? "checksum mismatch" : "its callsites do not decode");
            rc = -EPROTO;
        }
        for (int64_t i = 0; !rc && i < count; i++)
            rc = append_site(&v, &nv, &cap, &dec[i]);
    }
    if (!rc && st && step != SQLITE_DONE)
        rc = mt_capture_db_sql_problem(db, "reading its callsites", err, errlen);
    sqlite3_finalize(st);
    free(dec);
    if (rc == -ENOMEM)
        snprintf(err, errlen, "out of memory");
    if (rc) {
        free(v);
        return rc;
    }
    bool sorted = true;
    for (size_t i = 1; i < nv && sorted; i++)
        sorted = v[i - 1].c.id < v[i].c.id;
    if (!sorted)
        qsort(v, nv, sizeof *v, by_id_then_ord);
    // In place: the records, each id once (its last row), in id order.
    mt_callsite_rec* recs = (mt_callsite_rec*)v;
    size_t k = 0;
    for (size_t i = 0; i < nv; i++) {
        if (i + 1 < nv && v[i + 1].c.id == v[i].c.id)
            continue;
        mt_callsite_rec c = v[i].c; // recs[k] may overlap v[i]
        recs[k++] = c;
    }
    *out = recs;
    *n = k;
    return 0;
}

int mt_capture_stack_ids(mt_capture* cap, int64_t* max_frame, int64_t* max_callsite) {
    sqlite3_stmt* st;
    *max_frame = *max_callsite = 0;
    if (prepare(cap,
                "SELECT (SELECT coalesce(max(id), 0) FROM frame),"
                " (SELECT coalesce(max(id), 0) FROM callsite)",
                &st))
        return -EPROTO;
    int rc = -EPROTO;
    if (sqlite3_step(st) == SQLITE_ROW) {
        *max_frame = sqlite3_column_int64(st, 0);
        *max_callsite = sqlite3_column_int64(st, 1);
        rc = 0;
    }
    sqlite3_finalize(st);
    bool chunks;
    if (rc == 0 && (rc = mt_capture_db_has_callsite_chunks(cap->db, &chunks)) == 0 && chunks) {
        mt_callsite_rec* c;
        size_t n;
        char err[160];
        rc = mt_capture_db_callsites(cap->db, &c, &n, err, sizeof err);
        if (rc == 0 && n > 0 && c[n - 1].id > *max_callsite)
            *max_callsite = c[n - 1].id;
        free(c);
    }
    return rc == -ENOMEM ? rc : rc ? -EPROTO : 0;
}

int mt_capture_frames(mt_capture* cap, mt_frame_fn fn, void* ud) {
    sqlite3_stmt* st;
    if (prepare(cap,
                "SELECT f.id, f.pc, coalesce(f.rel_pc, f.pc - m.load_bias, f.pc), m.path,"
                " f.function, f.file, f.line, f.inlined, f.relevant, m.id"
                " FROM frame f LEFT JOIN mapping m ON m.id = f.mapping_id",
                &st))
        return -EPROTO;
    int rc = 0, step = SQLITE_DONE;
    while (!rc && (step = sqlite3_step(st)) == SQLITE_ROW) {
        mt_frame_info f = {.id = sqlite3_column_int64(st, 0),
                           .pc = (uint64_t)sqlite3_column_int64(st, 1),
                           .rel_pc = (uint64_t)sqlite3_column_int64(st, 2),
                           .module = column_text(st, 3),
                           .function = column_text(st, 4),
                           .file = column_text(st, 5),
                           .line = sqlite3_column_int(st, 6),
                           .inlined = column_text(st, 7),
                           .relevant = sqlite3_column_int(st, 8) != 0,
                           .mapping_id = sqlite3_column_int64(st, 9)};
        rc = fn(ud, &f);
    }
    return rows_done(st, rc, step);
}

int mt_capture_mappings(mt_capture* cap, mt_mapping_fn fn, void* ud) {
    sqlite3_stmt* st;
    if (prepare(cap,
                "SELECT id, path, start, end, load_bias, build_id, coalesce(ts_loaded, 0),"
                " coalesce(ts_unloaded, -1) FROM mapping ORDER BY id",
                &st))
        return -EPROTO;
    int rc = 0, step = SQLITE_DONE;
    while (!rc && (step = sqlite3_step(st)) == SQLITE_ROW) {
        mt_mapping_rec m = {.id = sqlite3_column_int64(st, 0),
                            .path = column_text(st, 1),
                            .start = (uint64_t)sqlite3_column_int64(st, 2),
                            .end = (uint64_t)sqlite3_column_int64(st, 3),
                            .load_bias = (uint64_t)sqlite3_column_int64(st, 4),
                            .build_id = column_text(st, 5),
                            .ts_loaded = sqlite3_column_int64(st, 6),
                            .ts_unloaded = sqlite3_column_int64(st, 7)};
        rc = fn(ud, &m);
    }
    return rows_done(st, rc, step);
}

int mt_capture_callsites(mt_capture* cap, mt_callsite_fn fn, void* ud) {
    bool chunks;
    if (mt_capture_db_has_callsite_chunks(cap->db, &chunks))
        return -EPROTO;
    if (chunks) {
        mt_callsite_rec* c;
        size_t n;
        int rc = mt_capture_db_callsites(cap->db, &c, &n, cap->problem, sizeof cap->problem);
        for (size_t i = 0; !rc && i < n; i++)
            rc = fn(ud, &c[i]);
        free(c);
        return rc == -ENOMEM ? rc : rc ? -EPROTO : 0;
    }
    // Rows alone (schemas 1 to 5): streamed, as they always were.
    sqlite3_stmt* st;
    if (prepare(cap, "SELECT id, parent_id, frame_id, depth FROM callsite ORDER BY id", &st))
        return -EPROTO;
    int rc = 0, step = SQLITE_DONE;
    while (!rc && (step = sqlite3_step(st)) == SQLITE_ROW) {
        mt_callsite_rec c = {sqlite3_column_int64(st, 0), sqlite3_column_int64(st, 1),
                             sqlite3_column_int64(st, 2), sqlite3_column_int64(st, 3)};
        rc = fn(ud, &c);
    }
    return rows_done(st, rc, step);
}

int mt_capture_symbolize(mt_capture* cap, char* err, size_t errlen) {
    if (cap->live)
        return 0; // never written while its program runs: names come when it exits
    return mt_symbolize_capture(mt_capture_db_sqlite(cap), 0, err, errlen);
}

int mt_capture_symbolize_in_memory(mt_capture* cap, char* err, size_t errlen) {
    return mt_symbolize_capture(mt_capture_db_sqlite(cap), MT_SYMBOLIZE_IN_MEMORY, err, errlen);
}

int mt_capture_leaks(mt_capture* cap, mt_leak_fn fn, void* ud) {
    sqlite3_stmt* st;
    if (prepare(cap, "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'leak'",
                &st))
        return -EPROTO;
    bool present = sqlite3_step(st) == SQLITE_ROW && sqlite3_column_int(st, 0) == 1;
    sqlite3_finalize(st);
    if (!present)
        return -ENOENT;
    if (prepare(cap, "SELECT seq, kind, holder_seq FROM leak ORDER BY seq", &st))
        return -EPROTO;
    int rc = 0, step = SQLITE_DONE;
    while (!rc && (step = sqlite3_step(st)) == SQLITE_ROW) {
        int64_t seq = sqlite3_column_int64(st, 0), kind = sqlite3_column_int64(st, 1);
        int64_t holder = sqlite3_column_int64(st, 2);
        if (seq <= 0 || kind < MT_LEAK_DEFINITE || kind >= MT_LEAK_COUNT_ || holder < 0)
            rc = -EPROTO; // a row memtrace never writes
        else
            rc = fn(ud, (uint64_t)seq, (int)kind, (uint64_t)holder);
    }
    return rows_done(st, rc, step);
}
