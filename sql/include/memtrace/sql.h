// SPDX-License-Identifier: MIT
// SQL over a capture (docs/capture-format.md): the capture's own tables plus
//   events(seq, ts, kind, heap, tid, addr, size, callsite): the event chunks decoded on the
//     fly, in seq order; constraints on seq, ts and heap select the chunks to decode;
//   allocations(seq, ts, size, tid, callsite, freed_ts, freed_tid, addr, heap): each
//     allocation with the free that released it (NULLs: still live at the end);
//   stacks(callsite, depth, function, file, line, module): one row per frame, depth 0 the
//     allocating function; constraints on callsite choose the chains walked.
// The capture is opened read-only, and statements may only read: no statement can change it,
// write a file, load code or call a function outside SQLite's core ones.
#ifndef MEMTRACE_SQL_H
#define MEMTRACE_SQL_H

#include <stddef.h>
#include <stdint.h>

typedef struct sqlite3 sqlite3;
typedef struct mt_sql mt_sql;

// Validates the capture (as mt_capture_open does) and opens it read-only with the tables
// above. Returns 0 or a negative errno (as mt_capture_open) with a message in err.
int mt_sql_open(const char* path, mt_sql** out, char* err, size_t errlen);
void mt_sql_close(mt_sql* s);

// Bounds on each statement: its run time (timeout_s seconds, 0 for none: it is then stopped
// and exec returns -ETIME) and SQLite's heap (max_heap bytes, 0 for none; process-wide:
// sqlite3_hard_heap_limit64; beyond it exec returns -ENOMEM).
void mt_sql_set_limits(mt_sql* s, unsigned timeout_s, int64_t max_heap);

// The type of a value handed to a row callback.
enum { MT_SQL_NULL, MT_SQL_INTEGER, MT_SQL_FLOAT, MT_SQL_TEXT, MT_SQL_BLOB };

// One statement's result as exec hands it over. values[i] is the column's text (NULL for
// SQL NULL; a BLOB as lowercase hex), valid until the callback returns.
typedef struct mt_sql_row {
    int ncol;
    const char* const* names;
    const char* const* values;
    const int* types;
} mt_sql_row;

// row: called for each row; end: after each statement (row->values NULL; ncol 0 for a
// statement that returns no columns). A nonzero return stops exec and is returned.
typedef struct mt_sql_sink {
    int (*row)(void* ud, const mt_sql_row* row);
    int (*end)(void* ud, const mt_sql_row* columns);
    void* ud;
} mt_sql_sink;

// Runs every statement of sql in turn. Returns 0, a callback's nonzero value, -EINVAL for a
// statement SQLite refuses (syntax, unknown table, an attempt to write) or the authorizer
// does (anything but reading, a function that is not SQLite's own), -EPROTO for a corrupt
// capture, -EIO for an I/O error, -ENOMEM, or -ETIME (mt_sql_set_limits), with the message in
// err.
int mt_sql_exec(mt_sql* s, const char* sql, const mt_sql_sink* sink, char* err, size_t errlen);

// True when sql ends with a complete statement (a `;` outside strings, comments and
// triggers): what an interactive prompt waits for before running what was typed.
int mt_sql_complete(const char* sql);

// Adds the tables events, allocations and stacks to an open connection (what
// mt_sql_open and the loadable extension memtrace_sqlite.so do). Returns an SQLite code.
int mt_sql_register(sqlite3* db, char** errmsg);

#endif
