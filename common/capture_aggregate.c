// SPDX-License-Identifier: MIT
// The aggregate, checkpoint and derived tables (memtrace/schema.h, MEMTRACE_AGGREGATE_SQL,
// MEMTRACE_CHECKPOINT_SQL and MEMTRACE_DERIVED_SQL): the fingerprint of the events a heap's
// aggregates, checkpoints and derived answers were computed from, and the reporter's stored bytes,
// read and written as they are. Knows nothing of what the bytes hold; never decodes an event.
#include "capture_db.h"

#include "memtrace/capture.h"
#include "memtrace/schema.h"

#include <errno.h>
#include <limits.h>
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
    sqlite3* db = mt_capture_db_sqlite(cap);
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

// Column `col` of the row `st` is on, a blob, into a buffer of its own: 1, or -ENOMEM.
static int copy_blob(sqlite3_stmt* st, int col, uint8_t** data, size_t* len) {
    const void* blob = sqlite3_column_blob(st, col);
    size_t n = (size_t)sqlite3_column_bytes(st, col);
    if (!(*data = malloc(n ? n : 1)))
        return -ENOMEM;
    memcpy(*data, blob, n);
    *len = n;
    return 1;
}

// Steps st, a SELECT of format, fingerprint and data, and finalizes it: the row's values,
// data copied. Returns 1 with a row, 0 without (*data NULL), or -ENOMEM.
static int read_sealed_row(sqlite3_stmt* st, int64_t* format, uint64_t* fingerprint, uint8_t** data,
                           size_t* len) {
    int rc = 0;
    if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_type(st, 2) == SQLITE_BLOB) {
        *format = sqlite3_column_int64(st, 0);
        *fingerprint = (uint64_t)sqlite3_column_int64(st, 1);
        rc = copy_blob(st, 2, data, len);
    }
    sqlite3_finalize(st);
    return rc;
}

int mt_capture_aggregate_read(mt_capture* cap, int heap, int64_t* format, uint64_t* fingerprint,
                              uint8_t** data, size_t* len) {
    *data = NULL;
    *len = 0;
    sqlite3_stmt* st;
    // A capture without the table (older, killed, or never opened writable) has none.
    if (sqlite3_prepare_v2(mt_capture_db_sqlite(cap),
                           "SELECT format, fingerprint, data FROM aggregate WHERE heap=?1", -1, &st,
                           NULL) != SQLITE_OK)
        return 0;
    sqlite3_bind_int(st, 1, heap);
    return read_sealed_row(st, format, fingerprint, data, len);
}

bool mt_capture_writable(mt_capture* cap) {
    return !cap->live && sqlite3_db_readonly(mt_capture_db_sqlite(cap), "main") == 0;
}

// Runs sql on a table made by create if missing: ?1 is heap, ?2... the nvals values, then the
// nblobs blobs. With data_of set, sql inserts one row into that table and the last blob is
// its column `data`: bound as zeroes, then written into the row's pages, so that SQLite does
// not copy a checkpoint of megabytes into a record first (the replay storing it is at its
// largest then). In a savepoint: a full disk or a lock leaves the capture as it was.
static int write_row(mt_capture* cap, const char* create, const char* sql, int heap,
                     const int64_t* vals, int nvals, const void* const* blobs, const size_t* lens,
                     int nblobs, const char* data_of) {
    if (!mt_capture_writable(cap))
        return -EROFS;
    sqlite3* db = mt_capture_db_sqlite(cap);
    if (sqlite3_exec(db, "SAVEPOINT mt_derived", NULL, NULL, NULL) != SQLITE_OK)
        return -EIO;
    sqlite3_stmt* st = NULL;
    int rc = sqlite3_exec(db, create, NULL, NULL, NULL) == SQLITE_OK &&
                     sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK
                 ? 0
                 : -EIO;
    if (!rc) {
        sqlite3_bind_int(st, 1, heap);
        for (int i = 0; i < nvals; i++)
            sqlite3_bind_int64(st, 2 + i, vals[i]);
        for (int i = 0; i < nblobs; i++) {
            if (data_of && i == nblobs - 1)
                sqlite3_bind_zeroblob64(st, 2 + nvals + i, lens[i]);
            else
                sqlite3_bind_blob64(st, 2 + nvals + i, blobs[i] ? blobs[i] : "", lens[i],
                                    SQLITE_STATIC);
        }
        rc = sqlite3_step(st) == SQLITE_DONE ? 0 : -EIO;
    }
    sqlite3_finalize(st);
    if (!rc && data_of && nblobs && lens[nblobs - 1]) {
        sqlite3_blob* b = NULL;
        rc = sqlite3_blob_open(db, "main", data_of, "data", sqlite3_last_insert_rowid(db), 1, &b) ==
                         SQLITE_OK &&
                     lens[nblobs - 1] <= INT_MAX &&
                     sqlite3_blob_write(b, blobs[nblobs - 1], (int)lens[nblobs - 1], 0) == SQLITE_OK
                 ? 0
                 : -EIO;
        if (sqlite3_blob_close(b) != SQLITE_OK)
            rc = -EIO;
    }
    if (!rc && sqlite3_exec(db, "RELEASE mt_derived", NULL, NULL, NULL) != SQLITE_OK)
        rc = -EIO;
    if (rc) {
        sqlite3_exec(db, "ROLLBACK TO mt_derived", NULL, NULL, NULL);
        sqlite3_exec(db, "RELEASE mt_derived", NULL, NULL, NULL);
    }
    return rc;
}

int mt_capture_aggregate_store(mt_capture* cap, int heap, int64_t format, uint64_t fingerprint,
                               const void* data, size_t len) {
    const int64_t vals[] = {format, (int64_t)fingerprint};
    return write_row(cap, MEMTRACE_AGGREGATE_SQL,
                     "INSERT OR REPLACE INTO aggregate(heap, format, fingerprint, data)"
                     " VALUES(?1, ?2, ?3, ?4)",
                     heap, vals, 2, &data, &len, 1, NULL);
}

// ---- derived answers

int mt_capture_derived_read(mt_capture* cap, int heap, int64_t key, int64_t* format,
                            uint64_t* fingerprint, uint8_t** data, size_t* len) {
    *data = NULL;
    *len = 0;
    sqlite3_stmt* st;
    if (sqlite3_prepare_v2(mt_capture_db_sqlite(cap),
                           "SELECT format, fingerprint, data FROM derived WHERE heap=?1 AND key=?2",
                           -1, &st, NULL) != SQLITE_OK)
        return 0;
    sqlite3_bind_int(st, 1, heap);
    sqlite3_bind_int64(st, 2, key);
    return read_sealed_row(st, format, fingerprint, data, len);
}

struct mt_capture_blob {
    sqlite3_blob* b;
};

int mt_capture_derived_open(mt_capture* cap, int heap, int64_t key, int64_t* format,
                            uint64_t* fingerprint, mt_capture_blob** blob, size_t* len) {
    *blob = NULL;
    *len = 0;
    sqlite3* db = mt_capture_db_sqlite(cap);
    sqlite3_stmt* st;
    // length() of a blob comes from the row's header: no byte of it is read here.
    if (sqlite3_prepare_v2(db,
                           "SELECT rowid, format, fingerprint, length(data) FROM derived"
                           " WHERE heap=?1 AND key=?2 AND typeof(data)='blob'",
                           -1, &st, NULL) != SQLITE_OK)
        return 0;
    sqlite3_bind_int(st, 1, heap);
    sqlite3_bind_int64(st, 2, key);
    int rc = 0;
    if (sqlite3_step(st) == SQLITE_ROW) {
        int64_t rowid = sqlite3_column_int64(st, 0);
        *format = sqlite3_column_int64(st, 1);
        *fingerprint = (uint64_t)sqlite3_column_int64(st, 2);
        *len = (size_t)sqlite3_column_int64(st, 3);
        if (!(*blob = malloc(sizeof **blob)))
            rc = -ENOMEM;
        else if (sqlite3_blob_open(db, "main", "derived", "data", rowid, 0, &(*blob)->b) !=
                 SQLITE_OK) {
            sqlite3_blob_close((*blob)->b);
            free(*blob);
            *blob = NULL;
            rc = -EIO;
        } else {
            rc = 1;
        }
    }
    sqlite3_finalize(st);
    return rc;
}

int mt_capture_blob_read(mt_capture_blob* blob, size_t offset, void* buf, size_t n) {
    if (offset > INT_MAX || n > (size_t)INT_MAX - offset)
        return -EIO;
    return n == 0 || sqlite3_blob_read(blob->b, buf, (int)n, (int)offset) == SQLITE_OK ? 0 : -EIO;
}

void mt_capture_blob_close(mt_capture_blob* blob) {
    if (blob)
        sqlite3_blob_close(blob->b);
    free(blob);
}

int mt_capture_derived_store(mt_capture* cap, int heap, int64_t key, int64_t format,
                             uint64_t fingerprint, const void* data, size_t len) {
    const int64_t vals[] = {key, format, (int64_t)fingerprint};
    return write_row(cap, MEMTRACE_DERIVED_SQL,
                     "INSERT OR REPLACE INTO derived(heap, key, format, fingerprint, data)"
                     " VALUES(?1, ?2, ?3, ?4, ?5)",
                     heap, vals, 3, &data, &len, 1, "derived");
}

// ---- checkpoints

int mt_capture_checkpoint_clear(mt_capture* cap, int heap) {
    // A table without high_seq (memreport's first checkpoints, never released) cannot take
    // rows: it goes, and every heap's checkpoints are stored again when next asked.
    sqlite3_stmt* st;
    if (sqlite3_prepare_v2(mt_capture_db_sqlite(cap), "SELECT high_seq FROM checkpoint LIMIT 0", -1,
                           &st, NULL) == SQLITE_OK)
        sqlite3_finalize(st);
    else if (write_row(cap, "SELECT 1", "DROP TABLE IF EXISTS checkpoint", heap, NULL, 0, NULL,
                       NULL, 0, NULL))
        return -EIO;
    return write_row(cap, MEMTRACE_CHECKPOINT_SQL, "DELETE FROM checkpoint WHERE heap=?1", heap,
                     NULL, 0, NULL, NULL, 0, NULL);
}

int mt_capture_checkpoint_store(mt_capture* cap, int heap, const mt_checkpoint_row* row) {
    const int64_t vals[] = {
        (int64_t)row->seq,      row->ts_max,  row->ts_min, (int64_t)row->high_bytes,
        (int64_t)row->high_seq, row->high_ts, row->format, (int64_t)row->fingerprint};
    const void* blobs[] = {row->allocated, row->data};
    const size_t lens[] = {row->allocated_len, row->len};
    return write_row(cap, MEMTRACE_CHECKPOINT_SQL,
                     "INSERT OR REPLACE INTO checkpoint(heap, seq, ts_max, ts_min, high_bytes,"
                     " high_seq, high_ts, format, fingerprint, allocated, data)"
                     " VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
                     heap, vals, 8, blobs, lens, 2, "checkpoint");
}

// A checkpoint query's key: ?1 heap, ?2 format, ?3 fingerprint, ?4 its own first argument.
static void bind_key(sqlite3_stmt* st, int heap, int64_t format, uint64_t fingerprint,
                     int64_t arg) {
    sqlite3_bind_int(st, 1, heap);
    sqlite3_bind_int64(st, 2, format);
    sqlite3_bind_int64(st, 3, (int64_t)fingerprint);
    sqlite3_bind_int64(st, 4, arg);
}

int mt_capture_checkpoint_settled(mt_capture* cap, int heap, int64_t format, uint64_t fingerprint,
                                  uint64_t after_seq, int64_t ts, uint64_t* seq) {
    sqlite3_stmt* st;
    // A few dozen rows a heap: the suffix minimum of each is computed on the spot.
    if (sqlite3_prepare_v2(mt_capture_db_sqlite(cap),
                           "SELECT c.seq FROM checkpoint c WHERE c.heap=?1 AND c.format=?2 AND"
                           " c.fingerprint=?3 AND c.seq>=?4 AND (SELECT min(d.ts_min) FROM"
                           " checkpoint d WHERE d.heap=?1 AND d.format=?2 AND d.fingerprint=?3"
                           " AND (d.seq>c.seq OR d.seq=0))>?5 ORDER BY c.seq LIMIT 1",
                           -1, &st, NULL) != SQLITE_OK)
        return 0;
    bind_key(st, heap, format, fingerprint, (int64_t)after_seq);
    sqlite3_bind_int64(st, 5, ts);
    int rc = 0;
    if (sqlite3_step(st) == SQLITE_ROW) {
        *seq = (uint64_t)sqlite3_column_int64(st, 0);
        rc = 1;
    }
    sqlite3_finalize(st);
    return rc;
}

// The blob of the first row of st (bound: ?1 heap, ?2 format, ?3 fingerprint, ?4 its own),
// whose columns are seq and the blob: 1 with *seq and *data (data NULL: the seq only), 0
// when there is none, or -ENOMEM. Finalizes st.
static int checkpoint_blob(sqlite3_stmt* st, int heap, int64_t format, uint64_t fingerprint,
                           int64_t arg, uint64_t* seq, uint8_t** data, size_t* len) {
    bind_key(st, heap, format, fingerprint, arg);
    int rc = 0;
    if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_type(st, 1) == SQLITE_BLOB) {
        if (seq)
            *seq = (uint64_t)sqlite3_column_int64(st, 0);
        rc = data ? copy_blob(st, 1, data, len) : 1;
    }
    sqlite3_finalize(st);
    return rc;
}

// A capture without the table (or with an older one, which clear drops) has none: 0.
static sqlite3_stmt* prepare(mt_capture* cap, const char* sql, uint8_t** data, size_t* len) {
    if (data)
        *data = NULL;
    *len = 0;
    sqlite3_stmt* st;
    return sqlite3_prepare_v2(mt_capture_db_sqlite(cap), sql, -1, &st, NULL) == SQLITE_OK ? st
                                                                                          : NULL;
}

int mt_capture_checkpoint_find(mt_capture* cap, int heap, int64_t format, uint64_t fingerprint,
                               int64_t ts_max, uint64_t* seq, uint8_t** data, size_t* len) {
    // The primary key walks a heap's rows by seq. high_seq: a table without it has none to
    // use (clear drops it).
    sqlite3_stmt* st =
        prepare(cap,
                data ? "SELECT seq, data, high_seq FROM checkpoint WHERE heap=?1 AND format=?2 AND"
                       " fingerprint=?3 AND ts_max<=?4 ORDER BY seq DESC LIMIT 1"
                     : "SELECT seq, x'', high_seq FROM checkpoint WHERE heap=?1 AND format=?2 AND"
                       " fingerprint=?3 AND ts_max<=?4 ORDER BY seq DESC LIMIT 1",
                data, len);
    return st ? checkpoint_blob(st, heap, format, fingerprint, ts_max, seq, data, len) : 0;
}

int mt_capture_checkpoint_before(mt_capture* cap, int heap, int64_t format, uint64_t fingerprint,
                                 uint64_t seq_max, uint64_t* seq, uint8_t** data, size_t* len) {
    sqlite3_stmt* st = prepare(cap,
                               "SELECT seq, data, high_seq FROM checkpoint WHERE heap=?1 AND"
                               " format=?2 AND fingerprint=?3 AND seq<=?4 ORDER BY seq DESC"
                               " LIMIT 1",
                               data, len);
    return st ? checkpoint_blob(st, heap, format, fingerprint, (int64_t)seq_max, seq, data, len)
              : 0;
}

int mt_capture_checkpoint_allocated(mt_capture* cap, int heap, int64_t format, uint64_t fingerprint,
                                    uint64_t seq, uint8_t** data, size_t* len) {
    sqlite3_stmt* st = prepare(cap,
                               "SELECT seq, allocated FROM checkpoint WHERE heap=?1 AND"
                               " format=?2 AND fingerprint=?3 AND seq=?4",
                               data, len);
    return st ? checkpoint_blob(st, heap, format, fingerprint, (int64_t)seq, NULL, data, len) : 0;
}

int mt_capture_checkpoint_high(mt_capture* cap, int heap, int64_t format, uint64_t fingerprint,
                               uint64_t after_seq, uint64_t upto_seq, uint64_t* bytes,
                               uint64_t* seq, int64_t* ts) {
    sqlite3_stmt* st;
    // high_bytes is stored as a signed integer: no live bytes reach 2^63 (replay.h).
    if (sqlite3_prepare_v2(mt_capture_db_sqlite(cap),
                           "SELECT high_bytes, high_seq, high_ts FROM checkpoint WHERE heap=?1 AND"
                           " format=?2 AND fingerprint=?3 AND seq>?4 AND seq<=?5"
                           " ORDER BY high_bytes DESC, seq LIMIT 1",
                           -1, &st, NULL) != SQLITE_OK)
        return 0;
    bind_key(st, heap, format, fingerprint, (int64_t)after_seq);
    sqlite3_bind_int64(st, 5, (int64_t)upto_seq);
    int rc = 0;
    if (sqlite3_step(st) == SQLITE_ROW) {
        *bytes = (uint64_t)sqlite3_column_int64(st, 0);
        *seq = (uint64_t)sqlite3_column_int64(st, 1);
        *ts = sqlite3_column_int64(st, 2);
        rc = 1;
    }
    sqlite3_finalize(st);
    return rc;
}
