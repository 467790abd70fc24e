// SPDX-License-Identifier: MIT
// Inside common/ only: an open capture and its SQLite connection, for the modules that read
// it (capture.c opens, capture_events.c streams the events, capture_tables.c reads the
// other tables). Nothing outside common/ sees SQL.
#ifndef MEMTRACE_CAPTURE_DB_H
#define MEMTRACE_CAPTURE_DB_H

#include "memtrace/capture.h"

#include <sqlite3.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct mt_capture {
    sqlite3* db;
    char* path;
    int64_t version; // PRAGMA user_version: which chunk codec to expect
    // Corrupt chunks already reported (when skipping them), so a report that reads the
    // events twice says it once.
    int64_t* skipped;
    size_t nskipped, capskipped;
    // mt_capture_open_live: a read-only snapshot of a capture being written; what the
    // files looked like before the first read (mt_capture_live_changed compares).
    bool live;
    char live_stamp[96];
    // Read with its -wal in exclusive locking mode (open_unfinished): no second connection.
    bool unfinished;
    // Why the last typed read failed when SQLite did not (a value beyond the limits of
    // memtrace/event.h); mt_capture_error gives it, then SQLite's message once cleared.
    char problem[96];
};

sqlite3* mt_capture_db_sqlite(mt_capture* cap);

// Words a failed SQLite call on db into err ("corrupt capture: DOING: ...", "locked by
// another process", ...) and returns -EPROTO (damaged file) or -EIO.
int mt_capture_db_sql_problem(sqlite3* db, const char* doing, char* err, size_t errlen);

// Whether the capture has callsite chunks (schema 6): 0, or -EPROTO.
int mt_capture_db_has_callsite_chunks(sqlite3* db, bool* out);
// Every callsite, from table callsite and table callsite_chunk, in id order, each id once
// (its last row: chunks after rows, a later chunk after an earlier one), into *out (malloc'd,
// the caller frees; NULL when none). Returns 0, or -EPROTO/-EIO/-ENOMEM with words in err.
int mt_capture_db_callsites(sqlite3* db, mt_callsite_rec** out, size_t* n, char* err,
                            size_t errlen);

#endif
