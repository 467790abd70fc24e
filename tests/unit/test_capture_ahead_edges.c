// SPDX-License-Identifier: MIT
// The event reader that decodes chunks ahead on a second thread, tried where the first
// tests (test_capture_ahead.c) do not go: an SQL error in the middle of the rows, chunks
// whose checksum holds but whose events do not decode (before and after the thread starts),
// reading in batches of chunk ids while new chunks appear (memreport live), the decoding
// thread gone after every kind of close, and, without sanitizers, a failed allocation of a
// chunk's events and a thread that cannot be made. Each case expects what the reader did
// before it had a thread: the same message after the same events.
#include "task_list.h"

#include "../check.h"
#include "../rng.h"
#include "../tmpdir.h"
#include "memtrace/capture.h"
#include "memtrace/codec.h"
#include "memtrace/schema.h"

#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

// 4 threads of 120 chunks of 100 events: chunks of different threads overlap in seq, and
// there are many more than the reader decodes before it starts its thread (16).
enum { NTHREADS = 4, CHUNKS_PER_THREAD = 120, PER_CHUNK = 100 };
enum { NCHUNKS = NTHREADS * CHUNKS_PER_THREAD, NEVENTS = NCHUNKS * PER_CHUNK };

static mt_event truth[NEVENTS];        // in seq order
static int64_t chunk_of[NEVENTS];      // the id of the chunk holding truth[i]
static int64_t by_seq[NCHUNKS];        // chunk ids in the reader's order (seq_first, id)
static uint64_t first_of[NCHUNKS + 1]; // seq_first of chunk id
static char good[128];

static uint64_t rng = 0x2545f4914f6cdd1dull;

static void must_exec(sqlite3* db, const char* sql) {
    char* msg = NULL;
    int rc = sqlite3_exec(db, sql, NULL, NULL, &msg);
    if (rc != SQLITE_OK)
        fprintf(stderr, "%s: %s\n", sql, msg ? msg : "?");
    CHECK_EQ_I64(rc, SQLITE_OK);
    sqlite3_free(msg);
}

// Writes the capture (chunk ids 1.. in the order written: each thread's chunks in turn, so
// ids do not follow seq) and remembers which chunk holds each event.
static void write_good(void) {
    static mt_event per[NTHREADS][CHUNKS_PER_THREAD * PER_CHUNK];
    static size_t index_of[NTHREADS][CHUNKS_PER_THREAD * PER_CHUNK];
    size_t n[NTHREADS] = {0};
    size_t i = 0;
    for (uint64_t seq = 1; i < NEVENTS; seq++) {
        int t = (int)(test_rng(&rng) % NTHREADS);
        if (n[t] == CHUNKS_PER_THREAD * PER_CHUNK)
            continue;
        truth[i] = (mt_event){.seq = seq,
                              .ts = (int64_t)seq * 7,
                              .addr = 0x20000 + (test_rng(&rng) % 8192) * 16,
                              .size = 1 + test_rng(&rng) % 3000,
                              .callsite = (uint32_t)(1 + test_rng(&rng) % 40),
                              .tid = 200 + (uint32_t)t,
                              .kind = (uint8_t)(test_rng(&rng) % 2 ? MT_KIND_MALLOC : MT_KIND_FREE),
                              .heap = MT_HEAP_LIBC};
        index_of[t][n[t]] = i;
        per[t][n[t]++] = truth[i++];
    }
    char err[256];
    mt_capture_writer* w;
    CHECK_EQ_I64(mt_capture_writer_open(good, &w, err, sizeof err), 0);
    CHECK_EQ_I64(mt_capture_writer_heap(w, MT_HEAP_LIBC, "libc", "libc", "ns"), 0);
    uint8_t* scratch = malloc(mt_codec_bound(PER_CHUNK));
    CHECK_EQ_I64(mt_capture_writer_begin(w), 0);
    int64_t id = 0;
    for (size_t c = 0; c < CHUNKS_PER_THREAD; c++)
        for (int t = 0; t < NTHREADS; t++) {
            CHECK_EQ_I64(mt_capture_writer_chunk(w, MT_HEAP_LIBC, per[t] + c * PER_CHUNK, PER_CHUNK,
                                                 scratch),
                         0);
            id++;
            for (size_t k = 0; k < PER_CHUNK; k++)
                chunk_of[index_of[t][c * PER_CHUNK + k]] = id;
            first_of[id] = per[t][c * PER_CHUNK].seq;
        }
    CHECK_EQ_I64(mt_capture_writer_commit(w), 0);
    CHECK_EQ_I64(mt_capture_writer_finish(w, "complete"), 0);
    free(scratch);
    // The ids as the file has them, in the reader's order.
    sqlite3* db;
    CHECK_EQ_I64(sqlite3_open(good, &db), SQLITE_OK);
    sqlite3_stmt* st;
    sqlite3_prepare_v2(db, "SELECT id, seq_first FROM event_chunk ORDER BY seq_first, id", -1, &st,
                       NULL);
    size_t k = 0;
    while (sqlite3_step(st) == SQLITE_ROW && k < NCHUNKS) {
        by_seq[k] = sqlite3_column_int64(st, 0);
        CHECK_EQ_I64(first_of[by_seq[k]], sqlite3_column_int64(st, 1));
        k++;
    }
    CHECK_EQ_I64(k, NCHUNKS);
    sqlite3_finalize(st);
    sqlite3_close(db);
}

static bool same_event(const mt_event* a, const mt_event* b) {
    return a->seq == b->seq && a->ts == b->ts && a->addr == b->addr && a->size == b->size &&
           a->callsite == b->callsite && a->tid == b->tid && a->kind == b->kind &&
           a->heap == b->heap;
}

static size_t events_before(uint64_t seq) {
    size_t n = 0;
    while (n < NEVENTS && truth[n].seq < seq)
        n++;
    return n;
}

static bool in_list(int64_t id, const int64_t* ids, size_t n) {
    for (size_t k = 0; k < n; k++)
        if (ids[k] == id)
            return true;
    return false;
}

// A copy of the good capture to damage; returns an open connection to it.
static sqlite3* copy_of(const char* name, char* path, size_t len) {
    snprintf(path, len, "%s/%s", test_tmpdir(), name);
    char cmd[400];
    snprintf(cmd, sizeof cmd, "cp '%s' '%s'", good, path);
    CHECK_EQ_I64(system(cmd), 0);
    sqlite3* db = NULL;
    CHECK_EQ_I64(sqlite3_open(path, &db), SQLITE_OK);
    return db;
}

// Reads every event of the capture at path, each checked against the truth without the
// events of chunks left[0..nleft). Returns the iterator's last answer; *count gets the
// events read, message the error.
static int read_checked(const char* path, const int64_t* left, size_t nleft, size_t* count,
                        char* message, size_t len) {
    char err[256] = "";
    mt_capture* cap = NULL;
    int rc = mt_capture_open(path, &cap, err, sizeof err);
    CHECK_EQ_I64(rc, 0);
    if (rc) {
        fprintf(stderr, "open %s: %s\n", path, err);
        return rc;
    }
    mt_event_iter* it = NULL;
    rc = mt_capture_iter_open(cap, MT_HEAP_LIBC, &it);
    size_t n = 0, pos = 0;
    mt_event ev;
    while (rc == 0 && (rc = mt_capture_iter_next(it, &ev)) == 1) {
        while (pos < NEVENTS && in_list(chunk_of[pos], left, nleft))
            pos++;
        if (pos == NEVENTS || !same_event(&ev, &truth[pos])) {
            fprintf(stderr, "event %zu (seq %llu) differs from the truth\n", n,
                    (unsigned long long)ev.seq);
            CHECK(0);
            break;
        }
        pos++;
        n++;
        rc = 0;
    }
    snprintf(message, len, "%s", rc < 0 && it ? mt_capture_iter_error(it) : "");
    mt_capture_iter_close(it);
    mt_capture_close(cap);
    *count = n;
    return rc;
}

// Skipped corrupt chunks, as reported (mt_capture_skip_corrupt_chunks).
static int reports;
static char what[8][160];
static void on_skip(const char* path, const char* w) {
    (void)path;
    if (reports < 8)
        snprintf(what[reports], sizeof what[0], "%s", w);
    reports++;
}

// ---- an SQL error in the middle of the rows

// The (heap, seq_first) index keeps an entry for a row deleted from the table: the reader's
// query, which walks that index, fails with SQLITE_CORRUPT when it reaches the row (quick_check
// at open does not compare indexes with their table).
static void dangling_index_entry(const char* name, int64_t id, char* path, size_t len) {
    sqlite3* db = copy_of(name, path, len);
    sqlite3_stmt* st;
    sqlite3_prepare_v2(db, "SELECT rootpage, sql FROM sqlite_master WHERE name='event_chunk_seq'",
                       -1, &st, NULL);
    CHECK_EQ_I64(sqlite3_step(st), SQLITE_ROW);
    int64_t root = sqlite3_column_int64(st, 0);
    char sql[256];
    snprintf(sql, sizeof sql, "%s", (const char*)sqlite3_column_text(st, 1));
    sqlite3_finalize(st);
    must_exec(db, "PRAGMA writable_schema=ON; DELETE FROM sqlite_master WHERE "
                  "name='event_chunk_seq'");
    sqlite3_close(db);
    CHECK_EQ_I64(sqlite3_open(path, &db), SQLITE_OK);
    char cmd[512];
    snprintf(cmd, sizeof cmd, "DELETE FROM event_chunk WHERE id=%lld", (long long)id);
    must_exec(db, cmd);
    snprintf(cmd, sizeof cmd,
             "PRAGMA writable_schema=ON; INSERT INTO sqlite_master VALUES('index', "
             "'event_chunk_seq', 'event_chunk', %lld, '%s')",
             (long long)root, sql);
    must_exec(db, cmd);
    sqlite3_close(db);
}

// The error is said when the merge takes the chunk before the bad row (the single-threaded
// reader stepped to the next row right after loading one), never earlier because rows
// were read ahead, and never lost; skipping corrupt chunks does not skip it.
static void test_sql_error_mid_read(void) {
    static const size_t at[] = {5, 16, 17, 300, NCHUNKS - 1};
    for (size_t k = 0; k < sizeof at / sizeof *at; k++) {
        char path[128], name[32], msg[256];
        snprintf(name, sizeof name, "sql%zu.db", at[k]);
        dangling_index_entry(name, by_seq[at[k]], path, sizeof path);
        int64_t gone = by_seq[at[k]];
        size_t want = events_before(first_of[by_seq[at[k] - 1]]);
        for (int skip = 0; skip < 2; skip++) {
            mt_capture_skip_corrupt_chunks(skip ? on_skip : NULL);
            reports = 0;
            size_t n;
            int rc = read_checked(path, &gone, 1, &n, msg, sizeof msg);
            mt_capture_skip_corrupt_chunks(NULL);
            CHECK_EQ_I64(reports, 0);
            CHECK_EQ_I64(rc, -EPROTO);
            CHECK_EQ_STR(msg, "corrupt capture: reading event chunks: the SQLite file is damaged "
                              "(database disk image is malformed)");
            CHECK_EQ_I64(n, want);
        }
    }
}

// ---- chunks whose checksum holds but whose events do not decode

// The chunk's count column one less, and the checksum made again over the new columns:
// only decoding can tell.
static void reseal_with_lying_count(sqlite3* db, int64_t id) {
    sqlite3_stmt* st;
    sqlite3_prepare_v2(db,
                       "SELECT heap, seq_first, seq_last, ts_first, ts_last, count, data"
                       " FROM event_chunk WHERE id=?1",
                       -1, &st, NULL);
    sqlite3_bind_int64(st, 1, id);
    CHECK_EQ_I64(sqlite3_step(st), SQLITE_ROW);
    mt_chunk_header h = {sqlite3_column_int64(st, 0), sqlite3_column_int64(st, 1),
                         sqlite3_column_int64(st, 2), sqlite3_column_int64(st, 3),
                         sqlite3_column_int64(st, 4), sqlite3_column_int64(st, 5) - 1};
    size_t len = (size_t)sqlite3_column_bytes(st, 6) - MT_CHUNK_CHECKSUM_BYTES;
    uint8_t* data = malloc(len + MT_CHUNK_CHECKSUM_BYTES);
    memcpy(data, sqlite3_column_blob(st, 6), len);
    sqlite3_finalize(st);
    len = mt_codec_chunk_seal(&h, data, len);
    sqlite3_prepare_v2(db, "UPDATE event_chunk SET count=?1, data=?2 WHERE id=?3", -1, &st, NULL);
    sqlite3_bind_int64(st, 1, h.count);
    sqlite3_bind_blob(st, 2, data, (int)len, SQLITE_TRANSIENT);
    sqlite3_bind_int64(st, 3, id);
    CHECK_EQ_I64(sqlite3_step(st), SQLITE_DONE);
    sqlite3_finalize(st);
    free(data);
}

static void test_decode_errors(void) {
    // In the reader's order: one decoded by the calling thread, two by the decoding thread
    // (a lying count, and a codec that is not the capture's).
    int64_t bad[3] = {by_seq[3], by_seq[200], by_seq[401]};
    char path[128], msg[256], cmd[128];
    sqlite3* db = copy_of("decode.db", path, sizeof path);
    reseal_with_lying_count(db, bad[0]);
    reseal_with_lying_count(db, bad[1]);
    snprintf(cmd, sizeof cmd, "UPDATE event_chunk SET codec=2 WHERE id=%lld", (long long)bad[2]);
    must_exec(db, cmd);
    sqlite3_close(db);

    size_t n;
    CHECK_EQ_I64(read_checked(path, bad, 3, &n, msg, sizeof msg), -EPROTO);
    char want[160];
    snprintf(want, sizeof want, "event chunk %lld is corrupt (its events do not decode)",
             (long long)bad[0]);
    CHECK_EQ_STR(msg, want);
    CHECK_EQ_I64(n, events_before(first_of[bad[0]]));

    // Both decoded ahead by the thread, 3 chunks apart (within what it decodes ahead): the
    // first stops the reading when the merge reaches it, the second is never said.
    int64_t ahead[2] = {by_seq[250], by_seq[253]};
    char path2[128];
    db = copy_of("decode_ahead.db", path2, sizeof path2);
    reseal_with_lying_count(db, ahead[0]);
    reseal_with_lying_count(db, ahead[1]);
    sqlite3_close(db);
    CHECK_EQ_I64(read_checked(path2, ahead, 2, &n, msg, sizeof msg), -EPROTO);
    snprintf(want, sizeof want, "event chunk %lld is corrupt (its events do not decode)",
             (long long)ahead[0]);
    CHECK_EQ_STR(msg, want);
    CHECK_EQ_I64(n, events_before(first_of[ahead[0]]));

    // Skipped, each reported once and in order, however often the capture is read.
    mt_capture_skip_corrupt_chunks(on_skip);
    reports = 0;
    for (int pass = 0; pass < 2; pass++) {
        CHECK_EQ_I64(read_checked(path, bad, 3, &n, msg, sizeof msg), 0);
        CHECK_EQ_I64(n, NEVENTS - 3 * PER_CHUNK);
    }
    mt_capture_skip_corrupt_chunks(NULL);
    // read_checked opens the capture each pass: one report per chunk per open capture.
    CHECK_EQ_I64(reports, 6);
    for (int pass = 0; pass < 2; pass++) {
        snprintf(want, sizeof want,
                 "event chunk %lld is corrupt (its events do not decode); skipped its 99 events",
                 (long long)bad[0]);
        CHECK_EQ_STR(what[3 * pass], want);
        snprintf(want, sizeof want,
                 "event chunk %lld is corrupt (its events do not decode); skipped its 99 events",
                 (long long)bad[1]);
        CHECK_EQ_STR(what[3 * pass + 1], want);
        snprintf(want, sizeof want,
                 "event chunk %lld is corrupt (codec 2, not 5); skipped its 100 events",
                 (long long)bad[2]);
        CHECK_EQ_STR(what[3 * pass + 2], want);
    }
}

// ---- batches of chunk ids while chunks appear (memreport live)

static int by_seq_cmp(const void* a, const void* b) {
    const mt_event *x = a, *y = b;
    return (x->seq > y->seq) - (x->seq < y->seq);
}

// The capture gets its chunks 70 at a time (ids in order, as a tracer writes them) and is
// read in batches of up to 64 ids after each: every event is read once, and each batch ends
// at the highest id it came across.
static void test_batches_while_written(void) {
    char path[128];
    sqlite3* db = copy_of("growing.db", path, sizeof path);
    must_exec(db, "CREATE TEMP TABLE rest AS SELECT * FROM event_chunk");
    must_exec(db, "DELETE FROM event_chunk");
    static mt_event got[NEVENTS];
    size_t n = 0;
    int64_t last = 0, written = 0;
    while (last < NCHUNKS) {
        char cmd[200];
        int64_t more = written + 70 < NCHUNKS ? written + 70 : NCHUNKS;
        snprintf(cmd, sizeof cmd,
                 "INSERT INTO event_chunk SELECT * FROM rest WHERE id>%lld AND id<=%lld",
                 (long long)written, (long long)more);
        must_exec(db, cmd);
        written = more;
        while (last < written) {
            char err[256] = "";
            mt_capture* cap = NULL;
            CHECK_EQ_I64(mt_capture_open_live(path, &cap, err, sizeof err), 0);
            if (!cap)
                return;
            mt_event_iter* it = NULL;
            int rc = mt_capture_iter_open_chunks(cap, MT_HEAP_LIBC, last, last + 64, &it);
            mt_event ev;
            while (rc == 0 && (rc = mt_capture_iter_next(it, &ev)) == 1) {
                if (n < NEVENTS)
                    got[n] = ev;
                n++;
                rc = 0;
            }
            CHECK_EQ_I64(rc, 0);
            int64_t end = last + 64 < written ? last + 64 : written;
            CHECK_EQ_I64(mt_capture_iter_last_chunk(it), end);
            last = end;
            mt_capture_iter_close(it);
            mt_capture_close(cap);
        }
    }
    sqlite3_close(db);
    CHECK_EQ_I64(n, NEVENTS);
    if (n != NEVENTS)
        return;
    qsort(got, n, sizeof *got, by_seq_cmp);
    size_t differ = 0;
    for (size_t i = 0; i < n; i++)
        differ += !same_event(&got[i], &truth[i]);
    CHECK_EQ_I64(differ, 0);
}

// ---- the decoding thread ends with its iterator

// How many threads run now that were not in `before` (task_list.h: by tid).
static int new_threads(const tids* before) {
    tids now = threads_now();
    int n = 0;
    for (int i = 0; i < now.n; i++)
        n += !tids_has(before, now.tid[i]);
    return n;
}

// new_threads once the threads that are ending have left /proc (a thread that keeps running
// is still there after 10 s).
static int new_threads_settled(const tids* before) {
    int n = new_threads(before);
    for (int i = 0; i < 1000 && n; i++) {
        nanosleep(&(struct timespec){0, 10 * 1000 * 1000}, NULL);
        n = new_threads(before);
    }
    return n;
}

// Reads `stop` events of each capture (all of them when more), all iterators open at once,
// and returns how many threads more than `before` ran before they were closed.
static int read_some(const char* const* paths, size_t ncap, size_t stop, const tids* before) {
    mt_capture* cap[4] = {0};
    mt_event_iter* it[4] = {0};
    char err[256];
    for (size_t k = 0; k < ncap; k++) {
        CHECK_EQ_I64(mt_capture_open(paths[k], &cap[k], err, sizeof err), 0);
        CHECK_EQ_I64(mt_capture_iter_open(cap[k], MT_HEAP_LIBC, &it[k]), 0);
    }
    mt_event ev;
    for (size_t i = 0; i < stop; i++)
        for (size_t k = 0; k < ncap; k++)
            if (it[k] && mt_capture_iter_next(it[k], &ev) != 1)
                i = stop;
    int during = new_threads(before);
    for (size_t k = 0; k < ncap; k++) {
        mt_capture_iter_close(it[k]);
        mt_capture_close(cap[k]);
    }
    return during;
}

static void test_no_thread_after_close(void) {
    tids before = threads_now();
    const char* one[] = {good};
    const char* three[] = {good, good, good};
    // Closed right after open, before the thread starts, just after, in the middle, at the end.
    static const size_t stops[] = {0, 16 * PER_CHUNK / NTHREADS, 40 * PER_CHUNK, NEVENTS / 2,
                                   NEVENTS + 1};
    for (size_t k = 0; k < sizeof stops / sizeof *stops; k++) {
        int during = read_some(one, 1, stops[k], &before);
        if (stops[k] >= 40 * PER_CHUNK)
            CHECK_EQ_I64(during, 1); // the decoding thread ran
        CHECK_EQ_I64(new_threads_settled(&before), 0);
    }
    // An iterator per capture, all open at once (as over a directory of captures).
    CHECK_EQ_I64(read_some(three, 3, NEVENTS / 3, &before), 3);
    CHECK_EQ_I64(new_threads_settled(&before), 0);
}

// ---- allocations that fail, threads that cannot be made (not under sanitizers, which
// own malloc and pthread_create)

// GCC says so with a macro, clang through __has_feature.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define UNDER_SANITIZER 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) ||                         \
    __has_feature(memory_sanitizer)
#define UNDER_SANITIZER 1
#endif
#endif

#ifdef UNDER_SANITIZER
static void test_failures(void) {
    printf("failed allocations and threads: not under sanitizers\n");
}
#else
extern void* __libc_malloc(size_t size);
static int fail_events_alloc; // fail the nth allocation of a chunk's events (1-based), 0: none
static int events_allocs;     // allocations of a chunk's events counted so far
static bool fail_thread;      // pthread_create fails
static pthread_t failed_on;   // the thread whose allocation failed

// This executable's malloc comes first for the whole process; an allocation the size of a
// chunk's events is the reader's.
void* malloc(size_t size) {
    if (fail_events_alloc && size == PER_CHUNK * sizeof(mt_event) &&
        ++events_allocs == fail_events_alloc) {
        failed_on = pthread_self();
        return NULL;
    }
    return __libc_malloc(size);
}

int pthread_create(pthread_t* t, const pthread_attr_t* attr, void* (*fn)(void*), void* arg) {
    static int (*real)(pthread_t*, const pthread_attr_t*, void* (*)(void*), void*);
    if (fail_thread)
        return EAGAIN;
    if (!real)
        *(void**)&real = dlsym(RTLD_NEXT, "pthread_create");
    return real(t, attr, fn, arg);
}

static void test_failures(void) {
    // The 10th chunk is decoded by the calling thread, the 300th by the decoding thread:
    // either way the reading ends there with the single-threaded reader's message.
    static const int nth[] = {10, 300};
    for (size_t k = 0; k < 2; k++) {
        char msg[256];
        size_t n;
        events_allocs = 0;
        fail_events_alloc = nth[k];
        int rc = read_checked(good, NULL, 0, &n, msg, sizeof msg);
        fail_events_alloc = 0;
        CHECK_EQ_I64(rc, -ENOMEM);
        CHECK_EQ_STR(msg, "out of memory");
        CHECK_EQ_I64(n, events_before(first_of[by_seq[nth[k] - 1]]));
        CHECK(pthread_equal(failed_on, pthread_self()) == (nth[k] <= 16));
    }
    // No thread: the calling thread decodes every chunk.
    tids before = threads_now();
    fail_thread = true;
    char msg[256];
    size_t n;
    CHECK_EQ_I64(read_checked(good, NULL, 0, &n, msg, sizeof msg), 0);
    CHECK_EQ_I64(n, NEVENTS);
    fail_thread = false;
    CHECK_EQ_I64(new_threads(&before), 0);
}
#endif

int main(void) {
    snprintf(good, sizeof good, "%s/good.db", test_tmpdir());
    write_good();
    size_t n;
    char msg[256];
    CHECK_EQ_I64(read_checked(good, NULL, 0, &n, msg, sizeof msg), 0);
    CHECK_EQ_I64(n, NEVENTS);
    test_sql_error_mid_read();
    test_decode_errors();
    test_batches_while_written();
    test_no_thread_after_close();
    test_failures();
    CHECK_DONE();
}
