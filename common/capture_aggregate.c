// SPDX-License-Identifier: MIT
// The aggregate table (memtrace/schema.h, MEMTRACE_AGGREGATE_SQL): the fingerprint of the
// events a heap's aggregates were computed from, and the reporter's stored bytes, read and
// written as they are. Knows nothing of what the bytes hold; never decodes an event.
#include "capture_db.h"

#include "memtrace/capture.h"
#include "memtrace/schema.h"

#include <errno.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>

// splitmix64's finaliser over a running state: every value moves every bit of the result.
static uint64_t mix(uint64_t h, uint64_t v) {
    h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
    h ^= h >> 30;
    h *= 0xbf58476d1ce4e5b9ULL;
    h ^= h >> 27;
    h *= 0x94d049bb133111ebULL;
    return h ^ (h >> 31);
}

static uint64_t mix_text(uint64_t h, const unsigned char* s) {
    h = mix(h, s ? 1 : 0);
    for (; s && *s; s++)
        h = mix(h, *s);
    return h;
}

int mt_capture_aggregate_fingerprint(mt_capture* cap, int heap, uint64_t* out) {
    sqlite3* db = mt_capture_sqlite(cap);
    sqlite3_stmt* st;
    // length(data) comes from the row's header: no chunk's bytes are read.
    if (sqlite3_prepare_v2(db,
                           "SELECT id, seq_first, seq_last, ts_first, ts_last, count, codec,"
                           " length(data) FROM event_chunk WHERE " MT_HEAP_SQL_MATCH " ORDER BY id",
                           -1, &st, NULL) != SQLITE_OK)
        return -EPROTO;
    sqlite3_bind_int(st, 1, heap);
    uint64_t h = mix((uint64_t)cap->version, (uint64_t)heap);
    int step;
    while ((step = sqlite3_step(st)) == SQLITE_ROW)
        for (int c = 0; c < 8; c++)
            h = mix(h, (uint64_t)sqlite3_column_int64(st, c));
    sqlite3_finalize(st);
    if (step != SQLITE_DONE)
        return -EPROTO;
    // The meta that changes what the events are read as: a sampled capture's weights.
    if (sqlite3_prepare_v2(db,
                           "SELECT key, value FROM meta WHERE key IN ('sample_bytes',"
                           " 'sample_method') ORDER BY key",
                           -1, &st, NULL) != SQLITE_OK)
        return -EPROTO;
    while ((step = sqlite3_step(st)) == SQLITE_ROW)
        h = mix_text(mix_text(h, sqlite3_column_text(st, 0)), sqlite3_column_text(st, 1));
    sqlite3_finalize(st);
    if (step != SQLITE_DONE)
        return -EPROTO;
    *out = h;
    return 0;
}

int mt_capture_aggregate_read(mt_capture* cap, int heap, int64_t* format, uint64_t* fingerprint,
                              uint8_t** data, size_t* len) {
    *data = NULL;
    *len = 0;
    sqlite3_stmt* st;
    // A capture without the table (older, killed, or never opened writable) has none.
    if (sqlite3_prepare_v2(mt_capture_sqlite(cap),
                           "SELECT format, fingerprint, data FROM aggregate WHERE heap=?1", -1, &st,
                           NULL) != SQLITE_OK)
        return 0;
    sqlite3_bind_int(st, 1, heap);
    int rc = 0;
    if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_type(st, 2) == SQLITE_BLOB) {
        *format = sqlite3_column_int64(st, 0);
        *fingerprint = (uint64_t)sqlite3_column_int64(st, 1);
        const void* blob = sqlite3_column_blob(st, 2);
        size_t n = (size_t)sqlite3_column_bytes(st, 2);
        if (!(*data = malloc(n ? n : 1))) {
            rc = -ENOMEM;
        } else {
            memcpy(*data, blob, n);
            *len = n;
            rc = 1;
        }
    }
    sqlite3_finalize(st);
    return rc;
}

bool mt_capture_writable(mt_capture* cap) {
    return !cap->live && sqlite3_db_readonly(mt_capture_sqlite(cap), "main") == 0;
}

int mt_capture_aggregate_store(mt_capture* cap, int heap, int64_t format, uint64_t fingerprint,
                               const void* data, size_t len) {
    if (!mt_capture_writable(cap))
        return -EROFS;
    sqlite3* db = mt_capture_sqlite(cap);
    if (sqlite3_exec(db, "SAVEPOINT mt_aggregate", NULL, NULL, NULL) != SQLITE_OK)
        return -EIO;
    sqlite3_stmt* st = NULL;
    int rc = sqlite3_exec(db, MEMTRACE_AGGREGATE_SQL, NULL, NULL, NULL) == SQLITE_OK &&
                     sqlite3_prepare_v2(db,
                                        "INSERT OR REPLACE INTO aggregate(heap, format,"
                                        " fingerprint, data) VALUES(?1, ?2, ?3, ?4)",
                                        -1, &st, NULL) == SQLITE_OK
                 ? 0
                 : -EIO;
    if (!rc) {
        sqlite3_bind_int(st, 1, heap);
        sqlite3_bind_int64(st, 2, format);
        sqlite3_bind_int64(st, 3, (int64_t)fingerprint);
        sqlite3_bind_blob64(st, 4, data, len, SQLITE_STATIC);
        rc = sqlite3_step(st) == SQLITE_DONE ? 0 : -EIO;
    }
    sqlite3_finalize(st);
    if (!rc && sqlite3_exec(db, "RELEASE mt_aggregate", NULL, NULL, NULL) != SQLITE_OK)
        rc = -EIO;
    if (rc) { // a full disk, a lock: the capture stays as it was
        sqlite3_exec(db, "ROLLBACK TO mt_aggregate", NULL, NULL, NULL);
        sqlite3_exec(db, "RELEASE mt_aggregate", NULL, NULL, NULL);
    }
    return rc;
}
