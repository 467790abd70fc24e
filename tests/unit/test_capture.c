// SPDX-License-Identifier: MIT
// The capture reader against files written by mt_capwriter: exact read-back in seq order
// across interleaved per-thread chunks, and rejection (message and return code) of every
// kind of bad file. Files live in a private temporary directory removed at the end.
#include "../check.h"
#include "memtrace/capture.h"
#include "memtrace/codec.h"
#include "memtrace/schema.h"

#include <errno.h>
#include <fcntl.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char dir[64] = "/tmp/mt_test_capture.XXXXXX";

static char* path_in_dir(const char* name) {
    static char buf[8][256];
    static int next;
    char* p = buf[next++ % 8];
    snprintf(p, 256, "%s/%s", dir, name);
    return p;
}

static uint64_t rng = 0x2545f4914f6cdd1dull;
static uint64_t next_rand(void) {
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

// ---- a capture with NTHREADS threads whose events interleave in seq order

enum { NTHREADS = 4, PER_THREAD = 5000, NEVENTS = NTHREADS * PER_THREAD };

static mt_event events[NEVENTS]; // in seq order, the truth

static void make_events(void) {
    uint64_t seq = 0;
    for (size_t i = 0; i < NEVENTS; i++) {
        seq += 1 + next_rand() % 3; // gaps are allowed
        events[i] = (mt_event){.seq = seq,
                               .ts = (int64_t)(seq * 37),
                               .addr = 0x555500000000ull + (next_rand() % 50000) * 16,
                               .size = next_rand() % 100000,
                               .callsite = (uint32_t)(next_rand() % 1000),
                               .tid = 4000 + (uint32_t)(next_rand() % NTHREADS),
                               .kind = (uint8_t)(1 + next_rand() % 14),
                               .heap = MT_HEAP_LIBC};
    }
}

// Writes each thread's events as a sequence of chunks of random sizes, the chunks of all
// threads inserted in an order that is not seq order (as a writer draining per-thread
// buffers produces), plus a few heap-2 events that must not show up in heap 1.
static int write_capture(const char* path, bool finish) {
    char err[256];
    mt_capwriter* w;
    int rc = mt_capwriter_open(path, &w, err, sizeof err);
    CHECK_EQ_I64(rc, 0);
    if (rc)
        return rc;
    CHECK_EQ_I64(mt_capwriter_heap(w, MT_HEAP_LIBC, "libc", "libc", "ns"), 0);
    CHECK_EQ_I64(mt_capwriter_heap(w, MT_HEAP_NPU, "npu", "npu", "step"), 0);
    CHECK_EQ_I64(mt_capwriter_meta_int(w, "pid", 4242), 0);
    CHECK_EQ_I64(mt_capwriter_meta_text(w, "exe", "/bin/true"), 0);

    static mt_event per[NTHREADS][NEVENTS];
    size_t n[NTHREADS] = {0}, done[NTHREADS] = {0};
    for (size_t i = 0; i < NEVENTS; i++) {
        int t = (int)(events[i].tid - 4000);
        per[t][n[t]++] = events[i];
    }
    uint8_t* scratch = malloc(mt_codec_bound(NEVENTS));
    CHECK_EQ_I64(mt_capwriter_begin(w), 0);
    for (;;) {
        // Pick a thread with events left, from the last thread first half of the time, so
        // later-seq chunks are often inserted before earlier ones.
        int t = (int)(next_rand() % NTHREADS), tries = 0;
        while (done[t] == n[t] && tries++ < NTHREADS)
            t = (t + 1) % NTHREADS;
        if (done[t] == n[t])
            break;
        size_t len = 1 + next_rand() % 700;
        if (len > n[t] - done[t])
            len = n[t] - done[t];
        CHECK_EQ_I64(mt_capwriter_chunk(w, MT_HEAP_LIBC, per[t] + done[t], len, scratch), 0);
        done[t] += len;
    }
    mt_event npu[3] = {
        {.seq = 1, .ts = 1, .addr = 1, .size = 10, .tid = 1, .kind = MT_KIND_NPU_ALLOC},
        {.seq = 2, .ts = 2, .addr = 2, .size = 20, .tid = 1, .kind = MT_KIND_NPU_ALLOC},
        {.seq = 3, .ts = 3, .addr = 1, .tid = 1, .kind = MT_KIND_NPU_FREE}};
    CHECK_EQ_I64(mt_capwriter_chunk(w, MT_HEAP_NPU, npu, 3, scratch), 0);
    CHECK_EQ_I64(mt_capwriter_counter_track(w, MT_TRACK_RSS, MT_HEAP_LIBC, "RSS", "bytes"), 0);
    CHECK_EQ_I64(mt_capwriter_counter(w, MT_TRACK_RSS, 5, 1 << 20), 0);
    CHECK_EQ_I64(mt_capwriter_commit(w), 0);
    free(scratch);
    if (finish)
        return mt_capwriter_finish(w, "complete");
    mt_capwriter_abandon(w);
    return 0;
}

static size_t read_all(mt_capture* cap, int heap, mt_event* out, size_t max, int* rc_out) {
    mt_event_iter* it = NULL;
    size_t n = 0;
    int rc = mt_event_iter_open(cap, heap, &it);
    mt_event ev;
    while (rc == 0 && (rc = mt_event_iter_next(it, &ev)) == 1) {
        if (n < max)
            out[n] = ev;
        n++;
        rc = 0;
    }
    *rc_out = rc;
    mt_event_iter_close(it);
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
    rc = mt_event_iter_open(cap, MT_HEAP_LIBC, &it);
    while (rc == 0 && (rc = mt_event_iter_next(it, &ev)) == 1) {
        n++;
        rc = 0;
    }
    const char* msg = it ? mt_event_iter_error(it) : "";
    if (rc != -EPROTO || !strstr(msg, want_msg))
        fprintf(stderr, "%s: got rc %d after %zu events \"%s\", want -EPROTO \"...%s...\"\n", what,
                rc, n, msg, want_msg);
    CHECK_EQ_I64(rc, -EPROTO);
    CHECK(strstr(msg, want_msg) != NULL);
    CHECK(n < NEVENTS);
    mt_event_iter_close(it);
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
    expect_open_fails("missing", path_in_dir("no-such-file.db"), -ENOENT,
                      "No such file or directory");
    expect_open_fails("directory", dir, -EISDIR, "is a directory");

    write_file(path_in_dir("empty.db"), "", 0);
    expect_open_fails("empty", path_in_dir("empty.db"), -EPROTO, "empty file");

    const char text[] = "time,bytes\n0,100\n1,200\n"
                        "this is a text file that is long enough to fill an SQLite header, "
                        "so only the magic string tells it apart\n";
    write_file(path_in_dir("text.db"), text, sizeof text - 1);
    expect_open_fails("text", path_in_dir("text.db"), -EPROTO, "not an SQLite database");

    sql(path_in_dir("other.db"), "CREATE TABLE t(x); INSERT INTO t VALUES(1);");
    expect_open_fails("foreign sqlite", path_in_dir("other.db"), -EPROTO, "not a memtrace capture");

    copy_file(good, path_in_dir("newer.db"), -1);
    sql(path_in_dir("newer.db"), "PRAGMA user_version=99");
    expect_open_fails("newer schema", path_in_dir("newer.db"), -ENOTSUP,
                      "schema version 99 is newer");

    copy_file(good, path_in_dir("v0.db"), -1);
    sql(path_in_dir("v0.db"), "PRAGMA user_version=0");
    expect_open_fails("schema 0", path_in_dir("v0.db"), -EPROTO, "schema version 0");

    struct stat st;
    CHECK_EQ_I64(stat(good, &st), 0);
    copy_file(good, path_in_dir("half.db"), st.st_size / 2);
    expect_open_fails("truncated", path_in_dir("half.db"), -EPROTO, "truncated");

    // Garbage over the middle of the file (B-tree pages): the integrity check catches it.
    copy_file(good, path_in_dir("garbage.db"), -1);
    int fd = open(path_in_dir("garbage.db"), O_WRONLY);
    static char junk[65536];
    memset(junk, 0x5a, sizeof junk);
    CHECK_EQ_I64(pwrite(fd, junk, sizeof junk, st.st_size / 2 - 65536 / 2), (int64_t)sizeof junk);
    close(fd);
    expect_open_fails("garbage pages", path_in_dir("garbage.db"), -EPROTO, "corrupt");

    // Chunk payloads are not covered by SQLite's checks: the decoder must catch them.
    // 0xff bytes are varints that never end.
    copy_file(good, path_in_dir("badbytes.db"), -1);
    overwrite_chunk(path_in_dir("badbytes.db"), 5, 0xff);
    expect_iter_fails("corrupt chunk bytes", path_in_dir("badbytes.db"), "does not decode");

    copy_file(good, path_in_dir("cutblob.db"), -1);
    sql(path_in_dir("cutblob.db"),
        "UPDATE event_chunk SET data = substr(data, 1, length(data) - 3)"
        " WHERE id = (SELECT id FROM event_chunk WHERE heap=1 ORDER BY seq_first LIMIT 1"
        " OFFSET 9)");
    expect_iter_fails("cut chunk", path_in_dir("cutblob.db"), "does not decode");

    copy_file(good, path_in_dir("liar.db"), -1);
    sql(path_in_dir("liar.db"),
        "UPDATE event_chunk SET count = count + 1 WHERE id = (SELECT id FROM event_chunk"
        " WHERE heap=1 ORDER BY seq_first LIMIT 1 OFFSET 3)");
    expect_iter_fails("count + 1", path_in_dir("liar.db"), "does not decode");

    copy_file(good, path_in_dir("liar2.db"), -1);
    sql(path_in_dir("liar2.db"),
        "UPDATE event_chunk SET count = count - 1 WHERE id = (SELECT id FROM event_chunk"
        " WHERE heap=1 AND count > 1 ORDER BY seq_first LIMIT 1 OFFSET 3)");
    expect_iter_fails("count - 1", path_in_dir("liar2.db"), "does not decode");

    copy_file(good, path_in_dir("liar3.db"), -1);
    sql(path_in_dir("liar3.db"), "UPDATE event_chunk SET count = 1000000000 WHERE id = 2");
    expect_iter_fails("huge count", path_in_dir("liar3.db"), "malformed");

    copy_file(good, path_in_dir("liar4.db"), -1);
    sql(path_in_dir("liar4.db"), "UPDATE event_chunk SET seq_first = seq_first + 1 WHERE id = 4");
    expect_iter_fails("seq_first lies", path_in_dir("liar4.db"), "does not decode");

    copy_file(good, path_in_dir("codec.db"), -1);
    sql(path_in_dir("codec.db"), "UPDATE event_chunk SET codec = 77 WHERE id = 3");
    expect_iter_fails("unknown codec", path_in_dir("codec.db"), "malformed");

    // Two chunks holding the same seq: the merge must notice, not report it twice.
    copy_file(good, path_in_dir("dup.db"), -1);
    sql(path_in_dir("dup.db"),
        "INSERT INTO event_chunk(heap, seq_first, seq_last, ts_first, ts_last, count, codec,"
        " data) SELECT heap, seq_first, seq_last, ts_first, ts_last, count, codec, data"
        " FROM event_chunk WHERE id = 6");
    expect_iter_fails("duplicate chunk", path_in_dir("dup.db"), "repeats");
}

static void cleanup(void) {
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "cannot remove %s\n", dir);
}

int main(void) {
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    make_events();
    char good[256], rec[256];
    snprintf(good, sizeof good, "%s", path_in_dir("good.db"));
    snprintf(rec, sizeof rec, "%s", path_in_dir("recording.db"));
    CHECK_EQ_I64(write_capture(good, true), 0);
    // finish leaves one self-contained file
    CHECK(access(path_in_dir("good.db-wal"), F_OK) != 0);
    CHECK(access(path_in_dir("good.db-shm"), F_OK) != 0);
    check_readback(good, false);

    // A capture never finished (the program was killed) reads, and reads as truncated.
    CHECK_EQ_I64(write_capture(rec, false), 0);
    check_readback(rec, true);

    test_rejections(good);
    // The good capture still reads after all that (the copies were independent).
    check_readback(good, false);
    cleanup();
    CHECK_DONE();
}
