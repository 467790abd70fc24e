// SPDX-License-Identifier: MIT
// The capture reader against files written by mt_capture_writer: exact read-back in seq order
// across interleaved per-thread chunks, and rejection (message and return code) of every
// kind of bad file. Files live in a private temporary directory removed at the end.
#include "capture_sql.h"

#include "../check.h"
#include "../rng.h"
#include "../tmpdir.h"
#include "memtrace/capture.h"
#include "memtrace/codec.h"
#include "memtrace/schema.h"

#include <errno.h>
#include <fcntl.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static uint64_t rng = 0x2545f4914f6cdd1dull;

// ---- a capture with NTHREADS threads whose events interleave in seq order

enum { NTHREADS = 4, PER_THREAD = 5000, NEVENTS = NTHREADS * PER_THREAD };

static mt_event events[NEVENTS]; // in seq order, the truth

static void make_events(void) {
    uint64_t seq = 0;
    for (size_t i = 0; i < NEVENTS; i++) {
        seq += 1 + test_rng(&rng) % 3; // gaps are allowed
        events[i] = (mt_event){.seq = seq,
                               .ts = (int64_t)(seq * 37),
                               .addr = 0x555500000000ull + (test_rng(&rng) % 50000) * 16,
                               .size = test_rng(&rng) % 100000,
                               .callsite = (uint32_t)(test_rng(&rng) % 1000),
                               .tid = 4000 + (uint32_t)(test_rng(&rng) % NTHREADS),
                               .kind = (uint8_t)(1 + test_rng(&rng) % 14),
                               .heap = MT_HEAP_LIBC};
    }
}

// Writes each thread's events as a sequence of chunks of random sizes, the chunks of all
// threads inserted in an order that is not seq order (as a writer draining per-thread
// buffers produces), plus a few heap-2 events that must not show up in heap 1.
static int write_codec; // 0: the current codec; else an older one (mt_capture_writer_set_codec)

static int write_capture(const char* path, bool finish) {
    char err[256];
    mt_capture_writer* w;
    int rc = mt_capture_writer_open(path, &w, err, sizeof err);
    CHECK_EQ_I64(rc, 0);
    if (rc)
        return rc;
    if (write_codec)
        CHECK_EQ_I64(mt_capture_writer_set_codec(w, write_codec), 0);
    CHECK_EQ_I64(mt_capture_writer_heap(w, MT_HEAP_LIBC, "libc", "libc", "ns"), 0);
    CHECK_EQ_I64(mt_capture_writer_heap(w, MT_HEAP_NPU, "npu", "npu", "step"), 0);
    CHECK_EQ_I64(mt_capture_writer_meta_int(w, "pid", 4242), 0);
    CHECK_EQ_I64(mt_capture_writer_meta_text(w, "exe", "/bin/true"), 0);

    static mt_event per[NTHREADS][NEVENTS];
    size_t n[NTHREADS] = {0}, done[NTHREADS] = {0};
    for (size_t i = 0; i < NEVENTS; i++) {
        int t = (int)(events[i].tid - 4000);
        per[t][n[t]++] = events[i];
    }
    uint8_t* scratch = malloc(mt_codec_bound(NEVENTS));
    CHECK_EQ_I64(mt_capture_writer_begin(w), 0);
    for (;;) {
        // Pick a thread with events left, from the last thread first half of the time, so
        // later-seq chunks are often inserted before earlier ones.
        int t = (int)(test_rng(&rng) % NTHREADS), tries = 0;
        while (done[t] == n[t] && tries++ < NTHREADS)
            t = (t + 1) % NTHREADS;
        if (done[t] == n[t])
            break;
        size_t len = 1 + test_rng(&rng) % 700;
        if (len > n[t] - done[t])
            len = n[t] - done[t];
        CHECK_EQ_I64(mt_capture_writer_chunk(w, MT_HEAP_LIBC, per[t] + done[t], len, scratch), 0);
        done[t] += len;
    }
    mt_event npu[3] = {
        {.seq = 1, .ts = 1, .addr = 1, .size = 10, .tid = 1, .kind = MT_KIND_NPU_ALLOC},
        {.seq = 2, .ts = 2, .addr = 2, .size = 20, .tid = 1, .kind = MT_KIND_NPU_ALLOC},
        {.seq = 3, .ts = 3, .addr = 1, .tid = 1, .kind = MT_KIND_NPU_FREE}};
    CHECK_EQ_I64(mt_capture_writer_chunk(w, MT_HEAP_NPU, npu, 3, scratch), 0);
    CHECK_EQ_I64(mt_capture_writer_counter_track(w, MT_TRACK_RSS, MT_HEAP_LIBC, "RSS", "bytes"), 0);
    CHECK_EQ_I64(mt_capture_writer_counter(w, MT_TRACK_RSS, 5, 1 << 20), 0);
    CHECK_EQ_I64(mt_capture_writer_commit(w), 0);
    free(scratch);
    if (finish)
        return mt_capture_writer_finish(w, "complete");
    mt_capture_writer_abandon(w);
    return 0;
}

static size_t read_all(mt_capture* cap, int heap, mt_event* out, size_t max, int* rc_out) {
    mt_event_iter* it = NULL;
    size_t n = 0;
    int rc = mt_capture_iter_open(cap, heap, &it);
    mt_event ev;
    while (rc == 0 && (rc = mt_capture_iter_next(it, &ev)) == 1) {
        if (n < max)
            out[n] = ev;
        n++;
        rc = 0;
    }
    *rc_out = rc;
    mt_capture_iter_close(it);
    return n;
}

// Field by field: decoded structs have undefined padding bytes.
static bool same_event(const mt_event* a, const mt_event* b) {
    return a->seq == b->seq && a->ts == b->ts && a->addr == b->addr && a->size == b->size &&
           a->callsite == b->callsite && a->tid == b->tid && a->kind == b->kind &&
           a->heap == b->heap;
}

static void check_readback(const char* path, bool expect_truncated) {
    char err[256] = "";
    mt_capture* cap = NULL;
    int rc = mt_capture_open(path, &cap, err, sizeof err);
    CHECK_EQ_I64(rc, 0);
    if (rc) {
        fprintf(stderr, "open %s: %s\n", path, err);
        return;
    }
    CHECK_EQ_STR(mt_capture_path(cap), path);
    CHECK_EQ_I64(mt_capture_truncated(cap), expect_truncated);
    CHECK_EQ_I64(mt_capture_meta_int(cap, "pid", -1), 4242);
    CHECK_EQ_I64(mt_capture_meta_int(cap, "exe", -1), -1); // not an integer: fallback
    CHECK_EQ_I64(mt_capture_meta_int(cap, "no_such_key", -7), -7);
    char* exe = mt_capture_meta_text(cap, "exe");
    CHECK_EQ_STR(exe, "/bin/true");
    free(exe);
    CHECK_NULL(mt_capture_meta_text(cap, "no_such_key"));
    char* status = mt_capture_meta_text(cap, "capture_status");
    CHECK_EQ_STR(status, expect_truncated ? "recording" : "complete");
    free(status);

    static mt_event got[NEVENTS + 1];
    size_t n = read_all(cap, MT_HEAP_LIBC, got, NEVENTS + 1, &rc);
    CHECK_EQ_I64(rc, 0);
    CHECK_EQ_I64(n, NEVENTS);
    size_t bad = 0;
    for (size_t i = 0; i < n && i < NEVENTS; i++) {
        if (!same_event(&got[i], &events[i]) && bad++ < 5)
            fprintf(stderr, "event %zu differs: seq %llu/%llu kind %d/%d tid %u/%u\n", i,
                    (unsigned long long)got[i].seq, (unsigned long long)events[i].seq, got[i].kind,
                    events[i].kind, got[i].tid, events[i].tid);
    }
    CHECK_EQ_I64(bad, 0);

    mt_event npu[4];
    n = read_all(cap, MT_HEAP_NPU, npu, 4, &rc);
    CHECK_EQ_I64(rc, 0);
    CHECK_EQ_I64(n, 3);
    CHECK_EQ_I64(npu[1].size, 20);
    CHECK_EQ_I64(npu[2].kind, MT_KIND_NPU_FREE);
    CHECK_EQ_I64(npu[0].heap, MT_HEAP_NPU);
    n = read_all(cap, 7, npu, 4, &rc); // a heap with no chunks is empty, not an error
    CHECK_EQ_I64(rc, 0);
    CHECK_EQ_I64(n, 0);
    mt_capture_close(cap);
}

// ---- rejection

static void expect_open_fails(const char* what, const char* path, int want_rc,
                              const char* want_msg) {
    char err[512] = "";
    mt_capture* cap = (mt_capture*)&err; // must be reset to NULL
    int rc = mt_capture_open(path, &cap, err, sizeof err);
    if (rc != want_rc || !strstr(err, want_msg))
        fprintf(stderr, "%s: got rc %d \"%s\", want rc %d \"...%s...\"\n", what, rc, err, want_rc,
                want_msg);
    CHECK_EQ_I64(rc, want_rc);
    CHECK(strstr(err, want_msg) != NULL);
    CHECK_NULL(cap);
    if (rc == 0)
        mt_capture_close(cap);
}

// Opens a capture that passes validation and expects event iteration to fail with -EPROTO.
static void expect_iter_fails(const char* what, const char* path, const char* want_msg) {
    char err[512] = "";
    mt_capture* cap = NULL;
    int rc = mt_capture_open(path, &cap, err, sizeof err);
    CHECK_EQ_I64(rc, 0);
    if (rc) {
        fprintf(stderr, "%s: open failed: %s\n", what, err);
        return;
    }
    mt_event_iter* it = NULL;
    mt_event ev;
    size_t n = 0;
    rc = mt_capture_iter_open(cap, MT_HEAP_LIBC, &it);
    while (rc == 0 && (rc = mt_capture_iter_next(it, &ev)) == 1) {
        n++;
        rc = 0;
    }
    const char* msg = it ? mt_capture_iter_error(it) : "";
    if (rc != -EPROTO || !strstr(msg, want_msg))
        fprintf(stderr, "%s: got rc %d after %zu events \"%s\", want -EPROTO \"...%s...\"\n", what,
                rc, n, msg, want_msg);
    CHECK_EQ_I64(rc, -EPROTO);
    CHECK(strstr(msg, want_msg) != NULL);
    CHECK(n < NEVENTS);
    mt_capture_iter_close(it);
    mt_capture_close(cap);
}

static void write_file(const char* path, const void* data, size_t len) {
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    CHECK(fd >= 0);
    if (fd < 0)
        return;
    CHECK_EQ_I64(write(fd, data, len), (int64_t)len);
    close(fd);
}

static void copy_file(const char* from, const char* to, off_t len) {
    int in = open(from, O_RDONLY);
    struct stat st;
    CHECK(in >= 0 && fstat(in, &st) == 0);
    if (len < 0)
        len = st.st_size;
    char* buf = malloc((size_t)st.st_size);
    CHECK_EQ_I64(read(in, buf, (size_t)st.st_size), st.st_size);
    close(in);
    write_file(to, buf, (size_t)len);
    free(buf);
}

static void sql(const char* path, const char* stmt) {
    sqlite3* db;
    CHECK_EQ_I64(sqlite3_open(path, &db), SQLITE_OK);
    char* msg = NULL;
    int rc = sqlite3_exec(db, stmt, NULL, NULL, &msg);
    if (rc != SQLITE_OK)
        fprintf(stderr, "sql %s: %s\n", stmt, msg);
    CHECK_EQ_I64(rc, SQLITE_OK);
    sqlite3_free(msg);
    sqlite3_close(db);
}

// Overwrites every byte of the payload of the nth heap-1 chunk (in seq order) with `byte`.
static void overwrite_chunk(const char* path, int nth, int byte) {
    sqlite3* db;
    sqlite3_stmt* st;
    CHECK_EQ_I64(sqlite3_open(path, &db), SQLITE_OK);
    CHECK_EQ_I64(sqlite3_prepare_v2(db,
                                    "SELECT id, length(data) FROM event_chunk WHERE heap=1"
                                    " ORDER BY seq_first LIMIT 1 OFFSET ?1",
                                    -1, &st, NULL),
                 SQLITE_OK);
    sqlite3_bind_int(st, 1, nth);
    CHECK_EQ_I64(sqlite3_step(st), SQLITE_ROW);
    int64_t id = sqlite3_column_int64(st, 0);
    int len = sqlite3_column_int(st, 1);
    sqlite3_finalize(st);
    unsigned char* data = malloc((size_t)len);
    memset(data, byte, (size_t)len);
    CHECK_EQ_I64(
        sqlite3_prepare_v2(db, "UPDATE event_chunk SET data=?1 WHERE id=?2", -1, &st, NULL),
        SQLITE_OK);
    sqlite3_bind_blob(st, 1, data, len, SQLITE_STATIC);
    sqlite3_bind_int64(st, 2, id);
    CHECK_EQ_I64(sqlite3_step(st), SQLITE_DONE);
    CHECK_EQ_I64(sqlite3_changes(db), 1);
    sqlite3_finalize(st);
    sqlite3_close(db);
    free(data);
}

static void test_rejections(const char* good) {
    expect_open_fails("missing", test_tmppath("no-such-file.db"), -ENOENT,
                      "No such file or directory");
    expect_open_fails("directory", test_tmpdir(), -EISDIR, "is a directory");

    write_file(test_tmppath("empty.db"), "", 0);
    expect_open_fails("empty", test_tmppath("empty.db"), -EPROTO, "empty file");

    const char text[] = "time,bytes\n0,100\n1,200\n"
                        "this is a text file that is long enough to fill an SQLite header, "
                        "so only the magic string tells it apart\n";
    write_file(test_tmppath("text.db"), text, sizeof text - 1);
    expect_open_fails("text", test_tmppath("text.db"), -EPROTO, "not an SQLite database");

    sql(test_tmppath("other.db"), "CREATE TABLE t(x); INSERT INTO t VALUES(1);");
    expect_open_fails("foreign sqlite", test_tmppath("other.db"), -EPROTO,
                      "not a memtrace capture");

    copy_file(good, test_tmppath("newer.db"), -1);
    sql(test_tmppath("newer.db"), "PRAGMA user_version=99");
    expect_open_fails("newer schema", test_tmppath("newer.db"), -ENOTSUP,
                      "schema version 99 is newer");

    copy_file(good, test_tmppath("v0.db"), -1);
    sql(test_tmppath("v0.db"), "PRAGMA user_version=0");
    expect_open_fails("schema 0", test_tmppath("v0.db"), -EPROTO, "schema version 0");

    struct stat st;
    CHECK_EQ_I64(stat(good, &st), 0);
    copy_file(good, test_tmppath("half.db"), st.st_size / 2);
    expect_open_fails("truncated", test_tmppath("half.db"), -EPROTO, "truncated");

    // Garbage over the middle of the file (B-tree pages): the integrity check catches it.
    copy_file(good, test_tmppath("garbage.db"), -1);
    int fd = open(test_tmppath("garbage.db"), O_WRONLY);
    static char junk[65536];
    memset(junk, 0x5a, sizeof junk);
    CHECK_EQ_I64(pwrite(fd, junk, sizeof junk, st.st_size / 2 - 65536 / 2), (int64_t)sizeof junk);
    close(fd);
    expect_open_fails("garbage pages", test_tmppath("garbage.db"), -EPROTO,
                      "the SQLite file is damaged (quick_check: ");

    // Chunk payloads are not covered by SQLite's checks: the checksum must catch them.
    copy_file(good, test_tmppath("badbytes.db"), -1);
    overwrite_chunk(test_tmppath("badbytes.db"), 5, 0xff);
    expect_iter_fails("corrupt chunk bytes", test_tmppath("badbytes.db"), "checksum mismatch");

    copy_file(good, test_tmppath("cutblob.db"), -1);
    sql(test_tmppath("cutblob.db"),
        "UPDATE event_chunk SET data = substr(data, 1, length(data) - 3)"
        " WHERE id = (SELECT id FROM event_chunk WHERE heap=1 ORDER BY seq_first LIMIT 1"
        " OFFSET 9)");
    expect_iter_fails("cut chunk", test_tmppath("cutblob.db"), "checksum mismatch");

    copy_file(good, test_tmppath("liar.db"), -1);
    sql(test_tmppath("liar.db"),
        "UPDATE event_chunk SET count = count + 1 WHERE id = (SELECT id FROM event_chunk"
        " WHERE heap=1 ORDER BY seq_first LIMIT 1 OFFSET 3)");
    expect_iter_fails("count + 1", test_tmppath("liar.db"), "checksum mismatch");

    copy_file(good, test_tmppath("liar2.db"), -1);
    sql(test_tmppath("liar2.db"),
        "UPDATE event_chunk SET count = count - 1 WHERE id = (SELECT id FROM event_chunk"
        " WHERE heap=1 AND count > 1 ORDER BY seq_first LIMIT 1 OFFSET 3)");
    expect_iter_fails("count - 1", test_tmppath("liar2.db"), "checksum mismatch");

    copy_file(good, test_tmppath("liar3.db"), -1);
    sql(test_tmppath("liar3.db"), "UPDATE event_chunk SET count = 1000000000 WHERE id = 2");
    expect_iter_fails("huge count", test_tmppath("liar3.db"), "checksum mismatch");

    copy_file(good, test_tmppath("liar4.db"), -1);
    sql(test_tmppath("liar4.db"), "UPDATE event_chunk SET seq_first = seq_first + 1 WHERE id = 4");
    expect_iter_fails("seq_first lies", test_tmppath("liar4.db"), "checksum mismatch");

    copy_file(good, test_tmppath("codec.db"), -1);
    sql(test_tmppath("codec.db"), "UPDATE event_chunk SET codec = 77 WHERE id = 3");
    expect_iter_fails("unknown codec", test_tmppath("codec.db"), "(codec 77, not 5)");

    // Two chunks holding the same seq: the merge must notice, not report it twice.
    copy_file(good, test_tmppath("dup.db"), -1);
    sql(test_tmppath("dup.db"),
        "INSERT INTO event_chunk(heap, seq_first, seq_last, ts_first, ts_last, count, codec,"
        " data) SELECT heap, seq_first, seq_last, ts_first, ts_last, count, codec, data"
        " FROM event_chunk WHERE id = 6");
    expect_iter_fails("duplicate chunk", test_tmppath("dup.db"), "appears twice");
}

// ---- checksums: every flipped bit of a chunk (its data or its columns) is caught

// Reads a whole file (for byte-for-byte comparisons). *len gets its size.
static char* slurp(const char* path, size_t* len) {
    int fd = open(path, O_RDONLY);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) {
        if (fd >= 0)
            close(fd);
        *len = 0;
        return NULL;
    }
    char* buf = malloc((size_t)st.st_size + 1);
    *len = (size_t)read(fd, buf, (size_t)st.st_size);
    close(fd);
    return buf;
}

static void test_bit_flips(const char* good) {
    enum { FLIPS = 150 };
    sqlite3* db;
    CHECK_EQ_I64(sqlite3_open(good, &db), SQLITE_OK);
    int64_t nchunks = 0;
    sqlite3_stmt* st;
    CHECK_EQ_I64(sqlite3_prepare_v2(db, "SELECT count(*) FROM event_chunk", -1, &st, NULL),
                 SQLITE_OK);
    if (sqlite3_step(st) == SQLITE_ROW)
        nchunks = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    sqlite3_close(db);
    CHECK(nchunks > 10);
    int detected = 0;
    for (int f = 0; f < FLIPS && nchunks > 0; f++) {
        const char* p = test_tmppath("flip.db");
        copy_file(good, p, -1);
        CHECK_EQ_I64(sqlite3_open(p, &db), SQLITE_OK);
        int64_t id = 1 + (int64_t)(test_rng(&rng) % (uint64_t)nchunks);
        char stmt[256];
        if (f % 5 == 4) {
            static const char* const cols[] = {"seq_first", "seq_last", "ts_first",
                                               "ts_last",   "count",    "heap"};
            // A bit of a column the checksum covers; SQL has no xor: (a | b) - (a & b).
            char col[16];
            snprintf(col, sizeof col, "%s", cols[test_rng(&rng) % 6]);
            long long bit = 1ll << (test_rng(&rng) % 40);
            snprintf(stmt, sizeof stmt,
                     "UPDATE event_chunk SET %s = (%s | %lld) - (%s & %lld) WHERE id = %lld", col,
                     col, bit, col, bit, (long long)id);
            CHECK_EQ_I64(sqlite3_exec(db, stmt, NULL, NULL, NULL), SQLITE_OK);
        } else {
            CHECK_EQ_I64(
                sqlite3_prepare_v2(db, "SELECT data FROM event_chunk WHERE id=?1", -1, &st, NULL),
                SQLITE_OK);
            sqlite3_bind_int64(st, 1, id);
            CHECK_EQ_I64(sqlite3_step(st), SQLITE_ROW);
            int len = sqlite3_column_bytes(st, 0);
            unsigned char* data = malloc((size_t)len);
            memcpy(data, sqlite3_column_blob(st, 0), (size_t)len);
            sqlite3_finalize(st);
            data[test_rng(&rng) % (uint64_t)len] ^= (unsigned char)(1u << (test_rng(&rng) % 8));
            CHECK_EQ_I64(
                sqlite3_prepare_v2(db, "UPDATE event_chunk SET data=?1 WHERE id=?2", -1, &st, NULL),
                SQLITE_OK);
            sqlite3_bind_blob(st, 1, data, len, SQLITE_TRANSIENT);
            sqlite3_bind_int64(st, 2, id);
            CHECK_EQ_I64(sqlite3_step(st), SQLITE_DONE);
            sqlite3_finalize(st);
            free(data);
        }
        sqlite3_close(db);
        // A flipped heap moves the chunk to another heap: heap 1 then misses it, or the
        // other heap (2, or one with no other chunks) holds a chunk that fails its check.
        char want[64];
        snprintf(want, sizeof want, "event chunk %lld is corrupt (checksum mismatch)",
                 (long long)id);
        char err[512] = "";
        mt_capture* cap = NULL;
        if (mt_capture_open(p, &cap, err, sizeof err) != 0) {
            // A chunk moved to a heap the capture does not have is caught when opening.
            snprintf(want, sizeof want, "event chunk %lld is corrupt (its heap ", (long long)id);
            if (strncmp(err, want, strlen(want)) == 0)
                detected++;
            else
                fprintf(stderr, "flip %d: open: %s\n", f, err);
            continue;
        }
        sqlite3* raw = capture_sql_open(cap);
        sqlite3_stmt* heaps;
        sqlite3_prepare_v2(raw, "SELECT DISTINCT heap FROM event_chunk", -1, &heaps, NULL);
        bool seen = false;
        while (sqlite3_step(heaps) == SQLITE_ROW) {
            mt_event_iter* it = NULL;
            mt_event ev;
            int rc = mt_capture_iter_open(cap, sqlite3_column_int(heaps, 0), &it);
            while (rc == 0 && (rc = mt_capture_iter_next(it, &ev)) == 1)
                rc = 0;
            if (rc == -EPROTO && strcmp(mt_capture_iter_error(it), want) == 0)
                seen = true;
            else if (rc != 0)
                fprintf(stderr, "flip %d: %s\n", f, mt_capture_iter_error(it));
            mt_capture_iter_close(it);
        }
        sqlite3_finalize(heaps);
        sqlite3_close(raw);
        mt_capture_close(cap);
        if (!seen)
            fprintf(stderr, "flip %d in chunk %lld not detected\n", f, (long long)id);
        detected += seen;
    }
    CHECK_EQ_I64(detected, FLIPS);
}

// With skipping on, a corrupt chunk is left out and reported once, however often read.
static int skip_reports;
static char skip_what[512];
static void on_skip(const char* path, const char* what) {
    (void)path;
    skip_reports++;
    snprintf(skip_what, sizeof skip_what, "%s", what);
}

static void test_skip_corrupt(const char* good) {
    const char* p = test_tmppath("skip.db");
    copy_file(good, p, -1);
    sql(p, "UPDATE event_chunk SET data = zeroblob(length(data)) WHERE id = 5");
    mt_capture_skip_corrupt_chunks(on_skip);
    char err[512];
    mt_capture* cap = NULL;
    CHECK_EQ_I64(mt_capture_open(p, &cap, err, sizeof err), 0);
    int64_t lost = 0;
    sqlite3* raw = capture_sql_open(cap);
    sqlite3_stmt* st;
    sqlite3_prepare_v2(raw, "SELECT count FROM event_chunk WHERE id = 5", -1, &st, NULL);
    if (sqlite3_step(st) == SQLITE_ROW)
        lost = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    sqlite3_close(raw);
    CHECK(lost > 0);
    static mt_event got[NEVENTS];
    for (int pass = 0; pass < 2; pass++) {
        int rc;
        size_t n = read_all(cap, MT_HEAP_LIBC, got, NEVENTS, &rc);
        CHECK_EQ_I64(rc, 0);
        CHECK_EQ_I64(n, NEVENTS - lost);
    }
    CHECK_EQ_I64(skip_reports, 1);
    char want[128];
    snprintf(want, sizeof want,
             "event chunk 5 is corrupt (checksum mismatch); skipped its %lld events",
             (long long)lost);
    CHECK_EQ_STR(skip_what, want);
    mt_capture_close(cap);
    mt_capture_skip_corrupt_chunks(NULL);
}

// ---- older captures: schema 2 (codec 2, uncompressed) and schema 1 (codec 1, no
// checksums) still read

static void make_v1(const char* v2, const char* v1) {
    copy_file(v2, v1, -1);
    sql(v1, "UPDATE event_chunk SET codec = 1, data = substr(data, 1, length(data) - 4);"
            " PRAGMA user_version = 1");
}

static void test_schema_v1(void) {
    const char* v2 = test_tmppath("v2.db");
    write_codec = MT_CODEC_VARINT_COLUMNS_CRC32C;
    CHECK_EQ_I64(write_capture(v2, true), 0);
    write_codec = 0;
    check_readback(v2, false);
    copy_file(v2, test_tmppath("v2codec.db"), -1);
    sql(test_tmppath("v2codec.db"), "UPDATE event_chunk SET codec = 3 WHERE id = 3");
    expect_iter_fails("v2 codec 3", test_tmppath("v2codec.db"), "(codec 3, not 2)");
    const char* v1 = test_tmppath("v1.db");
    make_v1(v2, v1);
    check_readback(v1, false);
    // Without checksums the decoder's own checks are what catches damage.
    copy_file(v1, test_tmppath("v1bad.db"), -1);
    overwrite_chunk(test_tmppath("v1bad.db"), 5, 0xff); // varints that never end
    expect_iter_fails("v1 corrupt chunk bytes", test_tmppath("v1bad.db"), "do not decode");
    copy_file(v1, test_tmppath("v1count.db"), -1);
    sql(test_tmppath("v1count.db"), "UPDATE event_chunk SET count = 1000000000 WHERE id = 2");
    expect_iter_fails("v1 huge count", test_tmppath("v1count.db"), "impossible event count");
    // A schema 1 capture holds codec 1 only, a schema 2 capture codec 2 only.
    copy_file(v1, test_tmppath("v1codec.db"), -1);
    sql(test_tmppath("v1codec.db"), "UPDATE event_chunk SET codec = 2 WHERE id = 3");
    expect_iter_fails("v1 codec 2", test_tmppath("v1codec.db"), "(codec 2, not 1)");
}

// Schemas 3 and 4 (codecs 3 and 4: zstd, times in ns or in a unit) still read, each holding
// its own codec only.
static void test_schema_v3_v4(void) {
    for (int codec = MT_CODEC_ZSTD_COLUMNS_CRC32C; codec <= MT_CODEC_ZSTD_UNITS_CRC32C; codec++) {
        char name[32], other[32], want[32];
        snprintf(name, sizeof name, "v%d.db", codec);
        snprintf(other, sizeof other, "v%dcodec.db", codec);
        write_codec = codec;
        CHECK_EQ_I64(write_capture(test_tmppath(name), true), 0);
        write_codec = 0;
        check_readback(test_tmppath(name), false);
        copy_file(test_tmppath(name), test_tmppath(other), -1);
        sql(test_tmppath(other), "UPDATE event_chunk SET codec = 5 WHERE id = 3");
        snprintf(want, sizeof want, "(codec 5, not %d)", codec);
        expect_iter_fails("older schema, codec 5", test_tmppath(other), want);
    }
}

// ---- callsites must form a tree

static void test_callsite_cycles(const char* good) {
    const char* ok = test_tmppath("tree.db");
    copy_file(good, ok, -1);
    // A tree whose parents have larger ids than their children is still a tree.
    sql(ok, "INSERT INTO callsite VALUES(10, 0, 1, 1), (5, 10, 2, 2), (7, 5, 3, 3),"
            " (8, 5, 4, 3), (3, 99, 5, 9)"); // 99 does not exist: a cut stack, not a cycle
    char err[512];
    mt_capture* cap = NULL;
    CHECK_EQ_I64(mt_capture_open(ok, &cap, err, sizeof err), 0);
    mt_capture_close(cap);

    const char* cyc = test_tmppath("cycle.db");
    copy_file(ok, cyc, -1);
    sql(cyc, "INSERT INTO callsite VALUES(20, 22, 1, 1), (21, 20, 2, 2), (22, 21, 3, 3),"
             " (23, 21, 4, 4)");
    expect_open_fails("callsite cycle", cyc, -EPROTO, "the callsite table has a cycle");
    const char* self = test_tmppath("self.db");
    copy_file(ok, self, -1);
    sql(self, "INSERT INTO callsite VALUES(30, 30, 1, 1)");
    expect_open_fails("callsite parent of itself", self, -EPROTO,
                      "callsite 30 is its own ancestor");
}

// ---- an unfinished capture: the tracer's process died with its -wal beside the file

static void test_unfinished(void) {
    const char* p = test_tmppath("killed.db");
    pid_t pid = fork();
    if (pid == 0) {
        mt_capture_writer* w;
        char err[256];
        if (mt_capture_writer_open(p, &w, err, sizeof err) ||
            mt_capture_writer_heap(w, MT_HEAP_LIBC, "libc", "libc", "ns") ||
            mt_capture_writer_begin(w) || mt_capture_writer_meta_int(w, "pid", 4242) ||
            mt_capture_writer_commit(w))
            _exit(1);
        uint8_t* scratch = malloc(mt_codec_bound(1000));
        for (size_t i = 0; i < NEVENTS; i += 1000)
            if (mt_capture_writer_begin(w) ||
                mt_capture_writer_chunk(w, MT_HEAP_LIBC, events + i, 1000, scratch) ||
                mt_capture_writer_commit(w))
                _exit(1);
        _exit(0); // no finish, no close: as if killed
    }
    int status = -1;
    CHECK_EQ_I64(waitpid(pid, &status, 0), pid);
    CHECK_EQ_I64(status, 0);
    char wal[300];
    snprintf(wal, sizeof wal, "%s-wal", p);
    size_t dblen, wallen;
    char* db0 = slurp(p, &dblen);
    char* wal0 = slurp(wal, &wallen);
    CHECK(wal0 != NULL && wallen > 0);
    for (int pass = 0; pass < 2; pass++) {
        char err[512] = "";
        mt_capture* cap = NULL;
        CHECK_EQ_I64(mt_capture_open(p, &cap, err, sizeof err), 0);
        if (!cap) {
            fprintf(stderr, "unfinished: %s\n", err);
            break;
        }
        CHECK(mt_capture_truncated(cap));
        static mt_event got[NEVENTS + 1];
        int rc;
        CHECK_EQ_I64(read_all(cap, MT_HEAP_LIBC, got, NEVENTS + 1, &rc), NEVENTS);
        CHECK_EQ_I64(rc, 0);
        CHECK(same_event(&got[NEVENTS - 1], &events[NEVENTS - 1]));
        mt_capture_close(cap);
    }
    // Read as it was: no checkpoint into the main file, the log kept, no -shm made.
    size_t dblen1, wallen1;
    char* db1 = slurp(p, &dblen1);
    char* wal1 = slurp(wal, &wallen1);
    CHECK(db1 && dblen1 == dblen && memcmp(db0, db1, dblen) == 0);
    CHECK(wal1 && wallen1 == wallen && memcmp(wal0, wal1, wallen) == 0);
    char shm[300];
    snprintf(shm, sizeof shm, "%s-shm", p);
    CHECK(access(shm, F_OK) != 0);
    free(db0);
    free(wal0);
    free(db1);
    free(wal1);
}

// ---- typed reads of the tables: what mt_capture_writer wrote comes back, in the promised order

// A collector for every row reader: the rows as one line of text each, appended.
typedef struct rows {
    char text[2048];
    int stop_after; // stop the read after this many rows (0: never), returning 7
    int n;
} rows;

static int row_line(rows* r, const char* line) {
    size_t len = strlen(r->text);
    snprintf(r->text + len, sizeof r->text - len, "%s;", line);
    return ++r->n == r->stop_after ? 7 : 0;
}

static int on_heap(void* ud, const mt_heap_rec* h) {
    char b[128];
    snprintf(b, sizeof b, "%d %s %s %s", h->id, h->name, h->kind, h->time_unit);
    return row_line(ud, b);
}

static int on_counter(void* ud, int track, int64_t ts, int64_t value) {
    char b[128];
    snprintf(b, sizeof b, "%d@%lld=%lld", track, (long long)ts, (long long)value);
    return row_line(ud, b);
}

static int on_mark(void* ud, const mt_mark_rec* m) {
    char b[256];
    snprintf(b, sizeof b, "%d %s %s %lld-%s%lld tid%s%lld %s", m->heap, m->kind, m->name,
             (long long)m->ts_begin, m->has_end ? "" : "open", (long long)m->ts_end,
             m->has_tid ? "" : "-none", (long long)m->tid, m->attrs ? m->attrs : "-");
    return row_line(ud, b);
}

static int on_call(void* ud, const char* name, int64_t count) {
    char b[128];
    snprintf(b, sizeof b, "%s=%lld", name, (long long)count);
    return row_line(ud, b);
}

static int on_frame(void* ud, const mt_frame_info* f) {
    char b[512];
    snprintf(b, sizeof b, "%lld pc%llx rel%llx %s %s %s:%d %s %d", (long long)f->id,
             (unsigned long long)f->pc, (unsigned long long)f->rel_pc, f->module ? f->module : "-",
             f->function ? f->function : "-", f->file ? f->file : "-", f->line,
             f->inlined ? f->inlined : "-", f->relevant);
    return row_line(ud, b);
}

static int on_callsite(void* ud, const mt_callsite_rec* c) {
    char b[128];
    snprintf(b, sizeof b, "%lld<%lld f%lld d%lld", (long long)c->id, (long long)c->parent_id,
             (long long)c->frame_id, (long long)c->depth);
    return row_line(ud, b);
}

static void write_tables(const char* path) {
    char err[256];
    mt_capture_writer* w;
    CHECK_EQ_I64(mt_capture_writer_open(path, &w, err, sizeof err), 0);
    CHECK_EQ_I64(mt_capture_writer_begin(w), 0);
    CHECK_EQ_I64(mt_capture_writer_heap(w, MT_HEAP_LIBC, "libc", "libc", "ns"), 0);
    CHECK_EQ_I64(mt_capture_writer_heap(w, MT_HEAP_NPU, "npu", "npu", "step"), 0);
    CHECK_EQ_I64(mt_capture_writer_counter_track(w, MT_TRACK_RSS, MT_HEAP_LIBC, "RSS", "bytes"), 0);
    CHECK_EQ_I64(mt_capture_writer_counter_track(w, MT_TRACK_VSZ, MT_HEAP_LIBC, "VSZ", "bytes"), 0);
    // Written out of time order, two points at ts 20 (read back as written).
    CHECK_EQ_I64(mt_capture_writer_counter(w, MT_TRACK_RSS, 30, 3), 0);
    CHECK_EQ_I64(mt_capture_writer_counter(w, MT_TRACK_VSZ, 5, 50), 0);
    CHECK_EQ_I64(mt_capture_writer_counter(w, MT_TRACK_RSS, 20, 2), 0);
    CHECK_EQ_I64(mt_capture_writer_counter(w, MT_TRACK_RSS, 20, 1), 0);
    mt_mark_rec marks[] = {
        {.heap = MT_HEAP_LIBC, .kind = "range", .name = "load", .ts_begin = 40},
        {.heap = MT_HEAP_LIBC,
         .kind = "mark",
         .name = "go",
         .ts_begin = 10,
         .has_tid = true,
         .tid = 7},
        {.heap = MT_HEAP_NPU,
         .kind = "range",
         .name = "f",
         .ts_begin = 2,
         .has_end = true,
         .ts_end = 4,
         .attrs = "{\"bytes\":1}"},
    };
    for (size_t i = 0; i < sizeof marks / sizeof *marks; i++)
        CHECK_EQ_I64(mt_capture_writer_mark(w, &marks[i]), 0);
    CHECK_EQ_I64(mt_capture_writer_call_count(w, "malloc", 12), 0);
    CHECK_EQ_I64(mt_capture_writer_call_count(w, "free", 9), 0);
    mt_mapping_rec map = {.id = 1,
                          .path = "/lib/x.so",
                          .start = 0x1000,
                          .end = 0x9000,
                          .load_bias = 0x1000,
                          .ts_unloaded = -1};
    CHECK_EQ_I64(mt_capture_writer_mapping(w, &map), 0);
    mt_frame_rec frames[] = {{.id = 1, .mapping_id = 1, .pc = 0x1234},
                             {.id = 2,
                              .mapping_id = 1,
                              .pc = 0x2000,
                              .has_rel_pc = true,
                              .rel_pc = 0x10,
                              .function = "g"},
                             {.id = 3, .pc = 0x77}};
    for (size_t i = 0; i < 3; i++)
        CHECK_EQ_I64(mt_capture_writer_frame(w, &frames[i]), 0);
    mt_callsite_rec cs[] = {{1, 0, 3, 1}, {2, 1, 2, 2}};
    for (size_t i = 0; i < 2; i++)
        CHECK_EQ_I64(mt_capture_writer_callsite(w, &cs[i]), 0);
    uint8_t* scratch = malloc(mt_codec_bound(NEVENTS));
    CHECK_EQ_I64(mt_capture_writer_chunk(w, MT_HEAP_LIBC, events, 100, scratch), 0);
    CHECK_EQ_I64(mt_capture_writer_chunk(w, MT_HEAP_LIBC, events + 100, 50, scratch), 0);
    free(scratch);
    CHECK_EQ_I64(mt_capture_writer_commit(w), 0);
    CHECK_EQ_I64(mt_capture_writer_finish(w, "complete"), 0);
    sql(path, "UPDATE frame SET file='g.c', line=5, inlined='[]', relevant=0 WHERE id=2");
}

static void test_typed_reads(void) {
    const char* p = test_tmppath("tables.db");
    write_tables(p);
    char err[512];
    mt_capture* cap = NULL;
    CHECK_EQ_I64(mt_capture_open(p, &cap, err, sizeof err), 0);
    if (!cap)
        return;
    rows r = {0};
    CHECK_EQ_I64(mt_capture_heaps(cap, on_heap, &r), 0);
    CHECK_EQ_STR(r.text, "1 libc libc ns;2 npu npu step;");

    mt_heap_span span;
    CHECK_EQ_I64(mt_capture_heap_span(cap, MT_HEAP_LIBC, &span), 1);
    CHECK_EQ_I64(span.events, 150);
    CHECK_EQ_I64(span.first_ts, events[0].ts);
    CHECK_EQ_I64(span.last_ts, events[149].ts);
    CHECK_EQ_I64(mt_capture_heap_span(cap, MT_HEAP_NPU, &span), 0);
    CHECK_EQ_I64(span.events, 0);

    r = (rows){0};
    CHECK_EQ_I64(mt_capture_counters(cap, MT_TRACK_RSS, on_counter, &r), 0);
    CHECK_EQ_STR(r.text, "1@20=2;1@20=1;1@30=3;");
    r = (rows){0};
    CHECK_EQ_I64(mt_capture_counters_written(cap, MT_TRACK_RSS, MT_TRACK_VSZ, on_counter, &r), 0);
    CHECK_EQ_STR(r.text, "1@30=3;2@5=50;1@20=2;1@20=1;");
    r = (rows){.stop_after = 2};
    CHECK_EQ_I64(mt_capture_counters_written(cap, MT_TRACK_RSS, MT_TRACK_VSZ, on_counter, &r), 7);
    CHECK_EQ_I64(r.n, 2);
    int64_t last;
    CHECK_EQ_I64(mt_capture_counter_end(cap, MT_TRACK_RSS, &last), 1);
    CHECK_EQ_I64(last, 30);
    CHECK_EQ_I64(mt_capture_counter_end(cap, MT_TRACK_NPU_USED, &last), 0);

    r = (rows){0};
    mt_mark_query libc_by_time = {.heap = MT_HEAP_NPU, .other_heaps = true, .by_time = true};
    CHECK_EQ_I64(mt_capture_marks(cap, &libc_by_time, on_mark, &r), 0);
    CHECK_EQ_STR(r.text, "1 mark go 10-open0 tid7 -;1 range load 40-open0 tid-none0 -;");
    r = (rows){0};
    mt_mark_query libc_written = {.heap = MT_HEAP_LIBC, .kind = "range"};
    CHECK_EQ_I64(mt_capture_marks(cap, &libc_written, on_mark, &r), 0);
    CHECK_EQ_STR(r.text, "1 range load 40-open0 tid-none0 -;");
    r = (rows){0};
    mt_mark_query npu = {.heap = MT_HEAP_NPU};
    CHECK_EQ_I64(mt_capture_marks(cap, &npu, on_mark, &r), 0);
    CHECK_EQ_STR(r.text, "2 range f 2-4 tid-none0 {\"bytes\":1};");

    r = (rows){0};
    CHECK_EQ_I64(mt_capture_call_counts(cap, on_call, &r), 0);
    CHECK_EQ_STR(r.text, "free=9;malloc=12;");

    int64_t fmax, cmax;
    CHECK_EQ_I64(mt_capture_stack_ids(cap, &fmax, &cmax), 0);
    CHECK_EQ_I64(fmax, 3);
    CHECK_EQ_I64(cmax, 2);
    r = (rows){0};
    CHECK_EQ_I64(mt_capture_frames(cap, on_frame, &r), 0);
    CHECK_EQ_STR(r.text, "1 pc1234 rel234 /lib/x.so - -:0 - 1;"
                         "2 pc2000 rel10 /lib/x.so g g.c:5 [] 0;"
                         "3 pc77 rel77 - - -:0 - 1;");
    r = (rows){0};
    CHECK_EQ_I64(mt_capture_callsites(cap, on_callsite, &r), 0);
    CHECK_EQ_STR(r.text, "1<0 f3 d1;2<1 f2 d2;");
    mt_capture_close(cap);

    // A table that cannot be read: -EPROTO, and the reason in words.
    sql(p, "DROP TABLE call_count");
    CHECK_EQ_I64(mt_capture_open(p, &cap, err, sizeof err), 0);
    if (!cap)
        return;
    r = (rows){0};
    CHECK_EQ_I64(mt_capture_call_counts(cap, on_call, &r), -EPROTO);
    CHECK(strstr(mt_capture_error(cap), "call_count") != NULL);
    mt_capture_close(cap);
}

int main(void) {
    make_events();
    char good[256], rec[256];
    snprintf(good, sizeof good, "%s", test_tmppath("good.db"));
    snprintf(rec, sizeof rec, "%s", test_tmppath("recording.db"));
    CHECK_EQ_I64(write_capture(good, true), 0);
    // finish leaves one self-contained file
    CHECK(access(test_tmppath("good.db-wal"), F_OK) != 0);
    CHECK(access(test_tmppath("good.db-shm"), F_OK) != 0);
    check_readback(good, false);

    // A capture never finished (the program was killed) reads, and reads as truncated.
    CHECK_EQ_I64(write_capture(rec, false), 0);
    check_readback(rec, true);

    test_rejections(good);
    test_bit_flips(good);
    test_skip_corrupt(good);
    test_schema_v1();
    test_schema_v3_v4();
    test_callsite_cycles(good);
    test_unfinished();
    test_typed_reads();
    // The good capture still reads after all that (the copies were independent).
    check_readback(good, false);
    CHECK_DONE();
}
