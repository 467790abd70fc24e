// SPDX-License-Identifier: MIT
// limits_fixture CASE PATH: writes a capture at the edges of what readers accept
// (docs/capture-format.md, "Limits") through the project's own writer, for check_limits.py.
// Test-only; exits 99 on any setup failure (fixture.c).
#include "fixture.h"

#include "memtrace/codec.h"
#include "memtrace/schema.h"

#include <sqlite3.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void stack(fx* f) {
    fx_sql(f, "INSERT INTO meta VALUES('exe','/usr/bin/prog'),('cmdline','[\"prog\"]'),"
              "('pid','4242'),('symbolized','1');"
              "INSERT INTO thread(tid, name) VALUES(100,'main');"
              "INSERT INTO mapping VALUES(1,'/usr/bin/prog',4096,65536,0,'ab',0,NULL);"
              "INSERT INTO frame VALUES(1,1,4097,4097,'main','prog.c',10,NULL,1),"
              "(2,1,4098,4098,'make_pool','pool.c',20,NULL,1),"
              "(3,1,4099,4099,'make_node','tree.c',30,NULL,1);"
              "INSERT INTO callsite VALUES(1,0,1,1),(2,1,2,2),(3,1,3,2);");
}

// Sizes (all allocations live at the end, so every report sums them all).
static void sizes(fx* f, const char* which) {
    const uint64_t g62 = UINT64_C(1) << 62;
    if (!strcmp(which, "size-over")) { // the tracer never writes a size over 2^63-1
        fx_alloc(f, 100, 0x1000, UINT64_C(1) << 63, 2);
        fx_alloc(f, 100, 0x2000, UINT64_C(1) << 63, 2);
        fx_alloc(f, 100, 0x3000, 100, 3);
    } else if (!strcmp(which, "size-max")) { // exact: 2^63-1 in one block
        fx_alloc(f, 100, 0x1000, (uint64_t)INT64_MAX, 2);
    } else if (!strcmp(which, "size-half")) { // exact: a process's share of 2^63-1 among 2
        fx_alloc(f, 100, 0x1000, g62 - 1, 2);
    } else if (!strcmp(which, "size-sum-max")) { // exact: 2^63-1 in all, two sites
        fx_alloc(f, 100, 0x1000, g62, 2);
        fx_alloc(f, 100, 0x2000, g62 - 1, 3);
    } else { // size-sum-over: each size fine, their sum over 2^63-1
        for (uint64_t i = 1; i <= 3; i++)
            fx_alloc(f, 100, 0x1000 * i, g62, 2);
    }
}

// Times (ns since the capture's start; the tracer's are never negative).
static void times(fx* f, const char* which) {
    const int64_t edge = (INT64_C(1) << 62) - 1;
    int64_t at[3] = {-1500000000, -1000000000, 500000000}; // ts-negative: before the start
    if (!strcmp(which, "ts-extreme")) {                    // the farthest a reader accepts
        at[0] = -edge;
        at[1] = 0;
        at[2] = edge;
    } else if (!strcmp(which, "ts-over")) { // the tracer never writes these
        at[0] = 1000;
        at[1] = INT64_MIN;
        at[2] = INT64_MAX;
    }
    fx_alloc(f, 100, 0x1000, 100, 2);
    f->ev[f->n - 1].ts = at[0];
    fx_alloc(f, 100, 0x2000, 200, 3);
    f->ev[f->n - 1].ts = at[1];
    fx_free(f, 100, 0x1000);
    f->ev[f->n - 1].ts = at[2];
}

// Chunks of a few hundred bytes, each decoding into N allocations and frees of one block,
// all the same seq range (the merge holds every chunk starting at or below its minimum):
// chunk-bomb, 20 chunks of 4 M events (a 98 KB file that took 7 GB to read), written by
// hand since the writer refuses chunks of more than MT_CHUNK_EVENTS_MAX events;
// chunk-overlap, 200 chunks of MT_CHUNK_EVENTS_MAX (600 MB decoded).
static void chunk_bomb(fx* f, uint32_t N, int CHUNKS) {
    mt_event* ev = malloc(N * sizeof *ev);
    uint8_t* blob = malloc(mt_codec_bound(N));
    mt_chunk_coder* coder = mt_codec_chunk_coder_new();
    if (!ev || !blob || !coder) {
        fputs("limits_fixture: out of memory\n", stderr);
        exit(99);
    }
    for (uint32_t i = 0; i < N; i++)
        ev[i] = (mt_event){.seq = i + 1u,
                           .ts = (int64_t)i,
                           .addr = 0x1000,
                           .size = i % 2 ? 0 : 64,
                           .callsite = i % 2 ? 0 : 2,
                           .tid = 100,
                           .kind = (uint8_t)(i % 2 ? MT_KIND_FREE : MT_KIND_MALLOC),
                           .heap = MT_HEAP_LIBC};
    mt_chunk_header h = {MT_HEAP_LIBC, 1, N, 0, N - 1, N};
    size_t len =
        mt_codec_chunk_encode(coder, mt_codec_of_schema(MEMTRACE_SCHEMA_VERSION), &h, ev, N, blob);
    sqlite3* db = mt_capture_writer_db(f->w);
    sqlite3_stmt* st;
    if (!len || sqlite3_prepare_v2(db,
                                   "INSERT INTO event_chunk(heap, seq_first, seq_last, ts_first,"
                                   " ts_last, count, codec, data) VALUES (1, 1, ?1, 0, ?2, ?1,"
                                   " ?3, ?4)",
                                   -1, &st, NULL) != SQLITE_OK) {
        fputs("limits_fixture: cannot write the chunks\n", stderr);
        exit(99);
    }
    for (int k = 0; k < CHUNKS; k++) {
        sqlite3_bind_int64(st, 1, N);
        sqlite3_bind_int64(st, 2, N - 1);
        sqlite3_bind_int(st, 3, mt_codec_of_schema(MEMTRACE_SCHEMA_VERSION));
        sqlite3_bind_blob(st, 4, blob, (int)len, SQLITE_STATIC);
        if (sqlite3_step(st) != SQLITE_DONE) {
            fprintf(stderr, "limits_fixture: %s\n", sqlite3_errmsg(db));
            exit(99);
        }
        sqlite3_reset(st);
    }
    sqlite3_finalize(st);
    mt_codec_chunk_coder_free(coder);
    free(blob);
    free(ev);
}

// A function name of 20 KiB (Graphviz refuses labels and strings of over 16 KiB): "long_",
// then "\xc3\xa9" (e acute) repeated, a quote and a backslash in the middle, "_end".
static void long_name(fx* f) {
    enum { LEN = 20 * 1024 };
    static char name[LEN + 1];
    size_t n = 0;
    n += (size_t)snprintf(name, sizeof name, "long_");
    while (n < LEN - 4) {
        if (n >= LEN / 2 && !strchr(name, '"')) {
            name[n++] = '"';
            name[n++] = '\\';
        } else if (n + 2 <= LEN - 4) {
            name[n++] = '\xc3';
            name[n++] = '\xa9';
        } else {
            name[n++] = 'x';
        }
    }
    memcpy(name + n, "_end", 5);
    sqlite3* db = mt_capture_writer_db(f->w);
    sqlite3_stmt* st;
    if (sqlite3_prepare_v2(db, "UPDATE frame SET function=?1 WHERE id=2", -1, &st, NULL) !=
            SQLITE_OK ||
        sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC) != SQLITE_OK ||
        sqlite3_step(st) != SQLITE_DONE) {
        fprintf(stderr, "limits_fixture: %s\n", sqlite3_errmsg(db));
        exit(99);
    }
    sqlite3_finalize(st);
    fx_alloc(f, 100, 0x1000, 4096, 2);
    fx_alloc(f, 100, 0x2000, 1024, 3);
}

int main(int argc, char** argv) {
    static const char* const cases[] = {
        "size-over",  "size-max", "size-half",  "size-sum-max",  "size-sum-over", "ts-negative",
        "ts-extreme", "ts-over",  "chunk-bomb", "chunk-overlap", "long-name"};
    const char* which = argc == 3 ? argv[1] : "";
    bool known = false;
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
        known |= !strcmp(which, cases[i]);
    if (!known) {
        fputs("usage: limits_fixture CASE CAPTURE\ncases:", stderr);
        for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
            fprintf(stderr, " %s", cases[i]);
        fputc('\n', stderr);
        return 1;
    }
    fx f;
    fx_open(&f, argv[2]);
    stack(&f);
    if (!strcmp(which, "chunk-bomb"))
        chunk_bomb(&f, UINT32_C(1) << 22, 20);
    else if (!strcmp(which, "chunk-overlap"))
        chunk_bomb(&f, MT_CHUNK_EVENTS_MAX, 200);
    else if (!strcmp(which, "long-name"))
        long_name(&f);
    else if (!strncmp(which, "ts-", 3))
        times(&f, which);
    else
        sizes(&f, which);
    fx_finish(&f, "complete");
    return 0;
}
