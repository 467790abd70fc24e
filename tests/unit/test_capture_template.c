// SPDX-License-Identifier: MIT
// A new capture is a copy of the empty one built with the library: creating it runs no
// CREATE statement (parsing and running them was most of a short program's capture
// creation), and it holds exactly what the schema's statements make (tables, indexes, their
// SQL, the event kinds, the meta rows, the pragmas), in WAL mode with no -shm.
#include "../check.h"
#include "../tmpdir.h"
#include "memtrace/capture.h"
#include "memtrace/capture_schema.h"

#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int creates_run; // CREATE statements run by any connection since the last reset

static int on_statement(unsigned type, void* ctx, void* stmt, void* sql) {
    (void)type, (void)ctx, (void)sql;
    const char* text = sqlite3_sql((sqlite3_stmt*)stmt);
    if (text && strncmp(text, "CREATE", 6) == 0)
        creates_run++;
    return 0;
}

// Registered for every connection opened, so it sees the capture writer's own.
static int trace_connection(sqlite3* db, char** err, const void* api) {
    (void)err, (void)api;
    sqlite3_trace_v2(db, SQLITE_TRACE_STMT, on_statement, NULL);
    return SQLITE_OK;
}

// Every row of sql as text, "|" between columns and ";" after rows.
static void rows(sqlite3* db, const char* sql, char* out, size_t len) {
    sqlite3_stmt* st;
    snprintf(out, len, "error: %s", sql);
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
        return;
    out[0] = 0;
    while (sqlite3_step(st) == SQLITE_ROW)
        for (int i = 0; i < sqlite3_column_count(st); i++) {
            const char* v = (const char*)sqlite3_column_text(st, i);
            size_t used = strlen(out);
            snprintf(out + used, len - used, "%s%s", v ? v : "NULL",
                     i + 1 < sqlite3_column_count(st) ? "|" : ";");
        }
    sqlite3_finalize(st);
}

static const char* const QUERIES[] = {
    "SELECT type, name, tbl_name, rootpage, sql FROM sqlite_master ORDER BY rowid",
    "SELECT * FROM event_kind ORDER BY id",
    "SELECT * FROM meta ORDER BY key",
    "PRAGMA application_id",
    "PRAGMA user_version",
    "PRAGMA page_size",
    "PRAGMA journal_mode",
    "PRAGMA integrity_check",
};

static void test_copy_of_the_schema(void) {
    char made[160], copied[160];
    snprintf(made, sizeof made, "%s/made.db", test_tmpdir());
    snprintf(copied, sizeof copied, "%s/copied.db", test_tmpdir());
    sqlite3* db;
    CHECK(sqlite3_open(made, &db) == SQLITE_OK);
    CHECK_EQ_I64(mt_capture_schema_create(db), 0);
    sqlite3_close(db);

    creates_run = 0;
    sqlite3_auto_extension((void (*)(void))trace_connection);
    mt_capture_writer* w;
    char err[256];
    CHECK_EQ_I64(mt_capture_writer_open(copied, &w, err, sizeof err), 0);
    sqlite3_cancel_auto_extension((void (*)(void))trace_connection);
    CHECK_EQ_I64(creates_run, 0);
    mt_capture_writer_abandon(w); // closed as it was made: in WAL mode, 'recording'
    char shm[170];
    snprintf(shm, sizeof shm, "%s-shm", copied);
    CHECK(access(shm, F_OK) != 0);

    sqlite3 *a, *b;
    CHECK(sqlite3_open(made, &a) == SQLITE_OK);
    CHECK(sqlite3_open(copied, &b) == SQLITE_OK);
    static char ra[16384], rb[16384];
    for (size_t i = 0; i < sizeof QUERIES / sizeof *QUERIES; i++) {
        rows(a, QUERIES[i], ra, sizeof ra);
        rows(b, QUERIES[i], rb, sizeof rb);
        CHECK_EQ_STR(rb, ra);
        CHECK(strlen(ra) > 0);
    }
    sqlite3_close(a);
    sqlite3_close(b);
    unlink(made);
    unlink(copied);
}

int main(void) {
    test_copy_of_the_schema();
    printf("%d checks, %d failures\n", check_count, check_failures);
    return check_failures != 0;
}
