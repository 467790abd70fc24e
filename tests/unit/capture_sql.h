// SPDX-License-Identifier: MIT
// Raw SQL on the file of an open capture, for unit tests that damage or extend a capture
// by hand, or look at rows the capture API does not give. Programs read and write only
// through memtrace/capture.h; these open a connection of their own on the same file.
#ifndef MEMTRACE_TEST_CAPTURE_SQL_H
#define MEMTRACE_TEST_CAPTURE_SQL_H

#include "memtrace/capture.h"

#include <sqlite3.h>
#include <stddef.h>

// A read-write connection to cap's file (NULL on failure); close it with sqlite3_close.
static inline sqlite3* capture_sql_open(mt_capture* cap) {
    sqlite3* db = NULL;
    if (sqlite3_open_v2(mt_capture_path(cap), &db, SQLITE_OPEN_READWRITE, NULL) != SQLITE_OK) {
        sqlite3_close(db);
        return NULL;
    }
    sqlite3_busy_timeout(db, 10000);
    return db;
}

// Runs sql on cap's file; returns SQLite's result code.
static inline int capture_sql_exec(mt_capture* cap, const char* sql) {
    sqlite3* db = capture_sql_open(cap);
    if (!db)
        return SQLITE_CANTOPEN;
    int rc = sqlite3_exec(db, sql, NULL, NULL, NULL);
    sqlite3_close(db);
    return rc;
}

#endif
