// SPDX-License-Identifier: MIT
// Callsites as the writer stores them (schema 6: compressed rows of callsite_chunk) read back
// exactly by the capture reader: a random tree of 150,000 callsites in two transactions (so
// in several chunks), ids with gaps and beyond 2^32, an id written twice, rows of the old
// table beside the chunks; the old layout (one row per callsite, what schema 5 writers left)
// read as before; a damaged chunk refused; callsites left uncommitted absent, not half there.
#include "../check.h"
#include "../rng.h"
#include "../tmpdir.h"
#include "memtrace/capture.h"
#include "memtrace/codec.h"
#include "memtrace/schema.h"

#include <errno.h>
#include <sqlite3.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N 150000

static void sql(const char* path, const char* q) {
    sqlite3* db;
    CHECK(sqlite3_open(path, &db) == SQLITE_OK);
    char* msg = NULL;
    int rc = sqlite3_exec(db, q, NULL, NULL, &msg);
    if (rc != SQLITE_OK)
        fprintf(stderr, "%s: %s\n", q, msg ? msg : "?");
    CHECK_EQ_I64(rc, SQLITE_OK);
    sqlite3_free(msg);
    sqlite3_close(db);
}

static int64_t query_int(const char* path, const char* q) {
    sqlite3* db;
    sqlite3_stmt* st;
    int64_t v = -1;
    if (sqlite3_open(path, &db) == SQLITE_OK &&
        sqlite3_prepare_v2(db, q, -1, &st, NULL) == SQLITE_OK) {
        if (sqlite3_step(st) == SQLITE_ROW)
            v = sqlite3_column_int64(st, 0);
        sqlite3_finalize(st);
    }
    sqlite3_close(db);
    return v;
}

typedef struct got {
    mt_callsite_rec* c;
    size_t n, cap;
} got;

static int collect(void* ud, const mt_callsite_rec* c) {
    got* g = ud;
    if (g->n == g->cap) {
        g->cap = g->cap ? 2 * g->cap : 1024;
        g->c = realloc(g->c, g->cap * sizeof *g->c);
    }
    g->c[g->n++] = *c;
    return 0;
}

// What the reader gives for path: 0 and every callsite, or the open's error.
static int read_back(const char* path, got* g, char* err, size_t errlen) {
    mt_capture* cap;
    memset(g, 0, sizeof *g);
    int rc = mt_capture_open(path, &cap, err, errlen);
    if (rc)
        return rc;
    rc = mt_capture_callsites(cap, collect, g);
    int64_t max_frame, max_site;
    if (!rc && !(rc = mt_capture_stack_ids(cap, &max_frame, &max_site)))
        CHECK_EQ_I64(max_site, g->n ? g->c[g->n - 1].id : 0);
    mt_capture_close(cap);
    return rc;
}

static bool same(const mt_callsite_rec* a, const mt_callsite_rec* b) {
    return a->id == b->id && a->parent_id == b->parent_id && a->frame_id == b->frame_id &&
           a->depth == b->depth;
}

// Reads path back and checks it holds exactly want[0..n).
static void check_all(const char* path, const mt_callsite_rec* want, size_t n) {
    char err[256];
    got g;
    CHECK_EQ_I64(read_back(path, &g, err, sizeof err), 0);
    CHECK_EQ_I64((int64_t)g.n, (int64_t)n);
    size_t bad = 0;
    for (size_t i = 0; i < g.n && i < n; i++)
        bad += !same(&g.c[i], &want[i]);
    CHECK_EQ_I64((int64_t)bad, 0);
    free(g.c);
}

// A new capture `name` in the test's directory (its path into path).
static mt_capture_writer* open_writer(char* path, size_t len, const char* name) {
    char err[256];
    mt_capture_writer* w = NULL;
    snprintf(path, len, "%s/%s", test_tmpdir(), name);
    CHECK_EQ_I64(mt_capture_writer_open(path, &w, err, sizeof err), 0);
    return w;
}

// A tree as the tracer grows one: mostly a child of the node before, sometimes of an older
// node, a root now and then; frames from a small set; ids increasing with gaps.
static mt_callsite_rec* random_tree(size_t n, uint64_t seed) {
    mt_callsite_rec* c = calloc(n, sizeof *c);
    uint64_t x = seed;
    int64_t id = 0;
    for (size_t i = 0; i < n; i++) {
        uint64_t r = test_lcg(&x) >> 33;
        id += 1 + (r % 97 == 0 ? (int64_t)(r % 1000) : 0);
        c[i].id = id;
        if (i == 0 || r % 50 == 0) {
            c[i].parent_id = 0;
            c[i].depth = 1;
        } else {
            size_t p = r % 4 == 0 ? (size_t)(r % i) : i - 1;
            c[i].parent_id = c[p].id;
            c[i].depth = c[p].depth + 1;
        }
        c[i].frame_id = 1 + (int64_t)(r % 5000);
    }
    // Ids beyond 32 bits (a long run's), and a frame id 0 (a cut stack's marker frame).
    c[n - 2].id = 4294967296LL;
    c[n - 1].id = 4294967296LL + 77;
    c[n - 1].parent_id = c[n - 2].id;
    c[n - 1].frame_id = 0;
    return c;
}

static void write_sites(mt_capture_writer* w, const mt_callsite_rec* c, size_t from, size_t to) {
    CHECK_EQ_I64(mt_capture_writer_begin(w), 0);
    for (size_t i = from; i < to; i++)
        CHECK_EQ_I64(mt_capture_writer_callsite(w, &c[i]), 0);
    CHECK_EQ_I64(mt_capture_writer_commit(w), 0);
}

static void test_round_trip(void) {
    char path[160], err[256];
    mt_capture_writer* w = open_writer(path, sizeof path, "chunks.db");
    if (!w)
        return;
    mt_callsite_rec* c = random_tree(N, 42);
    write_sites(w, c, 0, N / 3);
    // The second transaction writes one callsite again, changed: the later row is the one.
    mt_callsite_rec again = c[10];
    again.frame_id = 123456;
    CHECK_EQ_I64(mt_capture_writer_begin(w), 0);
    CHECK_EQ_I64(mt_capture_writer_callsite(w, &again), 0);
    CHECK_EQ_I64(mt_capture_writer_commit(w), 0);
    c[10] = again;
    write_sites(w, c, N / 3, N);
    CHECK_EQ_I64(mt_capture_writer_finish(w, "complete"), 0);

    CHECK_EQ_I64(query_int(path, "PRAGMA user_version"), MEMTRACE_SCHEMA_VERSION);
    CHECK_EQ_I64(query_int(path, "SELECT count(*) FROM callsite"), 0);
    // Over MT_CALLSITE_CHUNK_MAX in one commit: two chunks; then one for the rewrite.
    CHECK_EQ_I64(query_int(path, "SELECT count(*) FROM callsite_chunk"), 4);
    CHECK_EQ_I64(query_int(path, "SELECT sum(count) FROM callsite_chunk"), N + 1);
    int64_t bytes = query_int(path, "SELECT sum(length(data)) FROM callsite_chunk");
    CHECK(bytes > 0 && bytes < 6 * N); // under a third of a row's 16.5 bytes
    check_all(path, c, N);

    // Rows of the old table beside the chunks (a tool's, or a fixture's): read too, and a
    // chunk's callsite replaces a row of its id.
    sql(path, "INSERT INTO callsite VALUES(1, 0, 999, 1), (4294967296000, 0, 5, 1)");
    got g;
    CHECK_EQ_I64(read_back(path, &g, err, sizeof err), 0);
    CHECK_EQ_I64((int64_t)g.n, N + 1);
    CHECK(g.n == N + 1 && same(&g.c[0], &c[0]) && g.c[N].id == 4294967296000LL &&
          g.c[N].frame_id == 5);
    free(g.c);

    // A byte of a chunk changed: the capture is refused, in words.
    sql(path, "UPDATE callsite_chunk SET data = substr(data, 1, 10) ||"
              " CASE WHEN substr(data, 11, 1) = x'00' THEN x'01' ELSE x'00' END ||"
              " substr(data, 12) WHERE id = 2");
    CHECK_EQ_I64(read_back(path, &g, err, sizeof err), -EPROTO);
    CHECK_EQ_STR(err, "callsite chunk 2 is corrupt (checksum mismatch)");
    free(g.c);
    sql(path, "UPDATE callsite_chunk SET count = 70000 WHERE id = 2");
    CHECK_EQ_I64(read_back(path, &g, err, sizeof err), -EPROTO);
    CHECK_EQ_STR(err, "callsite chunk 2 is corrupt (impossible count 70000)");
    free(g.c);
    free(c);
}

// The old layout, one row per callsite (schemas 1 to 5), as a schema 5 writer leaves it.
static void test_old_layout(void) {
    char path[160], err[256];
    mt_capture_writer* w = open_writer(path, sizeof path, "rows.db");
    if (!w)
        return;
    mt_callsite_rec* c = random_tree(5000, 7);
    CHECK_EQ_I64(mt_capture_writer_set_codec(w, MT_CODEC_ZSTD_UNITS_CRC32C), 0);
    write_sites(w, c, 0, 5000);
    CHECK_EQ_I64(mt_capture_writer_finish(w, "complete"), 0);
    CHECK_EQ_I64(query_int(path, "PRAGMA user_version"), 4);
    CHECK_EQ_I64(query_int(path, "SELECT count(*) FROM callsite"), 5000);
    CHECK_EQ_I64(query_int(path, "SELECT count(*) FROM callsite_chunk"), 0);
    check_all(path, c, 5000);
    // And a capture made before table callsite_chunk existed.
    sql(path, "DROP TABLE callsite_chunk; PRAGMA user_version = 5");
    check_all(path, c, 5000);
    free(c);
    // A cycle is still found in chunks as in rows.
    if (!(w = open_writer(path, sizeof path, "cycle.db")))
        return;
    mt_callsite_rec cyc[3] = {{5, 7, 1, 1}, {6, 5, 2, 2}, {7, 6, 3, 3}};
    write_sites(w, cyc, 0, 3);
    CHECK_EQ_I64(mt_capture_writer_finish(w, "complete"), 0);
    got g;
    CHECK_EQ_I64(read_back(path, &g, err, sizeof err), -EPROTO);
    CHECK(strstr(err, "has a cycle") != NULL);
    free(g.c);
}

// Callsites travel with the transaction of the events that name them: a writer that stops
// before its commit (a killed program) leaves none of them.
static void test_uncommitted(void) {
    char path[160];
    mt_capture_writer* w = open_writer(path, sizeof path, "killed.db");
    if (!w)
        return;
    mt_callsite_rec* c = random_tree(1000, 3);
    write_sites(w, c, 0, 600);
    CHECK_EQ_I64(mt_capture_writer_begin(w), 0);
    for (size_t i = 600; i < 1000; i++)
        CHECK_EQ_I64(mt_capture_writer_callsite(w, &c[i]), 0);
    mt_capture_writer_abandon(w);
    check_all(path, c, 600);
    free(c);
}

int main(void) {
    test_round_trip();
    test_old_layout();
    test_uncommitted();
    CHECK_DONE();
}
