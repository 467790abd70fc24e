// SPDX-License-Identifier: MIT
// Running SQL over a capture (memtrace/sql.h): opens it read-only with the event tables of
// sql_vtab.c and runs statements, handing each row to the caller as text. Never writes the
// capture: the connection is read-only, so SQLite itself refuses every change.
#define _GNU_SOURCE
#include "memtrace/sql.h"

#include "memtrace/capture.h"

#include <ctype.h>
#include <errno.h>
#include <sqlite3.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct mt_sql {
    sqlite3* db;
    unsigned timeout_s;      // a statement's run time limit, 0 for none
    struct timespec started; // when the current statement started
    bool timed_out;
};

// What a query may call, an allow-list: the core functions of SQLite that read their
// arguments and nothing else (scalar, aggregate, window, date, math, JSON). Never
// load_extension, nor fts3_tokenizer (one argument gives the address of SQLite's tokenizer,
// two register one at any address, which the next fts3 table calls), nor any function an
// extension or a crafted schema could bring.
static const char allowed_functions[] =
    " -> ->> abs acos acosh asin asinh atan atan2 atanh avg ceil ceiling char coalesce cos "
    "cosh count cume_dist date datetime degrees dense_rank exp first_value floor format glob "
    "group_concat hex ifnull iif instr json json_array json_array_length json_each "
    "json_extract json_group_array json_group_object json_insert json_object json_patch "
    "json_quote json_remove json_replace json_set json_tree json_type json_valid julianday "
    "lag last_value lead length like likelihood likely ln log log10 log2 lower ltrim max min "
    "mod nth_value ntile nullif octet_length percent_rank pi pow power printf quote radians "
    "random randomblob rank replace round row_number rtrim sign sin sinh soundex "
    "sqlite_version sqrt strftime string_agg substr substring sum tan tanh time timediff "
    "total trim trunc typeof unhex unicode unixepoch unlikely upper zeroblob ";

// Pragmas that only describe the schema or the file; any argument (a table's name).
static const char allowed_pragmas[] =
    " collation_list database_list foreign_key_list function_list index_info index_list "
    "index_xinfo module_list pragma_list table_info table_list table_xinfo ";
// Pragmas that would set something with an argument: only read (no argument).
static const char read_pragmas[] =
    " application_id encoding freelist_count page_count page_size schema_version "
    "user_version ";

// Whether name is a word of list (words between spaces), whatever its case.
static bool listed(const char* name, const char* list) {
    char word[40];
    size_t n = name ? strlen(name) : 0;
    if (n == 0 || n + 3 > sizeof word)
        return false;
    word[0] = ' ';
    for (size_t i = 0; i < n; i++) {
        if (name[i] == ' ')
            return false;
        word[i + 1] = (char)tolower((unsigned char)name[i]);
    }
    word[n + 1] = ' ';
    word[n + 2] = 0;
    return strstr(list, word) != NULL;
}

// The authorizer: only what reads. A statement that would write, attach a file (ATTACH,
// VACUUM INTO), create anything (a temporary table, an fts3/fts4/fts5/rtree virtual table),
// change a setting or call a function not listed above is refused as it is prepared.
static int authorize(void* unused, int action, const char* a, const char* b, const char* c,
                     const char* d) {
    (void)unused, (void)c, (void)d;
    switch (action) {
    case SQLITE_SELECT:
    case SQLITE_READ:
    case SQLITE_RECURSIVE:
        return SQLITE_OK;
    case SQLITE_UPDATE:
        // Connecting a virtual table (ours, json_each, pragma_table_info) declares it
        // with a CREATE TABLE whose code updates the schema table, never run; a statement's
        // own update of it is refused anyway (read-only, SQLITE_DBCONFIG_DEFENSIVE).
        return a && (!strcmp(a, "sqlite_master") || !strcmp(a, "sqlite_temp_master")) ? SQLITE_OK
                                                                                      : SQLITE_DENY;
    case SQLITE_FUNCTION:
        return listed(b, allowed_functions) ? SQLITE_OK : SQLITE_DENY;
    case SQLITE_PRAGMA:
        return listed(a, allowed_pragmas) || (!b && listed(a, read_pragmas)) ? SQLITE_OK
                                                                             : SQLITE_DENY;
    default:
        return SQLITE_DENY;
    }
}

// SQLite's own defences, as `sqlite3 --safe` and SQLite's "defense against the dark arts"
// advise for SQL one does not trust over a file one does not trust.
static void harden(sqlite3* db) {
    static const int off[] = {
        SQLITE_DBCONFIG_TRUSTED_SCHEMA,        // the capture's schema may not call our tables
        SQLITE_DBCONFIG_ENABLE_FTS3_TOKENIZER, // fts3_tokenizer() with two arguments
        SQLITE_DBCONFIG_ENABLE_LOAD_EXTENSION,
        SQLITE_DBCONFIG_ENABLE_TRIGGER, // a capture has none; a crafted one's never run
        SQLITE_DBCONFIG_ENABLE_VIEW,    // the capture's views; TEMP ones still work
    };
    sqlite3_db_config(db, SQLITE_DBCONFIG_DEFENSIVE, 1, NULL);
    for (size_t i = 0; i < sizeof off / sizeof *off; i++)
        sqlite3_db_config(db, off[i], 0, NULL);
    sqlite3_limit(db, SQLITE_LIMIT_ATTACHED, 0);
    sqlite3_limit(db, SQLITE_LIMIT_LENGTH, 256 << 20); // a string or BLOB
    sqlite3_limit(db, SQLITE_LIMIT_SQL_LENGTH, 16 << 20);
    sqlite3_limit(db, SQLITE_LIMIT_COLUMN, 1000);
    sqlite3_limit(db, SQLITE_LIMIT_EXPR_DEPTH, 200);
    sqlite3_limit(db, SQLITE_LIMIT_COMPOUND_SELECT, 100);
    sqlite3_limit(db, SQLITE_LIMIT_FUNCTION_ARG, 32);
    sqlite3_limit(db, SQLITE_LIMIT_TRIGGER_DEPTH, 1);
    sqlite3_limit(db, SQLITE_LIMIT_WORKER_THREADS, 0);
}

// Called every PROGRESS_OPS virtual machine steps: a nonzero return interrupts the statement.
#define PROGRESS_OPS 1000
static int on_progress(void* ud) {
    mt_sql* s = ud;
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    if (now.tv_sec - s->started.tv_sec - (now.tv_nsec < s->started.tv_nsec) >= (time_t)s->timeout_s)
        s->timed_out = true;
    return s->timed_out;
}

void mt_sql_set_limits(mt_sql* s, unsigned timeout_s, int64_t max_heap) {
    s->timeout_s = timeout_s;
    sqlite3_progress_handler(s->db, timeout_s ? PROGRESS_OPS : 0, timeout_s ? on_progress : NULL,
                             s);
    sqlite3_hard_heap_limit64(max_heap > 0 ? max_heap : 0);
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
    harden(s->db);
    char* msg = NULL;
    if (mt_sql_register(s->db, &msg) != SQLITE_OK) {
        snprintf(err, errlen, "cannot add the event tables: %s", msg ? msg : sqlite3_errmsg(s->db));
        sqlite3_free(msg);
        mt_sql_close(s);
        return -EIO;
    }
    // After the tables are added: from here on, statements only read.
    sqlite3_set_authorizer(s->db, authorize, NULL);
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
    case SQLITE_NOMEM:
        return -ENOMEM;
    case SQLITE_IOERR:
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
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
static int run_statement(mt_sql* s, sqlite3_stmt* st, const mt_sql_sink* sink, char* err,
                         size_t errlen) {
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
    clock_gettime(CLOCK_MONOTONIC, &s->started);
    s->timed_out = false;
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
    if (step != SQLITE_DONE && s->timed_out) {
        snprintf(err, errlen, "query stopped after %u s", s->timeout_s);
        rc = -ETIME;
        goto out;
    }
    if (step != SQLITE_DONE) {
        snprintf(err, errlen, "SQL error: %s", sqlite3_errmsg(s->db));
        rc = sql_errno(sqlite3_extended_errcode(s->db));
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
        int rc = run_statement(s, st, sink, err, errlen);
        sqlite3_finalize(st);
        if (rc)
            return rc;
    }
    return 0;
}

int mt_sql_complete(const char* sql) {
    return sqlite3_complete(sql);
}
