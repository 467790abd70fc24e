// SPDX-License-Identifier: MIT
// A heap's aggregates (reporter/model/aggregates.h) and checkpoints (checkpoints.h) against
// the replay they stand for, on random event streams: the stored ones read back equal to
// the replay's, every default profile and every profile at random times the same either
// way, every report that reads them byte-identical to the same report reading every event,
// and stored aggregates or checkpoints that are damaged, forged or of other events never
// used.
#include "aggregates.h"
#include "checkpoints.h"
#include "cmd.h"
#include "end_blocks.h"
#include "segments.h"

#include "../check.h"
#include "../reports/fixture.h"
#include "../rng.h"
#include "../tmpdir.h"
#include "memtrace/schema.h"

#include <errno.h>
#include <fcntl.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { NCALLSITES = 12, NSLOTS = 24 };

static uint64_t rng_state;

static uint64_t rnd(uint64_t n) {
    return (test_lcg(&rng_state) >> 33) % n;
}

// A random capture: a small callsite tree (leaf 12 under the C runtime's loader, so the
// runtime-held rule has a row to take), 1-4 threads, frees of live and unknown blocks,
// allocations over a live address (a missed free), realloc pairs, sizes 0 and repeated so
// that temporaries happen, sometimes a stray callsite id, sometimes sampled. long_run: one
// thread and 400-800 events.
static void random_capture(const char* path, unsigned seed, bool long_run) {
    rng_state = seed * 0x9e3779b97f4a7c15ULL + 1;
    fx f;
    fx_open(&f, path);
    fx_sql(&f, "INSERT INTO meta VALUES('exe','/usr/bin/prog'),('pid','7'),('symbolized','1');"
               "INSERT INTO thread(tid, name) VALUES(1,'main'),(2,'w2'),(3,'w3'),(4,'w4');"
               "INSERT INTO mapping VALUES(1,'/usr/bin/prog',4096,65536,0,'ab',0,NULL),"
               "(2,'/lib64/ld-linux-x86-64.so.2',1048576,2097152,1048576,'cd',0,NULL);");
    char sql[4096];
    int n =
        snprintf(sql, sizeof sql, "INSERT INTO frame VALUES(1,1,4097,4097,'main','m.c',1,NULL,1)");
    for (int i = 2; i <= NCALLSITES; i++)
        n += snprintf(sql + n, sizeof sql - (size_t)n, ",(%d,%d,%d,%d,'%s%d','f.c',%d,NULL,1)", i,
                      i == NCALLSITES ? 2 : 1, 4096 + i, 4096 + i,
                      i == NCALLSITES ? "_dl_alloc" : "fn", i, i);
    n += snprintf(sql + n, sizeof sql - (size_t)n, ";INSERT INTO callsite VALUES(1,0,1,1)");
    for (int i = 2; i <= NCALLSITES; i++) {
        int parent = 1 + (int)rnd((uint64_t)i - 1);
        n += snprintf(sql + n, sizeof sql - (size_t)n, ",(%d,%d,%d,%d)", i, parent, i, 2);
    }
    snprintf(sql + n, sizeof sql - (size_t)n, ";");
    fx_sql(&f, sql);
    // Depths as the tree says (the reader checks them only for cycles; reports show them).
    fx_sql(&f, "WITH RECURSIVE d(id, depth) AS (SELECT 1, 1 UNION ALL SELECT c.id, d.depth + 1"
               " FROM callsite c JOIN d ON c.parent_id = d.id)"
               " UPDATE callsite SET depth = (SELECT depth FROM d WHERE d.id = callsite.id);");
    if (seed % 5 == 4)
        fx_sql(&f, "INSERT INTO meta VALUES('sample_bytes','4096'),"
                   "('sample_method','poisson-bytes');");
    uint32_t nthreads = long_run ? 1 : 1 + (uint32_t)rnd(4);
    uint64_t live[NSLOTS] = {0}; // the size+1 of each slot's block, 0: free
    size_t nevents = long_run ? 400 + rnd(400) : 40 + rnd(400);
    for (size_t e = 0; e < nevents; e++) {
        uint32_t tid = 1 + (uint32_t)rnd(nthreads);
        size_t slot = rnd(NSLOTS);
        uint64_t addr = 0x10000 + slot * 0x100;
        uint32_t cs = 2 + (uint32_t)rnd(NCALLSITES - 1);
        if (rnd(40) == 0)
            cs = 999; // no such callsite
        uint64_t size = rnd(8) == 0 ? 0 : rnd(3) == 0 ? 64 : 1 + rnd(5000);
        unsigned what = (unsigned)rnd(10);
        if (what < 4 || (!live[slot] && what < 8)) { // alloc (over a live one: a missed free)
            fx_alloc(&f, tid, addr, size, cs);
            live[slot] = size + 1;
            if (rnd(4) == 0) { // freed at once: a temporary
                fx_free(&f, tid, addr);
                live[slot] = 0;
            }
        } else if (what < 8) {
            fx_free(&f, tid, addr);
            live[slot] = 0;
        } else if (what == 8 && live[slot]) { // realloc to the next slot's address
            size_t to = (slot + 1) % NSLOTS;
            fx_event(&f, MT_KIND_REALLOC_FREE, tid, addr, 0, cs);
            fx_event(&f, MT_KIND_REALLOC, tid, 0x10000 + to * 0x100, size, cs);
            live[slot] = 0;
            live[to] = size + 1;
        } else {
            fx_free(&f, tid, 0x900000 + e); // a block allocated before tracing
        }
    }
    // Times out of seq order, as threads stamp them (a moment is the state before the first
    // event stamped after it, whatever the events after that).
    for (size_t i = 0; seed % 3 == 1 && i < f.n; i++)
        f.ev[i].ts += (int64_t)rnd(2500);
    fx_finish(&f, seed % 7 == 6 ? "recording" : "complete");
}

static void same_profile(const mr_profile* a, const mr_profile* b) {
    CHECK_EQ_I64(a->nrows, b->nrows);
    CHECK(a->nrows != b->nrows || !a->nrows ||
          !memcmp(a->rows, b->rows, a->nrows * sizeof *a->rows));
    CHECK_EQ_I64(a->moment_seq, b->moment_seq);
    CHECK_EQ_I64(a->moment_ts, b->moment_ts);
    CHECK_EQ_I64(a->live_bytes, b->live_bytes);
    CHECK_EQ_I64(a->live_blocks, b->live_blocks);
    CHECK_EQ_I64(a->end_bytes, b->end_bytes);
    CHECK_EQ_I64(a->end_blocks, b->end_blocks);
    CHECK_EQ_I64(a->alloc_bytes, b->alloc_bytes);
    CHECK_EQ_I64(a->alloc_count, b->alloc_count);
    CHECK_EQ_I64(a->peak_bytes, b->peak_bytes);
    CHECK_EQ_I64(a->peak_seq, b->peak_seq);
    CHECK_EQ_I64(a->peak_ts, b->peak_ts);
    CHECK_EQ_I64(a->events, b->events);
    CHECK_EQ_I64(a->first_ts, b->first_ts);
    CHECK_EQ_I64(a->last_ts, b->last_ts);
    CHECK(!memcmp(&a->heap, &b->heap, sizeof a->heap));
}

// What a query with ends_only must give alike: the rows with blocks live at the end, their
// end metrics, and the sums of those.
static void same_ends(const mr_profile* a, const mr_profile* b) {
    size_t i = 0, j = 0;
    for (;; i++, j++) {
        while (i < a->nrows && !a->rows[i].end_blocks)
            i++;
        while (j < b->nrows && !b->rows[j].end_blocks)
            j++;
        if (i == a->nrows || j == b->nrows)
            break;
        CHECK_EQ_I64(a->rows[i].callsite, b->rows[j].callsite);
        CHECK_EQ_I64(a->rows[i].tid, b->rows[j].tid);
        CHECK_EQ_I64(a->rows[i].end_bytes, b->rows[j].end_bytes);
        CHECK_EQ_I64(a->rows[i].end_blocks, b->rows[j].end_blocks);
    }
    CHECK(i == a->nrows && j == b->nrows);
    CHECK_EQ_I64(a->end_bytes, b->end_bytes);
    CHECK_EQ_I64(a->end_blocks, b->end_blocks);
}

static void same_aggregates(const mr_aggregates* a, const mr_aggregates* b) {
    same_profile(&a->peak, &b->peak);
    CHECK(a->peak.nrows != b->peak.nrows || !a->peak.nrows ||
          !memcmp(a->temporary, b->temporary, a->peak.nrows * sizeof *a->temporary));
    CHECK_EQ_I64(a->nthreads, b->nthreads);
    CHECK(a->nthreads != b->nthreads || !a->nthreads ||
          !memcmp(a->threads, b->threads, a->nthreads * sizeof *a->threads));
    CHECK(!memcmp(a->hist_count, b->hist_count, sizeof a->hist_count));
    CHECK(!memcmp(a->hist_bytes, b->hist_bytes, sizeof a->hist_bytes));
    CHECK_EQ_I64(a->frees, b->frees);
    CHECK_EQ_I64(a->temporaries, b->temporaries);
}

static mt_capture* open_capture(const char* path) {
    mt_capture* cap = NULL;
    char err[256];
    if (mt_capture_open(path, &cap, err, sizeof err))
        fprintf(stderr, "%s: %s\n", path, err);
    CHECK(cap != NULL);
    return cap;
}

static void get(mt_capture* cap, mr_aggregates* a) {
    char err[256] = "";
    int rc = mr_aggregates_get(cap, MT_HEAP_LIBC, NULL, a, err, sizeof err);
    if (rc)
        fprintf(stderr, "mr_aggregates_get: %s\n", err);
    CHECK_EQ_I64(rc, 0);
}

static void profile(mt_capture* cap, mr_moment moment, mr_profile* p) {
    mr_query q = MR_QUERY_INIT(MT_HEAP_LIBC);
    q.moment = moment;
    char err[256] = "";
    CHECK_EQ_I64(mr_profile_build(cap, &q, p, err, sizeof err), 0);
}

// ---- reports: each run writes OUT; the texts of one pass are kept to compare

typedef struct report {
    int (*cmd)(int, char**);
    const char* args[6];
} report;

static const report reports[] = {
    {mr_cmd_summary, {"summary", "--json"}},
    {mr_cmd_summary, {"summary"}},
    {mr_cmd_leaks, {"leaks", "--json"}},
    {mr_cmd_stats, {"stats", "--json"}},
    {mr_cmd_stats, {"stats", "--stacks"}},
    {mr_cmd_top, {"top", "--json"}},
    {mr_cmd_top, {"top", "--metric", "leaked"}},
    {mr_cmd_flamegraph, {"flamegraph"}},
    {mr_cmd_flamegraph, {"flamegraph", "--leaks"}},
    {mr_cmd_flamegraph, {"flamegraph", "--split-threads"}},
    {mr_cmd_flamegraph, {"flamegraph", "--leaks", "--split-threads"}},
    {mr_cmd_top, {"top", "--json", "--thread", "2"}},
};
#define NREPORTS (sizeof reports / sizeof *reports)

static void run_list(const report* list, size_t n, const char* cap, char** texts) {
    char out[512];
    snprintf(out, sizeof out, "%s/out", test_tmpdir());
    for (size_t i = 0; i < n; i++) {
        const char* const* a = list[i].args;
        int rc = fx_run(list[i].cmd, a[0], cap, "-f", "-o", out, a[1], a[2], a[3], a[4], NULL);
        CHECK_EQ_I64(rc, 0);
        texts[i] = fx_read(out);
        CHECK(texts[i] != NULL);
    }
}

static void run_reports(const char* cap, char** texts) {
    run_list(reports, NREPORTS, cap, texts);
}

static void same_reports(char** a, char** b, unsigned seed, const char* what) {
    for (size_t i = 0; i < NREPORTS; i++)
        if (!a[i] || !b[i] || strcmp(a[i], b[i])) {
            CHECK(false);
            fprintf(stderr, "seed %u: %s %s differs %s\n", seed, reports[i].args[0],
                    reports[i].args[1] ? reports[i].args[1] : "", what);
        }
}

static void free_texts(char** t) {
    for (size_t i = 0; i < NREPORTS; i++)
        free(t[i]);
}

// Replaces the stored bytes of the heap (fingerprint too when forging it).
static void store(mt_capture* cap, const uint8_t* data, size_t len, bool other_events) {
    uint64_t fp;
    CHECK_EQ_I64(mt_capture_aggregate_fingerprint(cap, MT_HEAP_LIBC, &fp), 0);
    CHECK_EQ_I64(mt_capture_aggregate_store(cap, MT_HEAP_LIBC, MR_AGGREGATES_FORMAT,
                                            other_events ? fp + 1 : fp, data, len),
                 0);
}

// The note mr_aggregates_get left in err (get_noted), empty when none.
static char note[256];

static void get_noted(mt_capture* cap, mr_aggregates* a) {
    note[0] = 0;
    CHECK_EQ_I64(mr_aggregates_get(cap, MT_HEAP_LIBC, NULL, a, note, sizeof note), 0);
}

// stderr to a file until stderr_back, which returns what was written.
static int stderr_away(void) {
    fflush(stderr);
    int saved = dup(2), fd = open(test_tmppath("stderr"), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    dup2(fd, 2);
    close(fd);
    return saved;
}

static char* stderr_back(int saved) {
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    return fx_read(test_tmppath("stderr"));
}

// stderr to a file while fn runs; returns what it wrote.
static char* stderr_of(void (*fn)(mt_capture*, mr_aggregates*), mt_capture* cap, mr_aggregates* a) {
    int saved = stderr_away();
    fn(cap, a);
    return stderr_back(saved);
}

// How many times line occurs in text.
static int count_lines(const char* text, const char* line) {
    int n = 0;
    for (const char* p = text; p && (p = strstr(p, line)); p += strlen(line))
        n++;
    return n;
}

// Stored aggregates that are damaged, that do not add up, or that are of other events:
// each time the replay's figures, and a note unless they were of other events. The model
// prints nothing: the note is in err, and memreport prints it once as "memreport: FILE:".
static void test_forged(const char* path, const mr_aggregates* truth) {
    mt_capture* cap = open_capture(path);
    if (!cap)
        return;
    size_t len;
    uint8_t* good = mr_aggregates_encode(truth, &len);
    CHECK(good != NULL);
    for (int kind = 0; good && kind < 4; kind++) {
        uint8_t* data = malloc(len);
        memcpy(data, good, len);
        size_t n = len;
        if (kind == 0) { // a flipped bit
            data[rnd(len)] ^= (uint8_t)(1u << rnd(8));
        } else if (kind == 1) { // forged, with a valid checksum: one more byte at a site
            mr_aggregates f;
            char why[128];
            CHECK_EQ_I64(mr_aggregates_decode(good, len, MT_HEAP_LIBC, &f, why, sizeof why), 0);
            if (f.peak.nrows)
                f.peak.rows[rnd(f.peak.nrows)].end_bytes++;
            else
                f.peak.heap.events++;
            free(data);
            data = mr_aggregates_encode(&f, &n);
            mr_aggregates_free(&f);
        } else if (kind == 2) { // cut short
            n = len / 2;
        }
        store(cap, data, n, kind == 3);
        mr_aggregates a;
        char* said = stderr_of(get_noted, cap, &a);
        same_aggregates(&a, truth);
        // Of other events: replaced without a word, as the events were read anyway.
        bool told = strstr(note, "stored aggregates") && strstr(note, "reading the events");
        CHECK(kind == 3 ? !*note : told);
        if (kind != 3 && !told)
            fprintf(stderr, "forgery %d: noted '%s'\n", kind, note);
        CHECK(said && !*said);
        free(said);
        mr_aggregates_free(&a);
        // The same damage under a report: memreport says the note once.
        store(cap, data, n, kind == 3);
        free(data);
        char line[1024];
        snprintf(line, sizeof line, "memreport: %s: %s\n", path, note);
        int saved = stderr_away();
        CHECK_EQ_I64(
            fx_run(mr_cmd_summary, "summary", path, "-f", "-o", test_tmppath("summary"), NULL), 0);
        said = stderr_back(saved);
        CHECK(said != NULL);
        CHECK_EQ_I64(count_lines(said, line), kind == 3 ? 0 : 1);
        CHECK(kind != 3 || (said && !strstr(said, "damaged")));
        free(said);
        mr_aggregates b; // stored anew by that replay: read back as they are
        char* again = stderr_of(get, cap, &b);
        same_aggregates(&b, truth);
        CHECK(again && !*again);
        free(again);
        mr_aggregates_free(&b);
    }
    free(good);
    mt_capture_close(cap);
}

// ---- checkpoints

// Times to ask: before the first event, at and between events, after the last.
static int64_t random_time(void) {
    uint64_t r = rnd(6);
    return r == 0 ? -5 : r == 1 ? 1000 * (int64_t)rnd(500) : (int64_t)rnd(500000);
}

// n random queries sharing a replay: at times, at the peak, at the end; or one at the peak
// of a random range (one end or both); or one at the peak or the end by thread or of one
// thread (sometimes one that made no event).
static void random_moments(mr_query* qs, size_t* n) {
    for (size_t k = 0; k < *n; k++) {
        qs[k] = (mr_query)MR_QUERY_INIT(MT_HEAP_LIBC);
        uint64_t r = rnd(8);
        qs[k].moment = r == 0 ? MR_AT_PEAK : r == 1 ? MR_AT_END : MR_AT_TIME;
        qs[k].at = random_time();
    }
    uint64_t ranged = rnd(4);
    if (ranged < 2) { // at a range's peak, or its leaks (the blocks allocated in it at the end)
        *n = 1;
        qs[0].moment = ranged ? MR_AT_END : MR_AT_PEAK;
        qs[0].range_blocks = ranged;
        int64_t a = random_time(), b = random_time();
        qs[0].from = rnd(4) == 0 ? INT64_MIN : a < b ? a : b;
        qs[0].to = rnd(4) == 0 ? INT64_MAX : a < b ? b : a;
    } else if (rnd(2) == 0) {
        *n = 1;
        qs[0].moment = rnd(2) ? MR_AT_PEAK : MR_AT_END;
        qs[0].by_thread = rnd(2);
        qs[0].tid = qs[0].by_thread && rnd(2) ? 0 : 1 + (uint32_t)rnd(5);
    }
}

// The note left in err goes to `note`.
static void build_moments(mt_capture* cap, const mr_query* qs, size_t n, mr_profile* out) {
    note[0] = 0;
    int rc = mr_profile_build_moments(cap, qs, n, out, note, sizeof note);
    if (rc)
        fprintf(stderr, "mr_profile_build_moments: %s\n", note);
    CHECK_EQ_I64(rc, 0);
}

#define CHECKPOINTS_DAMAGED "the stored checkpoints are damaged ("

// Whether every line of text that says "damaged" is the damaged checkpoints' note, as
// memreport prints it for the capture path (and, when none may, no line says it).
static bool damage_said_well(const char* text, const char* path, bool may) {
    char head[512];
    snprintf(head, sizeof head, "memreport: %s: " CHECKPOINTS_DAMAGED, path);
    for (const char* line = text; line && *line;) {
        const char* end = strchr(line, '\n');
        size_t len = end ? (size_t)(end - line) : strlen(line);
        char* one = strndup(line, len);
        bool bad = one && strstr(one, "damaged") && (!may || strncmp(one, head, strlen(head)));
        free(one);
        if (bad)
            return false;
        line = end ? end + 1 : NULL;
    }
    return true;
}

static const report at_reports[] = {
    {mr_cmd_top, {"top", "--json", "--at", NULL}},
    {mr_cmd_flamegraph, {"flamegraph", "--at", NULL}},
    {mr_cmd_flow, {"flow", "--json", "--at", "peak", "--at", NULL}},
    {mr_cmd_top, {"top", "--json", "--range", NULL}},
    {mr_cmd_leaks, {"leaks", "--json", "--range", NULL}},
    {mr_cmd_top, {"top", "--metric", "leaked", "--range", NULL}},
};
#define NAT (sizeof at_reports / sizeof *at_reports)

// The --at reports at time t (ns), into texts.
static void run_at_reports(const char* cap, int64_t t, char** texts) {
    char out[512], at[32], range[64];
    snprintf(out, sizeof out, "%s/out", test_tmpdir());
    for (size_t i = 0; i < NAT; i++) {
        // Anew for each: a command may cut its argument where it parses it.
        snprintf(at, sizeof at, "%lldns", (long long)t);
        snprintf(range, sizeof range, "%lldns..%lldns", (long long)t / 2, (long long)t);
        const char* a[7] = {0};
        memcpy(a, at_reports[i].args, sizeof at_reports[i].args);
        for (size_t j = 0; j < 7; j++)
            if (!a[j]) {
                a[j] = strcmp(a[j - 1], "--range") ? at : range;
                break;
            }
        int rc = fx_run(at_reports[i].cmd, a[0], cap, "-f", "-o", out, a[1], a[2], a[3], a[4], a[5],
                        NULL);
        CHECK_EQ_I64(rc, 0);
        texts[i] = fx_read(out);
        CHECK(texts[i] != NULL);
    }
}

static sqlite3* open_db(const char* path) {
    sqlite3* db = NULL;
    CHECK_EQ_I64(sqlite3_open(path, &db), SQLITE_OK);
    return db;
}

// Flips a random bit in every stored checkpoint: in its live blocks, or in its allocations.
static void damage_checkpoints(const char* path) {
    sqlite3* db = open_db(path);
    sqlite3_stmt *rd = NULL, *wr = NULL;
    bool allocated = rnd(2);
    CHECK_EQ_I64(sqlite3_prepare_v2(db,
                                    allocated ? "SELECT seq, allocated FROM checkpoint"
                                              : "SELECT seq, data FROM checkpoint",
                                    -1, &rd, NULL),
                 0);
    CHECK_EQ_I64(sqlite3_prepare_v2(db,
                                    allocated ? "UPDATE checkpoint SET allocated=?2 WHERE seq=?1"
                                              : "UPDATE checkpoint SET data=?2 WHERE seq=?1",
                                    -1, &wr, NULL),
                 0);
    sqlite3_exec(db, "BEGIN", NULL, NULL, NULL);
    while (rd && wr && sqlite3_step(rd) == SQLITE_ROW) {
        size_t len = (size_t)sqlite3_column_bytes(rd, 1);
        uint8_t* data = malloc(len ? len : 1);
        memcpy(data, sqlite3_column_blob(rd, 1), len);
        if (len)
            data[rnd(len)] ^= (uint8_t)(1u << rnd(8));
        sqlite3_bind_int64(wr, 1, sqlite3_column_int64(rd, 0));
        sqlite3_bind_blob(wr, 2, data, (int)len, SQLITE_TRANSIENT);
        CHECK_EQ_I64(sqlite3_step(wr), SQLITE_DONE);
        sqlite3_reset(wr);
        free(data);
    }
    sqlite3_finalize(rd);
    sqlite3_finalize(wr);
    CHECK_EQ_I64(sqlite3_exec(db, "COMMIT", NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(db);
}

static void drop_tables(const char* path, const char* sql) {
    sqlite3* db = open_db(path);
    CHECK_EQ_I64(sqlite3_exec(db, sql, NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(db);
}

static void put_chunk(const char* path, int64_t id, const void* data, int len) {
    sqlite3* db = open_db(path);
    sqlite3_stmt* st = NULL;
    CHECK_EQ_I64(
        sqlite3_prepare_v2(db, "UPDATE event_chunk SET data=?2 WHERE id=?1", -1, &st, NULL),
        SQLITE_OK);
    sqlite3_bind_int64(st, 1, id);
    sqlite3_bind_blob(st, 2, data, len, SQLITE_TRANSIENT);
    CHECK_EQ_I64(sqlite3_step(st), SQLITE_DONE);
    sqlite3_finalize(st);
    sqlite3_close(db);
}

// Profiles at random moments and ranges, and the --at and --range reports from the checkpoints
// (checkpoints every 1-20 events) against the replay's: when they are computed, when read, when one
// is damaged, and when a capture has aggregates stored without checkpoints (an older memreport's).
static void test_checkpoints(const char* path, unsigned seed) {
    enum { NQ = 6 };
    mr_query qs[NQ][4];
    mr_profile truth[NQ][4], got[NQ][4];
    size_t nq[NQ];
    int64_t at = 0; // within the run, for the reports
    char *replayed[NAT] = {0}, *read[NAT] = {0};
    for (size_t i = 0; i < NQ; i++) {
        nq[i] = 1 + rnd(4);
        random_moments(qs[i], &nq[i]);
    }
    mr_checkpoints_every(1 + rnd(20));
    drop_tables(path, "DROP TABLE IF EXISTS aggregate; DROP TABLE IF EXISTS checkpoint;");
    mr_aggregates_enable(false);
    mt_capture* cap = open_capture(path);
    for (size_t i = 0; cap && i < NQ; i++)
        build_moments(cap, qs[i], nq[i], truth[i]);
    if (cap && truth[0][0].last_ts > 0)
        at = (int64_t)rnd((uint64_t)truth[0][0].last_ts + 1);
    mt_capture_close(cap);
    run_at_reports(path, at, replayed);
    mr_aggregates_enable(true);
    for (int pass = 0; pass < 4; pass++) {
        if (pass == 2) // an older memreport's: aggregates, no checkpoints (stored again)
            drop_tables(path, "DROP TABLE checkpoint;");
        if (pass == 3)
            damage_checkpoints(path);
        cap = open_capture(path);
        // The model prints nothing; what it found damaged is a note in err.
        int saved = stderr_away();
        for (size_t i = 0; cap && i < NQ; i++) {
            build_moments(cap, qs[i], nq[i], got[i]);
            CHECK(!*note ||
                  (pass == 3 && !strncmp(note, CHECKPOINTS_DAMAGED, strlen(CHECKPOINTS_DAMAGED))));
            for (size_t k = 0; k < nq[i]; k++) {
                same_profile(&got[i][k], &truth[i][k]);
                mr_profile_free(&got[i][k]);
            }
        }
        char* said = stderr_back(saved);
        CHECK(said && !*said);
        if (said && *said)
            fprintf(stderr, "seed %u pass %d: the model printed '%s'\n", seed, pass, said);
        free(said);
        uint64_t fp = 0;
        CHECK(cap && !mt_capture_aggregate_fingerprint(cap, MT_HEAP_LIBC, &fp) &&
              mr_checkpoints_present(cap, MT_HEAP_LIBC, fp));
        mt_capture_close(cap);
        saved = stderr_away();
        run_at_reports(path, at, read);
        said = stderr_back(saved);
        CHECK(said && damage_said_well(said, path, pass == 3));
        if (said && !damage_said_well(said, path, pass == 3))
            fprintf(stderr, "seed %u pass %d: the reports said '%s'\n", seed, pass, said);
        free(said);
        for (size_t i = 0; i < NAT; i++) {
            if (!read[i] || !replayed[i] || strcmp(read[i], replayed[i])) {
                CHECK(false);
                fprintf(stderr, "seed %u pass %d: %s --at %lldns differs from the replay's\n", seed,
                        pass, at_reports[i].args[0], (long long)at);
            }
            free(read[i]);
        }
    }
    for (size_t i = 0; i < NQ; i++)
        for (size_t k = 0; k < nq[i]; k++)
            mr_profile_free(&truth[i][k]);
    for (size_t i = 0; i < NAT; i++)
        free(replayed[i]);
    mr_checkpoints_every(0);
}

// Flips a bit in the data of the first chunk whose events all lie in (after, upto] and not
// in (skip_from, skip_to]: its previous bytes into *saved. Returns the chunk's id, 0 when
// none.
static int64_t damage_chunk(const char* path, uint64_t after, uint64_t upto, uint64_t skip_from,
                            uint64_t skip_to, void** saved, int* len) {
    sqlite3* db = open_db(path);
    sqlite3_stmt* st = NULL;
    int64_t id = 0;
    CHECK_EQ_I64(sqlite3_prepare_v2(db,
                                    "SELECT id, data FROM event_chunk WHERE seq_first>?1 AND"
                                    " seq_last<=?2 AND (seq_last<=?3 OR seq_first>?4)"
                                    " ORDER BY id LIMIT 1",
                                    -1, &st, NULL),
                 SQLITE_OK);
    sqlite3_bind_int64(st, 1, (int64_t)after);
    sqlite3_bind_int64(st, 2, (int64_t)upto);
    sqlite3_bind_int64(st, 3, (int64_t)skip_from);
    sqlite3_bind_int64(st, 4, (int64_t)skip_to);
    if (st && sqlite3_step(st) == SQLITE_ROW) {
        id = sqlite3_column_int64(st, 0);
        *len = sqlite3_column_bytes(st, 1);
        *saved = malloc(*len ? (size_t)*len : 1);
        memcpy(*saved, sqlite3_column_blob(st, 1), (size_t)*len);
    }
    sqlite3_finalize(st);
    sqlite3_close(db);
    if (id) {
        uint8_t* bad = malloc((size_t)*len);
        memcpy(bad, *saved, (size_t)*len);
        bad[*len / 2] ^= 0x10;
        put_chunk(path, id, bad, *len);
        free(bad);
    }
    return id;
}

// A range spanning several checkpoints: its report takes the events between the first and
// the last checkpoint inside it from them, and is the replay's all the same. One thread's
// events, so that which chunks a replay reads is known: a chunk damaged between them (away
// from the events the replay reads ahead, and from the segment of their peak, which is
// replayed) is never read.
static void test_range_inside(unsigned seed) {
    enum { AHEAD = 24 }; // the replay's lookahead (16 events) and a chunk (3)
    char path[512];
    snprintf(path, sizeof path, "%s/long%u.db", test_tmpdir(), seed);
    random_capture(path, seed, true);
    mr_checkpoints_every(2 + rnd(6));
    mr_query q = MR_QUERY_INIT(MT_HEAP_LIBC);
    mr_profile truth, got;
    mr_aggregates_enable(false);
    mt_capture* cap = open_capture(path);
    if (!cap)
        return;
    profile(cap, MR_AT_END, &truth);
    q.from = truth.first_ts + (truth.last_ts - truth.first_ts) / 10;
    q.to = truth.last_ts - (truth.last_ts - truth.first_ts) / 10;
    mr_profile_free(&truth);
    build_moments(cap, &q, 1, &truth);
    mt_capture_close(cap);
    mr_aggregates_enable(true);
    cap = open_capture(path);
    build_moments(cap, &q, 1, &got); // stores the checkpoints
    same_profile(&got, &truth);
    mr_profile_free(&got);
    mr_aggregates a;
    mr_replay r;
    mr_range_span span = {0};
    char err[256] = "";
    uint64_t high_from = 0;
    uint8_t* data = NULL;
    size_t n;
    CHECK_EQ_I64(mr_checkpoints_range(cap, &q, &a, &r, &span, err, sizeof err), 0);
    CHECK(span.inside_to > span.inside_from + 2 * AHEAD);
    CHECK_EQ_I64(mt_capture_checkpoint_before(cap, MT_HEAP_LIBC, MR_CHECKPOINTS_FORMAT,
                                              span.fingerprint, span.high_seq - 1, &high_from,
                                              &data, &n),
                 1);
    free(data);
    mr_aggregates_free(&a);
    mr_replay_free(&r);
    mt_capture_close(cap);
    void* saved = NULL;
    int len = 0;
    int64_t id = damage_chunk(path, span.inside_from + AHEAD, span.inside_to, high_from,
                              span.high_seq + AHEAD, &saved, &len);
    CHECK(id != 0);
    cap = open_capture(path);
    build_moments(cap, &q, 1, &got);
    same_profile(&got, &truth);
    mr_profile_free(&got);
    mr_aggregates_enable(false); // and the damage is one a replay finds
    CHECK(mr_profile_build(cap, &q, &got, err, sizeof err) < 0);
    mr_aggregates_enable(true);
    mt_capture_close(cap);
    free(saved);
    mr_profile_free(&truth);
    mr_checkpoints_every(0);
}

// A checkpoint holding one block in two of its runs (forged: its checksum and totals hold)
// is damaged, not read as one block counted twice.
static void test_block_twice(void) {
    mr_replay r, back;
    CHECK_EQ_I64(mr_replay_init(&r, NULL, MT_HEAP_LIBC), 0);
    CHECK_EQ_I64(mr_replay_init(&back, NULL, MT_HEAP_LIBC), 0);
    mr_block b = {.addr = 0x1000, .size = 8, .callsite = 2, .tid = 1};
    CHECK_EQ_I64(mr_heapmap_put(&r.live, &b, NULL, NULL), 0);
    size_t home = 0;
    while (home < MR_HEAPMAP_PARTS && !r.live.parts[home].count)
        home++;
    mr_heapmap_part* other = &r.live.parts[(home + 1) % MR_HEAPMAP_PARTS];
    CHECK(home < MR_HEAPMAP_PARTS && other->slots && !other->slots[0].addr);
    other->slots[0] = (mr_heapmap_slot){.addr = b.addr, .payload = b.id, .size = (uint32_t)b.size};
    // past the table's own hashing
    other->count++;
    r.live.count++;
    r.events = r.allocations = r.peak_seq = r.last_seq = 2;
    r.bytes_allocated = r.live_bytes = r.peak_bytes = 16;
    mr_block* scratch = NULL;
    size_t cap = 0, len = 0;
    mr_varbuf buf = {0};
    uint8_t* data = mr_checkpoints_encode(&r, &scratch, &cap, &buf, &len);
    char why[128] = "";
    CHECK(data != NULL);
    CHECK_EQ_I64(data ? mr_checkpoints_load(data, len, 2, &back, why, sizeof why) : 0, -EPROTO);
    CHECK(strstr(why, "twice") != NULL);
    free(data);
    free(scratch);
    mr_replay_free(&r);
    mr_replay_free(&back);
}

// A checkpoint's bytes read back are its blocks, each once: 50,000 blocks at random
// addresses (every part's run sorted, many runs of the sort merged), encoded into a buffer
// that then takes a smaller state.
static void test_encode_roundtrip(void) {
    mr_replay r, back;
    CHECK_EQ_I64(mr_replay_init(&r, NULL, MT_HEAP_LIBC), 0);
    uint64_t x = 0x9e3779b97f4a7c15ull;
    enum { N = 50000 };
    for (uint32_t i = 0; i < N; i++) {
        test_rng(&x);
        mr_block b = {.addr = (x >> 8) | 1, .size = x % 4096, .callsite = i % 97, .tid = i % 5};
        bool had = false;
        CHECK_EQ_I64(mr_heapmap_put(&r.live, &b, NULL, &had), 0);
        if (!had)
            r.live_bytes += b.size;
        else
            CHECK(!"a random address twice");
    }
    r.events = r.allocations = r.peak_seq = r.last_seq = N;
    r.bytes_allocated = r.peak_bytes = r.live_bytes;
    mr_block* scratch = NULL;
    size_t cap = 0, len = 0;
    mr_varbuf buf = {0};
    for (int round = 0; round < 2; round++) {
        uint8_t* data = mr_checkpoints_encode(&r, &scratch, &cap, &buf, &len);
        char why[128] = "";
        CHECK(data != NULL);
        CHECK_EQ_I64(mr_replay_init(&back, NULL, MT_HEAP_LIBC), 0);
        CHECK_EQ_I64(data ? mr_checkpoints_load(data, len, r.last_seq, &back, why, sizeof why) : 1,
                     0);
        CHECK_EQ_I64(back.live.count, r.live.count);
        size_t bad = 0;
        mr_block b, g;
        for (size_t i = 0; mr_heapmap_next(&r.live, &i, &b);)
            bad += !mr_heapmap_get(&back.live, b.addr, &g) || g.size != b.size ||
                   g.callsite != b.callsite || g.tid != b.tid;
        CHECK_EQ_I64(bad, 0);
        mr_replay_free(&back);
        // Fewer blocks the second time: the bytes before are not read as theirs.
        for (size_t i = 0, k = 0; mr_heapmap_next(&r.live, &i, &b); k++)
            if (k % 3 == 0 && mr_heapmap_take(&r.live, b.addr, NULL))
                r.live_bytes -= b.size;
    }
    free(buf.p);
    free(scratch);
    mr_replay_free(&r);
}

// Flips a bit in the middle of the stored derived row `key` of the libc heap.
static void damage_derived(mt_capture* cap, int64_t key, uint8_t bit) {
    int64_t format;
    uint64_t fp;
    uint8_t* data = NULL;
    size_t len;
    if (mt_capture_derived_read(cap, MT_HEAP_LIBC, key, &format, &fp, &data, &len) == 1) {
        data[len / 2] ^= bit;
        CHECK_EQ_I64(mt_capture_derived_store(cap, MT_HEAP_LIBC, key, format, fp, data, len), 0);
    }
    free(data);
}

// Whether the derived row `key` of the libc heap is stored.
static bool derived_stored(mt_capture* cap, int64_t key) {
    int64_t format;
    uint64_t fp;
    uint8_t* data = NULL;
    size_t len;
    bool stored = mt_capture_derived_read(cap, MT_HEAP_LIBC, key, &format, &fp, &data, &len) == 1;
    free(data);
    return stored;
}

// A range's leaks from the stored blocks live at the end (end_blocks.h) against the
// replay's: computed and stored, read, then damaged (said, read anew and replaced), read.
static void test_end_blocks(const char* path) {
    enum { NQ = 5 };
    mr_query qs[NQ];
    mr_profile truth[NQ], got;
    drop_tables(path, "DROP TABLE IF EXISTS aggregate; DROP TABLE IF EXISTS checkpoint;");
    mr_aggregates_enable(false);
    mt_capture* cap = open_capture(path);
    if (!cap)
        return;
    for (size_t i = 0; i < NQ; i++) {
        qs[i] = (mr_query)MR_QUERY_INIT(MT_HEAP_LIBC);
        qs[i].moment = MR_AT_END;
        qs[i].range_blocks = true;
        int64_t a = random_time(), b = random_time();
        qs[i].from = i == 0 ? INT64_MIN : a < b ? a : b;
        qs[i].to = i == 1 ? INT64_MAX : a < b ? b : a;
        build_moments(cap, &qs[i], 1, &truth[i]);
    }
    mt_capture_close(cap);
    mr_aggregates_enable(true);
    for (int pass = 0; pass < 4; pass++) {
        cap = open_capture(path);
        if (cap && pass == 2) // a bit of the stored blocks flipped
            damage_derived(cap, mr_end_blocks_key(), 0x40);
        for (size_t i = 0; cap && i < NQ; i++) {
            build_moments(cap, &qs[i], 1, &got);
            if (pass == 2 && i == 0)
                CHECK(!strncmp(note, "the stored blocks live at the end are damaged (",
                               strlen("the stored blocks live at the end are damaged (")));
            else
                CHECK_EQ_STR(note, "");
            same_profile(&got, &truth[i]);
            mr_profile_free(&got);
            mr_query ends = qs[i]; // as leaks and top --metric leaked ask
            ends.ends_only = true;
            build_moments(cap, &ends, 1, &got);
            same_ends(&got, &truth[i]);
            mr_profile_free(&got);
        }
        // Stored from the first pass on (the damaged ones replaced at once).
        CHECK(derived_stored(cap, mr_end_blocks_key()));
        mt_capture_close(cap);
    }
    for (size_t i = 0; i < NQ; i++)
        mr_profile_free(&truth[i]);
}

static void same_kinds(const mr_leak_kinds* a, const mr_leak_kinds* b) {
    size_t cells = ((size_t)a->ncallsites + 1) * MT_LEAK_COUNT_;
    CHECK_EQ_I64(a->scanned, b->scanned);
    CHECK_EQ_I64(a->ncallsites, b->ncallsites);
    CHECK(!a->scanned || !memcmp(a->bytes, b->bytes, cells * sizeof *a->bytes));
    CHECK(!a->scanned || !memcmp(a->blocks, b->blocks, cells * sizeof *a->blocks));
    CHECK(!memcmp(a->total_bytes, b->total_bytes, sizeof a->total_bytes));
    CHECK(!memcmp(a->total_blocks, b->total_blocks, sizeof a->total_blocks));
}

// Verdicts as a scan gives them (the fixture's fall on any seq): one for each block live at
// the end, the kinds in turn.
static void live_verdicts(const char* path) {
    enum { MAXLIVE = 4096 };
    static struct { uint64_t addr, seq; } live[MAXLIVE];
    size_t n = 0;
    mt_capture* cap = open_capture(path);
    mt_event_iter* it = NULL;
    if (!cap || mt_capture_iter_open(cap, MT_HEAP_LIBC, &it)) {
        CHECK(false);
        mt_capture_close(cap);
        return;
    }
    mt_event ev;
    while (mt_capture_iter_next(it, &ev) == 1) {
        size_t i = 0;
        while (i < n && live[i].addr != ev.addr)
            i++;
        if (mt_kind_is_alloc(ev.kind) && i < MAXLIVE) {
            live[i].addr = ev.addr;
            live[i].seq = ev.seq;
            n += i == n;
        } else if (mt_kind_is_free(ev.kind) && i < n) {
            live[i] = live[--n];
        }
    }
    mt_capture_iter_close(it);
    mt_capture_close(cap);
    sqlite3* db = open_db(path);
    CHECK_EQ_I64(sqlite3_exec(db, "DELETE FROM leak", NULL, NULL, NULL), SQLITE_OK);
    for (size_t i = 0; i < n; i++) {
        char sql[128];
        snprintf(sql, sizeof sql, "INSERT INTO leak(seq, kind) VALUES(%llu, %zu)",
                 (unsigned long long)live[i].seq, 1 + i % (MT_LEAK_COUNT_ - 1));
        CHECK_EQ_I64(sqlite3_exec(db, sql, NULL, NULL, NULL), SQLITE_OK);
    }
    sqlite3_close(db);
}

// The leak kinds of the whole run (stored once counted) and of ranges (from the stored
// blocks live at the end) against every event's: computed and stored, read, damaged
// (said, counted anew and replaced), read.
static void test_stored_kinds(const char* path) {
    enum { NQ = 4 };
    int64_t from[NQ] = {INT64_MIN}, to[NQ] = {INT64_MAX};
    mr_leak_kinds truth[NQ], got;
    char err[256];
    live_verdicts(path);
    drop_tables(path, "DROP TABLE IF EXISTS derived;");
    mr_aggregates_enable(false);
    mt_capture* cap = open_capture(path);
    if (!cap)
        return;
    for (size_t i = 0; i < NQ; i++) {
        int64_t a = random_time(), b = random_time();
        if (i) {
            from[i] = i == 1 ? INT64_MIN : a < b ? a : b;
            to[i] = i == 2 ? INT64_MAX : a < b ? b : a;
        }
        CHECK_EQ_I64(mr_leak_kinds_load_range(cap, MT_HEAP_LIBC, NCALLSITES, from[i], to[i],
                                              &truth[i], err, sizeof err),
                     0);
    }
    mt_capture_close(cap);
    mr_aggregates_enable(true);
    for (int pass = 0; pass < 4; pass++) {
        cap = open_capture(path);
        if (cap && pass == 2) { // a bit of the stored sums flipped, and of the end blocks
            damage_derived(cap, mr_leak_kinds_key(), 0x10);
            damage_derived(cap, mr_end_blocks_key(), 0x40);
        }
        for (size_t i = 0; cap && i < NQ; i++) {
            CHECK_EQ_I64(mr_leak_kinds_load_range(cap, MT_HEAP_LIBC, NCALLSITES, from[i], to[i],
                                                  &got, err, sizeof err),
                         0);
            if (pass == 2 && i == 0)
                CHECK(!strncmp(err, "the stored leak kinds are damaged (",
                               strlen("the stored leak kinds are damaged (")));
            else if (pass == 2 && i == 1) // the first range: the end blocks read anew
                CHECK(!strncmp(err, "the stored blocks live at the end are damaged (",
                               strlen("the stored blocks live at the end are damaged (")));
            else
                CHECK_EQ_STR(err, "");
            same_kinds(&got, &truth[i]);
            mr_leak_kinds_free(&got);
        }
        // Stored from the first pass on (the damaged ones replaced at once).
        CHECK(derived_stored(cap, mr_leak_kinds_key()));
        mt_capture_close(cap);
    }
    for (size_t i = 0; i < NQ; i++)
        mr_leak_kinds_free(&truth[i]);
}

// ---- a pass over the events in segments replayed at once (segments.h)

// What a replay's callback saw of one event.
typedef struct seen {
    uint64_t seq, events, live_bytes, peak_bytes, unmatched_frees;
    mr_block freed; // addr 0: none
} seen;

typedef struct seen_log {
    seen* at;
    size_t n, cap;
} seen_log;

static int log_event(mr_replay* r, const mt_event* ev, const mr_block* freed, void* ud) {
    seen_log* l = ud;
    if (l->n == l->cap) {
        l->cap = l->cap ? 2 * l->cap : 64;
        l->at = realloc(l->at, l->cap * sizeof *l->at);
    }
    seen s = {.seq = ev->seq,
              .events = r->events,
              .live_bytes = r->live_bytes,
              .peak_bytes = r->peak_bytes,
              .unmatched_frees = r->unmatched_frees};
    if (freed)
        s.freed = *freed;
    l->at[l->n++] = s;
    return 0;
}

// Every callback of the segments, in order, against those of one replay (damaged: the
// checkpoints may be, and the segments then refuse).
static void same_callbacks(mt_capture* cap, unsigned seed, bool damaged) {
    mr_replay r;
    seen_log whole = {0};
    CHECK_EQ_I64(mr_replay_init(&r, cap, MT_HEAP_LIBC), 0);
    CHECK_EQ_I64(mr_replay_run(&r, UINT64_MAX, log_event, &whole), 0);
    mr_replay_free(&r);
    mr_segments s;
    char err[256] = "";
    CHECK_EQ_I64(mr_segments_plan(cap, MT_HEAP_LIBC, NULL, &s, err, sizeof err), 0);
    seen_log* logs = calloc(s.n, sizeof *logs);
    void** uds = calloc(s.n, sizeof *uds);
    for (size_t i = 0; i < s.n; i++)
        uds[i] = &logs[i];
    mr_segments_job job = {.fn = log_event, .uds = uds};
    int rc = mr_segments_run(&s, &job, err, sizeof err);
    CHECK(rc == 0 ||
          (rc == 1 && damaged && !strncmp(err, CHECKPOINTS_DAMAGED, strlen(CHECKPOINTS_DAMAGED))));
    size_t at = rc ? whole.n : 0;
    bool same = true;
    for (size_t i = 0; !rc && i < s.n; i++)
        for (size_t k = 0; k < logs[i].n; k++, at++)
            same &= at < whole.n && !memcmp(&logs[i].at[k], &whole.at[at], sizeof(seen));
    CHECK(same && at == whole.n);
    if (!same || at != whole.n)
        fprintf(stderr, "seed %u: the segments' callbacks differ from the replay's\n", seed);
    for (size_t i = 0; i < s.n; i++)
        free(logs[i].at);
    free(logs);
    free(uds);
    free(whole.at);
    mr_segments_free(&s);
}

static const report full_passes[] = {
    {mr_cmd_export, {"export", "--format", "massif"}},
    {mr_cmd_export, {"export", "--format", "massif", "--thread", "2"}},
    {mr_cmd_export, {"export", "--format", "massif", "--leaks"}},
};
#define NFULL (sizeof full_passes / sizeof *full_passes)

static void run_full_passes(const char* cap, char** texts) {
    run_list(full_passes, NFULL, cap, texts);
}

// The reports that read every event, from segments replayed at once (checkpoints every 1-20
// events, on 1-4 threads) against one replay's: when the checkpoints are computed, read,
// missing (aggregates stored without them: computed again) and damaged (one replay then).
static void test_segments(const char* path, unsigned seed) {
    char *replayed[NFULL] = {0}, *got[NFULL] = {0};
    mr_checkpoints_every(1 + rnd(20));
    mr_segments_threads(1 + rnd(4));
    drop_tables(path, "DROP TABLE IF EXISTS aggregate; DROP TABLE IF EXISTS checkpoint;");
    mr_aggregates_enable(false);
    run_full_passes(path, replayed);
    mr_aggregates_enable(true);
    for (int pass = 0; pass < 4; pass++) {
        if (pass == 2)
            drop_tables(path, "DROP TABLE checkpoint;");
        if (pass == 3)
            damage_checkpoints(path);
        run_full_passes(path, got);
        for (size_t i = 0; i < NFULL; i++) {
            if (!got[i] || !replayed[i] || strcmp(got[i], replayed[i])) {
                CHECK(false);
                fprintf(stderr, "seed %u pass %d: %s %s %s differs from the replay's\n", seed, pass,
                        full_passes[i].args[0], full_passes[i].args[2],
                        full_passes[i].args[3] ? full_passes[i].args[3] : "");
            }
            free(got[i]);
        }
        mt_capture* cap = open_capture(path);
        mr_segments s;
        char err[256] = "";
        int planned = cap ? mr_segments_plan(cap, MT_HEAP_LIBC, NULL, &s, err, sizeof err) : -1;
        CHECK_EQ_I64(planned, 0); // 40 events or more: two segments at least
        if (planned == 0) {
            mr_segments_free(&s);
            same_callbacks(cap, seed, pass == 3);
        }
        mt_capture_close(cap);
    }
    for (size_t i = 0; i < NFULL; i++)
        free(replayed[i]);
    mr_checkpoints_every(0);
    mr_segments_threads(0);
}

static void test_seed(unsigned seed) {
    char path[512];
    snprintf(path, sizeof path, "%s/r%u.db", test_tmpdir(), seed);
    random_capture(path, seed, false);
    if (seed % 2 == 0) // the leaks reports split their blocks by kind
        fx_leak_verdicts(path);
    char *replayed[NREPORTS] = {0}, *first[NREPORTS] = {0}, *stored[NREPORTS] = {0};

    // The truth: a replay, with no aggregates read or stored.
    mr_aggregates_enable(false);
    mr_aggregates truth;
    mr_profile peak, end;
    mt_capture* cap = open_capture(path);
    if (!cap)
        return;
    get(cap, &truth);
    profile(cap, MR_AT_PEAK, &peak);
    profile(cap, MR_AT_END, &end);
    mt_capture_close(cap);
    run_reports(path, replayed);
    mr_aggregates_enable(true);

    // The first reports store them (and report from the replay), the next read them.
    run_reports(path, first);
    run_reports(path, stored);
    same_reports(replayed, first, seed, "when it stores the aggregates");
    same_reports(replayed, stored, seed, "read from the stored aggregates");
    cap = open_capture(path);
    if (cap) {
        int64_t format;
        uint64_t fp;
        uint8_t* data;
        size_t len;
        CHECK_EQ_I64(mt_capture_aggregate_read(cap, MT_HEAP_LIBC, &format, &fp, &data, &len), 1);
        free(data);
        mr_aggregates a;
        mr_profile p;
        char* said = stderr_of(get, cap, &a);
        CHECK(said && !*said); // stored ones, used as they are
        free(said);
        same_aggregates(&a, &truth);
        mr_aggregates_free(&a);
        profile(cap, MR_AT_PEAK, &p);
        same_profile(&p, &peak);
        mr_profile_free(&p);
        profile(cap, MR_AT_END, &p);
        same_profile(&p, &end);
        mr_profile_free(&p);
        mt_capture_close(cap);
    }
    if (seed % 4 == 0)
        test_forged(path, &truth);
    test_checkpoints(path, seed);
    test_segments(path, seed);
    test_end_blocks(path);
    if (seed % 2 == 0)
        test_stored_kinds(path);
    test_range_inside(seed);
    mr_aggregates_free(&truth);
    mr_profile_free(&peak);
    mr_profile_free(&end);
    free_texts(replayed);
    free_texts(first);
    free_texts(stored);
}

int main(void) {
    mr_replay_pipeline_after(0); // every replay pipelined, the checkpoints' writer beside it
    test_block_twice();
    test_encode_roundtrip();
    for (unsigned seed = 0; seed < 12; seed++)
        test_seed(seed);
    CHECK_DONE();
}
