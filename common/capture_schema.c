// SPDX-License-Identifier: MIT
// The schema of a new capture (capture_schema.h). Run by capture_template_gen at build time
// and by its test; never by the tracer (it copies the image this builds).
#define _GNU_SOURCE
#include "memtrace/capture_schema.h"

#include "memtrace/schema.h"

#include <errno.h>
#include <sqlite3.h>
#include <stdio.h>

static int exec(sqlite3* db, const char* sql) {
    return sqlite3_exec(db, sql, NULL, NULL, NULL) == SQLITE_OK ? 0 : -EIO;
}

static int insert_event_kinds(sqlite3* db) {
    sqlite3_stmt* st;
    if (sqlite3_prepare_v2(db, "INSERT OR REPLACE INTO event_kind VALUES(?1,?2,?3,?4)", -1, &st,
                           NULL) != SQLITE_OK)
        return -EIO;
    int rc = 0;
#define MT_KIND_ROW_(id, e, name, a, f)                                                            \
    sqlite3_bind_int(st, 1, id);                                                                   \
    sqlite3_bind_text(st, 2, name, -1, SQLITE_STATIC);                                             \
    sqlite3_bind_int(st, 3, a);                                                                    \
    sqlite3_bind_int(st, 4, f);                                                                    \
    if (sqlite3_step(st) != SQLITE_DONE)                                                           \
        rc = -EIO;                                                                                 \
    sqlite3_reset(st);
    MEMTRACE_EVENT_KIND_MAP(MT_KIND_ROW_)
#undef MT_KIND_ROW_
    sqlite3_finalize(st);
    return rc;
}

int mt_capture_schema_create(sqlite3* db) {
    char sql[256];
    // Chunk blobs (tens of KB) live in overflow page chains; small pages waste only the
    // tail of each chain (64 KiB pages left ~12% of the file empty). WAL keeps each commit
    // an append.
    // synchronous=OFF first: switching to WAL under the default FULL would fsync. The schema
    // goes in under an in-memory journal, and WAL starts after it: no -journal file.
    if (exec(db, "PRAGMA synchronous=OFF; PRAGMA locking_mode=EXCLUSIVE; PRAGMA page_size=4096;"
                 " PRAGMA journal_mode=MEMORY;"))
        return -EIO;
    snprintf(sql, sizeof sql, "PRAGMA application_id=%d; PRAGMA user_version=%d;",
             MEMTRACE_APPLICATION_ID, MEMTRACE_SCHEMA_VERSION);
    if (exec(db, "BEGIN") || exec(db, sql) || exec(db, MEMTRACE_SCHEMA_SQL) ||
        insert_event_kinds(db))
        return -EIO;
    snprintf(sql, sizeof sql,
             "INSERT OR REPLACE INTO meta VALUES('schema_version',%d),"
             "('capture_status','recording')",
             MEMTRACE_SCHEMA_VERSION);
    return exec(db, sql) || exec(db, "COMMIT") || exec(db, "PRAGMA journal_mode=WAL") ? -EIO : 0;
}
