// SPDX-License-Identifier: MIT
// The event reader on a capture of many chunks, where it decodes chunks ahead of the merge
// on a second thread: the same events in the same order as the truth, a corrupt chunk in
// the middle failing at the same event with the same message (or skipped and reported once
// in the skip mode), iterators closed early or read in turns ending cleanly (ASan and TSan
// builds check that nothing leaks or races), and a decoding thread that takes no signals.
#include "task_list.h"

#include "../check.h"
#include "../rng.h"
#include "../tmpdir.h"
#include "memtrace/capture.h"
#include "memtrace/codec.h"
#include "memtrace/schema.h"

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

// 3 threads of 300 chunks of 100 events: many more chunks than the reader decodes without
// a thread, and chunks of different threads overlapping in seq.
enum { NTHREADS = 3, CHUNKS_PER_THREAD = 300, PER_CHUNK = 100 };
enum { NEVENTS = NTHREADS * CHUNKS_PER_THREAD * PER_CHUNK };

static mt_event truth[NEVENTS]; // in seq order
static char good[128];

static uint64_t rng = 0x9e3779b97f4a7c15ull;

// Events of threads picked at random; each thread's chunks written in turn, so the chunk
// ids do not follow seq.
static void write_good(void) {
    static mt_event per[NTHREADS][NEVENTS];
    size_t n[NTHREADS] = {0};
    size_t i = 0;
    for (uint64_t seq = 1; i < NEVENTS; seq++) {
        int t = (int)(test_rng(&rng) % NTHREADS);
        if (n[t] == CHUNKS_PER_THREAD * PER_CHUNK)
            continue;
        truth[i] = (mt_event){.seq = seq,
                              .ts = (int64_t)seq * 10,
                              .addr = 0x10000 + (test_rng(&rng) % 4096) * 16,
                              .size = 1 + test_rng(&rng) % 5000,
                              .callsite = (uint32_t)(1 + test_rng(&rng) % 50),
                              .tid = 100 + (uint32_t)t,
                              .kind = (uint8_t)(test_rng(&rng) % 2 ? MT_KIND_MALLOC : MT_KIND_FREE),
                              .heap = MT_HEAP_LIBC};
        per[t][n[t]++] = truth[i++];
    }
    char err[256];
    mt_capture_writer* w;
    CHECK_EQ_I64(mt_capture_writer_open(good, &w, err, sizeof err), 0);
    CHECK_EQ_I64(mt_capture_writer_heap(w, MT_HEAP_LIBC, "libc", "libc", "ns"), 0);
    uint8_t* scratch = malloc(mt_codec_bound(PER_CHUNK));
    CHECK_EQ_I64(mt_capture_writer_begin(w), 0);
    for (size_t c = 0; c < CHUNKS_PER_THREAD; c++)
        for (int t = NTHREADS - 1; t >= 0; t--)
            CHECK_EQ_I64(mt_capture_writer_chunk(w, MT_HEAP_LIBC, per[t] + c * PER_CHUNK, PER_CHUNK,
                                                 scratch),
                         0);
    CHECK_EQ_I64(mt_capture_writer_commit(w), 0);
    CHECK_EQ_I64(mt_capture_writer_finish(w, "complete"), 0);
    free(scratch);
}

static bool same_event(const mt_event* a, const mt_event* b) {
    return a->seq == b->seq && a->ts == b->ts && a->addr == b->addr && a->size == b->size &&
           a->callsite == b->callsite && a->tid == b->tid && a->kind == b->kind &&
           a->heap == b->heap;
}

// A copy of the good capture with the blobs of chunks ids[0..n) zeroed; *first gets the
// seq_first of ids[0], lost[k] the event count of ids[k].
static const char* damaged(const char* name, const int64_t* ids, size_t n, uint64_t* first) {
    static char path[128];
    snprintf(path, sizeof path, "%s/%s", test_tmpdir(), name);
    char cmd[400];
    snprintf(cmd, sizeof cmd, "cp '%s' '%s'", good, path);
    CHECK_EQ_I64(system(cmd), 0);
    sqlite3* db;
    CHECK_EQ_I64(sqlite3_open(path, &db), SQLITE_OK);
    for (size_t k = 0; k < n; k++) {
        snprintf(cmd, sizeof cmd,
                 "UPDATE event_chunk SET data = zeroblob(length(data)) WHERE id = %lld",
                 (long long)ids[k]);
        CHECK_EQ_I64(sqlite3_exec(db, cmd, NULL, NULL, NULL), SQLITE_OK);
    }
    sqlite3_stmt* st;
    sqlite3_prepare_v2(db, "SELECT seq_first FROM event_chunk WHERE id = ?1", -1, &st, NULL);
    sqlite3_bind_int64(st, 1, ids[0]);
    CHECK_EQ_I64(sqlite3_step(st), SQLITE_ROW);
    *first = (uint64_t)sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    sqlite3_close(db);
    return path;
}

static mt_capture* open_capture(const char* path) {
    char err[256] = "";
    mt_capture* cap = NULL;
    int rc = mt_capture_open(path, &cap, err, sizeof err);
    CHECK_EQ_I64(rc, 0);
    if (rc)
        fprintf(stderr, "open %s: %s\n", path, err);
    return cap;
}

// Reads every event, checking each against the truth (events of chunks left out are passed
// over). Returns the iterator's last answer; *message gets its error.
static int read_checked(mt_capture* cap, size_t* count, char* message, size_t len) {
    mt_event_iter* it = NULL;
    int rc = mt_capture_iter_open(cap, MT_HEAP_LIBC, &it);
    size_t n = 0, pos = 0;
    mt_event ev;
    while (rc == 0 && (rc = mt_capture_iter_next(it, &ev)) == 1) {
        while (pos < NEVENTS && truth[pos].seq < ev.seq)
            pos++;
        if (pos == NEVENTS || !same_event(&ev, &truth[pos])) {
            fprintf(stderr, "event %zu (seq %llu) differs from the truth\n", n,
                    (unsigned long long)ev.seq);
            CHECK(0);
            break;
        }
        n++;
        rc = 0;
    }
    snprintf(message, len, "%s", rc < 0 ? mt_capture_iter_error(it) : "");
    mt_capture_iter_close(it);
    *count = n;
    return rc;
}

static void test_exact(void) {
    mt_capture* cap = open_capture(good);
    size_t n;
    char msg[256];
    CHECK_EQ_I64(read_checked(cap, &n, msg, sizeof msg), 0);
    CHECK_EQ_I64(n, NEVENTS);
    mt_capture_close(cap);
}

static size_t events_before(uint64_t seq) {
    size_t n = 0;
    while (n < NEVENTS && truth[n].seq < seq)
        n++;
    return n;
}

// A corrupt chunk in the middle stops the reading where the merge reaches it, not where a
// decoder running ahead met it: every event before its first seq comes first.
static void test_corrupt_middle(void) {
    int64_t id = 450;
    uint64_t first;
    const char* p = damaged("middle.db", &id, 1, &first);
    mt_capture* cap = open_capture(p);
    size_t n;
    char msg[256];
    CHECK_EQ_I64(read_checked(cap, &n, msg, sizeof msg), -EPROTO);
    CHECK_EQ_STR(msg, "event chunk 450 is corrupt (checksum mismatch)");
    CHECK_EQ_I64(n, events_before(first));
    CHECK(n > NEVENTS / 4); // well past the chunks read before the decoding thread starts
    mt_capture_close(cap);
}

static int reports;
static char what[8][256];
static void on_skip(const char* path, const char* w) {
    (void)path;
    if (reports < 8)
        snprintf(what[reports], sizeof what[0], "%s", w);
    reports++;
}

// In the skip mode each corrupt chunk is left out and reported once, in the order the
// merge meets them, however often the capture is read.
static void test_skip(void) {
    int64_t ids[2] = {5, 700};
    uint64_t first;
    const char* p = damaged("skip.db", ids, 2, &first);
    mt_capture_skip_corrupt_chunks(on_skip);
    mt_capture* cap = open_capture(p);
    for (int pass = 0; pass < 2; pass++) {
        size_t n;
        char msg[256];
        CHECK_EQ_I64(read_checked(cap, &n, msg, sizeof msg), 0);
        CHECK_EQ_I64(n, NEVENTS - 2 * PER_CHUNK);
    }
    CHECK_EQ_I64(reports, 2);
    CHECK_EQ_STR(what[0], "event chunk 5 is corrupt (checksum mismatch); skipped its 100 events");
    CHECK_EQ_STR(what[1], "event chunk 700 is corrupt (checksum mismatch); skipped its 100 events");
    mt_capture_close(cap);
    mt_capture_skip_corrupt_chunks(NULL);
}

// Reports that stop early close the iterator with chunks decoded and being decoded ahead.
static void test_close_early(void) {
    mt_capture* cap = open_capture(good);
    static const size_t stops[] = {0, 1, 1700, 1701, 1702, 5000, NEVENTS / 2, NEVENTS - 1};
    for (size_t k = 0; k < sizeof stops / sizeof *stops; k++) {
        mt_event_iter* it = NULL;
        CHECK_EQ_I64(mt_capture_iter_open(cap, MT_HEAP_LIBC, &it), 0);
        mt_event ev;
        for (size_t i = 0; i < stops[k]; i++) {
            if (mt_capture_iter_next(it, &ev) != 1 || !same_event(&ev, &truth[i])) {
                CHECK(0);
                break;
            }
        }
        mt_capture_iter_close(it);
    }
    mt_capture_close(cap);
}

// Two iterators on one capture read in turns (one connection, two decoding threads).
static void test_two_iterators(void) {
    mt_capture* cap = open_capture(good);
    mt_event_iter *a = NULL, *b = NULL;
    CHECK_EQ_I64(mt_capture_iter_open(cap, MT_HEAP_LIBC, &a), 0);
    CHECK_EQ_I64(mt_capture_iter_open(cap, MT_HEAP_LIBC, &b), 0);
    size_t na = 0, nb = 0;
    int ra = 1, rb = 1;
    mt_event ev;
    while (ra == 1 || rb == 1) {
        for (int i = 0; i < 37 && ra == 1; i++)
            if ((ra = mt_capture_iter_next(a, &ev)) == 1 && !same_event(&ev, &truth[na++]))
                ra = -1;
        for (int i = 0; i < 53 && rb == 1; i++)
            if ((rb = mt_capture_iter_next(b, &ev)) == 1 && !same_event(&ev, &truth[nb++]))
                rb = -1;
    }
    CHECK_EQ_I64(ra, 0);
    CHECK_EQ_I64(rb, 0);
    CHECK_EQ_I64(na, NEVENTS);
    CHECK_EQ_I64(nb, NEVENTS);
    mt_capture_iter_close(a);
    mt_capture_iter_close(b);
    mt_capture_close(cap);
}

// The signals a program's handlers wait for (bit sig - 1 of a /proc SigBlk mask).
#define BIT(sig) (1ull << ((sig)-1))
static const uint64_t ASYNC_SIGNALS = BIT(SIGHUP) | BIT(SIGINT) | BIT(SIGQUIT) | BIT(SIGPIPE) |
                                      BIT(SIGALRM) | BIT(SIGTERM) | BIT(SIGUSR1) | BIT(SIGUSR2) |
                                      BIT(SIGCHLD) | BIT(SIGWINCH);

// The SigBlk mask of each thread of this process not in `before`, from /proc: how many
// there are, and how many block all of ASYNC_SIGNALS (task_list.h: by tid).
static void new_threads(const tids* before, int* n, int* blocking_all) {
    *n = *blocking_all = 0;
    tids now = threads_now();
    for (int i = 0; i < now.n; i++) {
        if (tids_has(before, now.tid[i]))
            continue;
        char status[64], line[256];
        snprintf(status, sizeof status, "/proc/self/task/%d/status", now.tid[i]);
        FILE* f = fopen(status, "r");
        if (!f)
            continue; // gone meanwhile
        (*n)++;
        while (fgets(line, sizeof line, f))
            if (!strncmp(line, "SigBlk:", 7) &&
                (strtoull(line + 7, NULL, 16) & ASYNC_SIGNALS) == ASYNC_SIGNALS)
                (*blocking_all)++;
        fclose(f);
    }
}

// A signal sent to the process reaches a thread of the program's, never the decoding thread
// (memreport live relies on SIGINT interrupting its main thread's poll).
static void test_worker_takes_no_signals(void) {
    tids before = threads_now(); // a sanitizer may run threads of its own
    mt_capture* cap = open_capture(good);
    mt_event_iter* it = NULL;
    CHECK_EQ_I64(mt_capture_iter_open(cap, MT_HEAP_LIBC, &it), 0);
    mt_event ev;
    for (size_t i = 0; i < NEVENTS / 2; i++)
        CHECK_EQ_I64(mt_capture_iter_next(it, &ev), 1);
    int n, blocking;
    new_threads(&before, &n, &blocking);
    CHECK_EQ_I64(n, 1); // the decoding thread runs
    CHECK_EQ_I64(blocking, 1);
    mt_capture_iter_close(it);
    mt_capture_close(cap);
}

int main(void) {
    snprintf(good, sizeof good, "%s/good.db", test_tmpdir());
    write_good();
    test_exact();
    test_corrupt_middle();
    test_skip();
    test_close_early();
    test_two_iterators();
    test_worker_takes_no_signals();
    CHECK_DONE();
}
