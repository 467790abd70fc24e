// SPDX-License-Identifier: MIT
// Running SQL over a capture (memtrace/sql.h): opens it read-only with the event tables of
// sql_vtab.c and runs statements, handing each row to the caller as text. Never writes the
// capture: the connection is read-only, so SQLite itself refuses every change.
#define _GNU_SOURCE
#include "memtrace/sql.h"

#include "memtrace/capture.h"

#include <errno.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct mt_sql {
    sqlite3* db;
};

// The connection is read-only, yet VACUUM INTO writes a new file: it attaches its output.
// ATTACH and DETACH are refused, as the sqlite3 shell's --safe mode refuses them, so a
// query (or one handed to us) can only read.
static int refuse_attach(void* unused, int action, const char* a, const char* b, const char* c,
                         const char* d) {
    (void)unused, (void)a, (void)b, (void)c, (void)d;
    return action == SQLITE_ATTACH || action == SQLITE_DETACH ? SQLITE_DENY : SQLITE_OK;
}

int mt_sql_open(const char* path, mt_sql** out, char* err, size_t errlen) {
    *out = NULL;
    // The capture reader's checks first: the same words for a missing, foreign or damaged
    // file as every other report.
    mt_capture* cap;
    int rc = mt_capture_open(path, &cap, err, errlen);
    if (rc)
        return rc;
    mt_capture_close(cap);
    mt_sql* s = calloc(1, sizeof *s);
    if (!s) {
        snprintf(err, errlen, "out of memory");
        return -ENOMEM;
    }
    // "unix-none" and exclusive locking, as memreport live reads (capture.c): a capture left
    // unfinished (its -wal beside it) is read with the WAL index in this process's memory,
    // so no -shm file is created beside it; the reader's checks above found no writer.
    if (sqlite3_open_v2(path, &s->db, SQLITE_OPEN_READONLY, "unix-none") != SQLITE_OK) {
        snprintf(err, errlen, "cannot open: %s", sqlite3_errmsg(s->db));
        mt_sql_close(s);
        return -EIO;
    }
    sqlite3_busy_timeout(s->db, 2000);
    // Never a checkpoint at close: it would write the capture and remove its -wal.
    sqlite3_db_config(s->db, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, NULL);
    if (sqlite3_exec(s->db, "PRAGMA locking_mode=EXCLUSIVE", NULL, NULL, NULL) != SQLITE_OK) {
        snprintf(err, errlen, "cannot open: %s", sqlite3_errmsg(s->db));
        mt_sql_close(s);
        return -EIO;
    }
    // A crafted capture's views and triggers may not call our tables or functions.
    sqlite3_db_config(s->db, SQLITE_DBCONFIG_DEFENSIVE, 1, NULL);
    sqlite3_db_config(s->db, SQLITE_DBCONFIG_TRUSTED_SCHEMA, 0, NULL);
    sqlite3_set_authorizer(s->db, refuse_attach, NULL);
    char* msg = NULL;
    if (mt_sql_register(s->db, &msg) != SQLITE_OK) {
        snprintf(err, errlen, "cannot add the event tables: %s", msg ? msg : sqlite3_errmsg(s->db));
        sqlite3_free(msg);
        mt_sql_close(s);
        return -EIO;
    }
    *out = s;
    return 0;
}

void mt_sql_close(mt_sql* s) {
    if (!s)
        return;
    sqlite3_close(s->db);
    free(s);
}

// An SQLite failure as an errno: damaged file, trouble reading it, or a refused statement.
static int sql_errno(int code) {
    switch (code & 0xff) {
    case SQLITE_CORRUPT:
    case SQLITE_NOTADB:
    case SQLITE_FORMAT:
        return -EPROTO;
    case SQLITE_IOERR:
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
    case SQLITE_NOMEM:
    case SQLITE_CANTOPEN:
    case SQLITE_FULL:
        return -EIO;
    default:
        return -EINVAL;
    }
}

// The text of one value: SQLite's own, except a BLOB, shown as hex.
static char* value_text(sqlite3_stmt* st, int i, int* type) {
    switch (sqlite3_column_type(st, i)) {
    case SQLITE_NULL:
        *type = MT_SQL_NULL;
        return NULL;
    case SQLITE_INTEGER:
        *type = MT_SQL_INTEGER;
        break;
    case SQLITE_FLOAT:
        *type = MT_SQL_FLOAT;
        break;
    case SQLITE_BLOB: {
        *type = MT_SQL_BLOB;
        const unsigned char* b = sqlite3_column_blob(st, i);
        size_t n = (size_t)sqlite3_column_bytes(st, i);
        char* hex = malloc(2 * n + 1);
        if (!hex)
            return NULL;
        for (size_t k = 0; k < n; k++)
            snprintf(hex + 2 * k, 3, "%02x", b[k]);
        hex[2 * n] = 0;
        return hex;
    }
    default:
        *type = MT_SQL_TEXT;
        break;
    }
    const char* t = (const char*)sqlite3_column_text(st, i);
    return strdup(t ? t : "");
}

// Steps one prepared statement, handing its rows to the sink.
static int run_statement(sqlite3_stmt* st, const mt_sql_sink* sink, char* err, size_t errlen) {
    int ncol = sqlite3_column_count(st);
    const char** names = calloc((size_t)ncol + 1, sizeof *names);
    char** values = calloc((size_t)ncol + 1, sizeof *values);
    int* types = calloc((size_t)ncol + 1, sizeof *types);
    int rc = 0;
    if (!names || !values || !types) {
        snprintf(err, errlen, "out of memory");
        rc = -ENOMEM;
        goto out;
    }
    for (int i = 0; i < ncol; i++)
        names[i] = sqlite3_column_name(st, i);
    mt_sql_row row = {ncol, names, (const char* const*)values, types};
    int step;
    while ((step = sqlite3_step(st)) == SQLITE_ROW) {
        for (int i = 0; i < ncol; i++) {
            free(values[i]);
            values[i] = value_text(st, i, &types[i]);
            if (!values[i] && types[i] != MT_SQL_NULL) {
                snprintf(err, errlen, "out of memory");
                rc = -ENOMEM;
                goto out;
            }
        }
        if (sink && sink->row && (rc = sink->row(sink->ud, &row)) != 0)
            goto out;
    }
    if (step != SQLITE_DONE) {
        sqlite3* db = sqlite3_db_handle(st);
        snprintf(err, errlen, "SQL error: %s", sqlite3_errmsg(db));
        rc = sql_errno(sqlite3_extended_errcode(db));
        goto out;
    }
    mt_sql_row columns = {ncol, names, NULL, NULL};
    if (sink && sink->end)
        rc = sink->end(sink->ud, &columns);
out:
    for (int i = 0; values && i < ncol; i++)
        free(values[i]);
    free(names);
    free(values);
    free(types);
    return rc;
}

int mt_sql_exec(mt_sql* s, const char* sql, const mt_sql_sink* sink, char* err, size_t errlen) {
    const char* next = sql;
    while (next && *next) {
        sqlite3_stmt* st = NULL;
        const char* tail = NULL;
        if (sqlite3_prepare_v2(s->db, next, -1, &st, &tail) != SQLITE_OK) {
            snprintf(err, errlen, "SQL error: %s", sqlite3_errmsg(s->db));
            return sql_errno(sqlite3_extended_errcode(s->db));
        }
        next = tail;
        if (!st)
            continue; // only blanks or a comment
        int rc = run_statement(st, sink, err, errlen);
        sqlite3_finalize(st);
        if (rc)
            return rc;
    }
    return 0;
}

int mt_sql_complete(const char* sql) {
    return sqlite3_complete(sql);
}
