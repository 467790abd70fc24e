// SPDX-License-Identifier: MIT
// Capture writer: creates a capture file with the schema and appends chunks, counters and
// meta rows through prepared statements. Used by the tracer's writer thread and by
// memreport import. Allocates through SQLite; never call it from inside a malloc hook.
#define _GNU_SOURCE
#include "memtrace/capture.h"
#include "memtrace/codec.h"
#include "memtrace/schema.h"

#include <errno.h>
#include <fcntl.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct mt_capwriter {
    sqlite3* db;
    sqlite3_stmt* chunk;
    sqlite3_stmt* counter;
    sqlite3_stmt* meta;
};

static int exec(sqlite3* db, const char* sql) {
    return sqlite3_exec(db, sql, NULL, NULL, NULL) == SQLITE_OK ? 0 : -EIO;
}

static void remove_sidecars(const char* path) {
    static const char* const suffix[] = {"-wal", "-shm", "-journal"};
    size_t n = strlen(path);
    for (size_t i = 0; i < sizeof suffix / sizeof *suffix; i++) {
        char* p = malloc(n + 10);
        if (!p)
            return;
        memcpy(p, path, n);
        strcpy(p + n, suffix[i]);
        unlink(p);
        free(p);
    }
}

static int create_schema(sqlite3* db) {
    char sql[256];
    // Chunk blobs (tens of KB) live in overflow page chains; small pages waste only the
    // tail of each chain (64 KiB pages left ~12% of the file empty). WAL keeps each commit
    // an append.
    // synchronous=OFF first: switching to WAL under the default FULL would fsync.
    if (exec(db, "PRAGMA synchronous=OFF; PRAGMA locking_mode=EXCLUSIVE; PRAGMA page_size=4096;"
                 " PRAGMA journal_mode=WAL;"))
        return -EIO;
    snprintf(sql, sizeof sql, "PRAGMA application_id=%d; PRAGMA user_version=%d;",
             MEMTRACE_APPLICATION_ID, MEMTRACE_SCHEMA_VERSION);
    if (exec(db, "BEGIN") || exec(db, sql) || exec(db, MEMTRACE_SCHEMA_SQL))
        return -EIO;
    sqlite3_stmt* st;
    if (sqlite3_prepare_v2(db, "INSERT OR REPLACE INTO event_kind VALUES(?1,?2,?3,?4)", -1, &st,
                           NULL) != SQLITE_OK)
        return -EIO;
#define MT_KIND_ROW_(id, e, name, a, f)                                                            \
    sqlite3_bind_int(st, 1, id);                                                                   \
    sqlite3_bind_text(st, 2, name, -1, SQLITE_STATIC);                                             \
    sqlite3_bind_int(st, 3, a);                                                                    \
    sqlite3_bind_int(st, 4, f);                                                                    \
    sqlite3_step(st);                                                                              \
    sqlite3_reset(st);
    MEMTRACE_EVENT_KIND_MAP(MT_KIND_ROW_)
#undef MT_KIND_ROW_
    sqlite3_finalize(st);
    snprintf(sql, sizeof sql,
             "INSERT OR REPLACE INTO meta VALUES('schema_version',%d),"
             "('capture_status','recording')",
             MEMTRACE_SCHEMA_VERSION);
    return exec(db, sql) || exec(db, "COMMIT") ? -EIO : 0;
}

int mt_capwriter_open(const char* path, mt_capwriter** out, char* err, size_t errlen) {
    *out = NULL;
    mt_capwriter* w = calloc(1, sizeof *w);
    if (!w) {
        snprintf(err, errlen, "out of memory");
        return -ENOMEM;
    }
    // Captures hold command lines, paths and the address-space layout: private (0600), and
    // never written through a symlink. (The tracer has created the file itself, exclusively.)
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0) {
        snprintf(err, errlen, "cannot create: %s", strerror(errno));
        free(w);
        return -EIO;
    }
    close(fd);
    remove_sidecars(path);
    int rc = -EIO;
    if (sqlite3_open_v2(path, &w->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL) !=
            SQLITE_OK ||
        create_schema(w->db) != 0 ||
        sqlite3_prepare_v2(w->db,
                           "INSERT INTO event_chunk(heap, seq_first, seq_last, ts_first, ts_last,"
                           " count, codec, data) VALUES(?1,?2,?3,?4,?5,?6,?7,?8)",
                           -1, &w->chunk, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(w->db, "INSERT INTO counter(track, ts, value) VALUES(?1,?2,?3)", -1,
                           &w->counter, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(w->db, "INSERT OR REPLACE INTO meta(key, value) VALUES(?1,?2)", -1,
                           &w->meta, NULL) != SQLITE_OK) {
        snprintf(err, errlen, "cannot create capture: %s",
                 w->db ? sqlite3_errmsg(w->db) : "out of memory");
        mt_capwriter_abandon(w);
        unlink(path);
        remove_sidecars(path);
        return rc;
    }
    *out = w;
    return 0;
}

sqlite3* mt_capwriter_db(mt_capwriter* w) {
    return w->db;
}

const char* mt_capwriter_error(mt_capwriter* w) {
    return sqlite3_errmsg(w->db);
}

int mt_capwriter_begin(mt_capwriter* w) {
    return exec(w->db, "BEGIN");
}

int mt_capwriter_commit(mt_capwriter* w) {
    return exec(w->db, "COMMIT");
}

static int step_reset(sqlite3_stmt* st) {
    int rc = sqlite3_step(st);
    sqlite3_reset(st);
    sqlite3_clear_bindings(st);
    return rc == SQLITE_DONE ? 0 : -EIO;
}

int mt_capwriter_meta_text(mt_capwriter* w, const char* key, const char* value) {
    sqlite3_bind_text(w->meta, 1, key, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(w->meta, 2, value, -1, SQLITE_TRANSIENT);
    return step_reset(w->meta);
}

int mt_capwriter_meta_int(mt_capwriter* w, const char* key, int64_t value) {
    sqlite3_bind_text(w->meta, 1, key, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(w->meta, 2, value);
    return step_reset(w->meta);
}

int mt_capwriter_heap(mt_capwriter* w, int id, const char* name, const char* kind,
                      const char* time_unit) {
    sqlite3_stmt* st;
    if (sqlite3_prepare_v2(w->db, "INSERT OR REPLACE INTO heap VALUES(?1,?2,?3,?4)", -1, &st,
                           NULL) != SQLITE_OK)
        return -EIO;
    sqlite3_bind_int(st, 1, id);
    sqlite3_bind_text(st, 2, name, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 3, kind, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 4, time_unit, -1, SQLITE_TRANSIENT);
    int rc = sqlite3_step(st) == SQLITE_DONE ? 0 : -EIO;
    sqlite3_finalize(st);
    return rc;
}

int mt_capwriter_counter_track(mt_capwriter* w, int id, int heap, const char* name,
                               const char* unit) {
    sqlite3_stmt* st;
    if (sqlite3_prepare_v2(w->db, "INSERT OR REPLACE INTO counter_track VALUES(?1,?2,?3,?4)", -1,
                           &st, NULL) != SQLITE_OK)
        return -EIO;
    sqlite3_bind_int(st, 1, id);
    sqlite3_bind_int(st, 2, heap);
    sqlite3_bind_text(st, 3, name, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 4, unit, -1, SQLITE_TRANSIENT);
    int rc = sqlite3_step(st) == SQLITE_DONE ? 0 : -EIO;
    sqlite3_finalize(st);
    return rc;
}

int mt_capwriter_counter(mt_capwriter* w, int track, int64_t ts, int64_t value) {
    sqlite3_bind_int(w->counter, 1, track);
    sqlite3_bind_int64(w->counter, 2, ts);
    sqlite3_bind_int64(w->counter, 3, value);
    return step_reset(w->counter);
}

int mt_capwriter_chunk(mt_capwriter* w, int heap, const mt_event* ev, size_t n, uint8_t* scratch) {
    if (n == 0)
        return 0;
    mt_chunk_header h = {.heap = heap,
                         .seq_first = (int64_t)ev[0].seq,
                         .seq_last = (int64_t)ev[n - 1].seq,
                         .ts_first = ev[0].ts,
                         .ts_last = ev[0].ts,
                         .count = (int64_t)n};
    for (size_t i = 1; i < n; i++) {
        if (ev[i].ts < h.ts_first)
            h.ts_first = ev[i].ts;
        if (ev[i].ts > h.ts_last)
            h.ts_last = ev[i].ts;
    }
    // The checksum covers the row's columns too: readers verify it before decoding.
    size_t len = mt_chunk_seal(&h, scratch, mt_codec_encode(ev, n, scratch));
    sqlite3_stmt* st = w->chunk;
    sqlite3_bind_int64(st, 1, h.heap);
    sqlite3_bind_int64(st, 2, h.seq_first);
    sqlite3_bind_int64(st, 3, h.seq_last);
    sqlite3_bind_int64(st, 4, h.ts_first);
    sqlite3_bind_int64(st, 5, h.ts_last);
    sqlite3_bind_int64(st, 6, h.count);
    sqlite3_bind_int(st, 7, MT_CODEC_VARINT_COLUMNS_CRC32C);
    sqlite3_bind_blob(st, 8, scratch, (int)len, SQLITE_STATIC);
    return step_reset(st);
}

static void finalize_statements(mt_capwriter* w) {
    sqlite3_finalize(w->chunk);
    sqlite3_finalize(w->counter);
    sqlite3_finalize(w->meta);
}

int mt_capwriter_finish(mt_capwriter* w, const char* status) {
    int rc = mt_capwriter_meta_text(w, "capture_status", status);
    finalize_statements(w);
    // Back to a rollback journal: checkpoints the WAL and removes -wal/-shm, leaving one file.
    if (exec(w->db, "PRAGMA journal_mode=DELETE"))
        rc = -EIO;
    if (sqlite3_close(w->db) != SQLITE_OK)
        rc = -EIO;
    free(w);
    return rc;
}

void mt_capwriter_abandon(mt_capwriter* w) {
    if (!w)
        return;
    finalize_statements(w);
    sqlite3_close(w->db);
    free(w);
}
