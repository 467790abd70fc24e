// SPDX-License-Identifier: MIT
// scale_gen_capture OUT.db [EVENTS] [THREADS]: writes a synthetic capture of EVENTS heap
// events (default 100 million) straight through mt_capture_writer, for timing memreport at
// scale. Threads allocate and free with per-thread chunks whose seq ranges interleave (as the
// tracer's do), over a callsite tree of ~20000 stacks; the live set rises to about a million
// blocks mid-run, then drains, leaving some leaks, each with a leak scan's verdict.
// Deterministic (fixed PRNG seed).
#include "memtrace/capture.h"
#include "memtrace/codec.h"
#include "memtrace/schema.h"

#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHUNK 4096
#define NFUNCS 3000
#define NCALLSITES 20000
#define MAX_LIVE_PER_THREAD (1u << 20)

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static uint64_t rnd(void) {
    // xorshift64*: fast and good enough to shape a workload.
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return rng_state * 0x2545f4914f6cdd1dull;
}

static void die(const char* what, const char* msg) {
    fprintf(stderr, "scale_gen_capture: %s: %s\n", what, msg);
    exit(1);
}

static void exec_sql(sqlite3* db, const char* sql) {
    char* err = NULL;
    if (sqlite3_exec(db, sql, NULL, NULL, &err) != SQLITE_OK)
        die(sql, err ? err : "?");
}

// Frames 1..NFUNCS (a few non-relevant, like libc's), callsites as a random tree: each new
// callsite extends a random earlier one (depth up to ~30), so leaves share prefixes.
static void write_stacks(sqlite3* db, uint32_t* leaves, size_t nleaves) {
    exec_sql(db, "INSERT INTO mapping VALUES(1,'/usr/bin/scale-app',4096,268435456,0,'00',0,NULL)");
    sqlite3_stmt* st;
    sqlite3_prepare_v2(db, "INSERT INTO frame VALUES(?1,1,?2,?2,?3,?4,?5,NULL,?6)", -1, &st, NULL);
    for (int i = 1; i <= NFUNCS; i++) {
        char fn[64], file[64];
        snprintf(fn, sizeof fn, i <= 3 ? "libc_internal_%d" : "app::module%d::function_%d", i % 40,
                 i);
        snprintf(file, sizeof file, "src/module%d.cpp", i % 40);
        sqlite3_bind_int(st, 1, i);
        sqlite3_bind_int64(st, 2, 0x10000 + i * 64);
        sqlite3_bind_text(st, 3, fn, -1, SQLITE_TRANSIENT);
        sqlite3_bind_text(st, 4, file, -1, SQLITE_TRANSIENT);
        sqlite3_bind_int(st, 5, 10 + i % 500);
        sqlite3_bind_int(st, 6, i > 3);
        if (sqlite3_step(st) != SQLITE_DONE)
            die("frame", sqlite3_errmsg(db));
        sqlite3_reset(st);
    }
    sqlite3_finalize(st);
    uint32_t* depth = calloc(NCALLSITES + 1, sizeof *depth);
    sqlite3_prepare_v2(db, "INSERT INTO callsite VALUES(?1,?2,?3,?4)", -1, &st, NULL);
    for (uint32_t id = 1; id <= NCALLSITES; id++) {
        uint32_t parent = id <= 8 ? 0 : (uint32_t)(1 + rnd() % (id - 1));
        if (parent && depth[parent] >= 30)
            parent = (uint32_t)(1 + rnd() % 8);
        depth[id] = parent ? depth[parent] + 1 : 1;
        uint32_t frame = id <= 8 ? 1 + id % 3 : (uint32_t)(4 + rnd() % (NFUNCS - 3));
        sqlite3_bind_int(st, 1, (int)id);
        sqlite3_bind_int(st, 2, (int)parent);
        sqlite3_bind_int(st, 3, (int)frame);
        sqlite3_bind_int(st, 4, (int)depth[id]);
        if (sqlite3_step(st) != SQLITE_DONE)
            die("callsite", sqlite3_errmsg(db));
        sqlite3_reset(st);
    }
    sqlite3_finalize(st);
    // Allocation sites: the deeper half of the callsites.
    for (size_t i = 0; i < nleaves; i++)
        leaves[i] = (uint32_t)(NCALLSITES / 2 + 1 + rnd() % (NCALLSITES / 2));
    free(depth);
}

typedef struct live_block {
    uint64_t addr, seq;
} live_block;

typedef struct gen_thread {
    uint32_t tid;
    live_block* live;
    size_t nlive;
    uint64_t next_addr;
} gen_thread;

// A leak scan's verdicts, as the tracer writes them: one for each block live at the end,
// the kinds in turn, so that the reports of leak kinds are measured too.
static void write_leak_scan(sqlite3* db, const gen_thread* th, unsigned nthreads) {
    exec_sql(db, "BEGIN;" MEMTRACE_LEAK_TABLE_SQL);
    sqlite3_stmt* st = NULL;
    if (sqlite3_prepare_v2(db, "INSERT INTO leak(seq, kind) VALUES(?1, ?2)", -1, &st, NULL))
        die("leak", sqlite3_errmsg(db));
    for (unsigned t = 0; t < nthreads; t++)
        for (size_t i = 0; i < th[t].nlive; i++) {
            uint64_t seq = th[t].live[i].seq;
            sqlite3_bind_int64(st, 1, (int64_t)seq);
            sqlite3_bind_int64(st, 2, 1 + (int64_t)(seq % (MT_LEAK_COUNT_ - 1)));
            if (sqlite3_step(st) != SQLITE_DONE)
                die("leak", sqlite3_errmsg(db));
            sqlite3_reset(st);
        }
    sqlite3_finalize(st);
    exec_sql(db, "COMMIT");
}

int main(int argc, char** argv) {
    if (argc < 2) {
        fputs("usage: scale_gen_capture OUT.db [EVENTS] [THREADS]\n", stderr);
        return 2;
    }
    uint64_t total = argc > 2 ? strtoull(argv[2], NULL, 10) : 100000000ull;
    unsigned nthreads = argc > 3 ? (unsigned)atoi(argv[3]) : 8;
    if (nthreads < 1 || nthreads > 64)
        die("THREADS", "1..64");
    char err[256];
    mt_capture_writer* w;
    if (mt_capture_writer_open(argv[1], &w, err, sizeof err))
        die(argv[1], err);
    sqlite3* db = mt_capture_writer_db(w);
    mt_capture_writer_heap(w, MT_HEAP_LIBC, "libc", "native", "ns");
    exec_sql(db, "BEGIN");
    mt_capture_writer_meta_text(w, "exe", "/usr/bin/scale-app");
    mt_capture_writer_meta_text(w, "cmdline", "[\"scale-app\",\"--synthetic\"]");
    mt_capture_writer_meta_text(w, "symbolized", "1");
    uint32_t leaves[4096];
    write_stacks(db, leaves, 4096);
    gen_thread* th = calloc(nthreads, sizeof *th);
    for (unsigned t = 0; t < nthreads; t++) {
        th[t].tid = 1000 + t;
        th[t].live = malloc(MAX_LIVE_PER_THREAD * sizeof *th[t].live);
        th[t].next_addr = 0x100000000ull * (t + 1);
        char sql[96];
        snprintf(sql, sizeof sql, "INSERT INTO thread(tid, name) VALUES(%u, 'worker-%u')",
                 th[t].tid, t);
        exec_sql(db, sql);
    }
    exec_sql(db, "COMMIT");
    mt_event* ev = malloc(CHUNK * sizeof *ev);
    uint8_t* scratch = malloc(mt_codec_bound(CHUNK));
    uint64_t seq = 0, written = 0;
    // Live target per thread: rises to 1/nthreads of a million blocks at half the run, then
    // falls to 5% (the leaks).
    while (written < total) {
        if (mt_capture_writer_begin(w))
            die("begin", mt_capture_writer_error(w));
        for (unsigned t = 0; t < nthreads && written < total; t++) {
            gen_thread* g = &th[t];
            size_t n = total - written < CHUNK ? (size_t)(total - written) : CHUNK;
            double phase = (double)written / (double)total;
            double shape = phase < 0.5 ? phase * 2 : 1.0 - (phase - 0.5) * 1.9;
            size_t target = (size_t)(shape * 1000000.0 / nthreads) + 16;
            for (size_t i = 0; i < n; i++) {
                // Interleave the threads' seqs within each round, as concurrent threads do.
                uint64_t s = seq + t + (uint64_t)i * nthreads + 1;
                bool alloc = g->nlive == 0 || (g->nlive < MAX_LIVE_PER_THREAD &&
                                               (rnd() % 1000) < (g->nlive < target ? 600u : 400u));
                mt_event* e = &ev[i];
                memset(e, 0, sizeof *e);
                e->seq = s;
                e->ts = (int64_t)s * 25; // 40 M events/s
                e->tid = g->tid;
                e->heap = MT_HEAP_LIBC;
                if (alloc) {
                    uint64_t r = rnd();
                    e->kind = MT_KIND_MALLOC;
                    e->size = (uint64_t)8 << (r % 10);
                    e->size += (r >> 8) % e->size;
                    e->addr = g->next_addr += 16 + e->size;
                    e->callsite = leaves[(r >> 20) % 4096];
                    g->live[g->nlive++] = (live_block){e->addr, s};
                } else {
                    size_t k = (size_t)(rnd() % g->nlive);
                    e->kind = MT_KIND_FREE;
                    e->addr = g->live[k].addr;
                    g->live[k] = g->live[--g->nlive];
                }
            }
            if (mt_capture_writer_chunk(w, MT_HEAP_LIBC, ev, n, scratch))
                die("chunk", mt_capture_writer_error(w));
            written += n;
        }
        seq += (uint64_t)CHUNK * nthreads;
        if (mt_capture_writer_commit(w))
            die("commit", mt_capture_writer_error(w));
        if ((written / CHUNK) % 2048 == 0)
            fprintf(stderr, "\r%llu / %llu events", (unsigned long long)written,
                    (unsigned long long)total);
    }
    fputc('\n', stderr);
    write_leak_scan(db, th, nthreads);
    mt_capture_writer_meta_text(w, "leak_scan", "complete");
    mt_capture_writer_meta_int(w, "events_written", (int64_t)written);
    mt_capture_writer_meta_int(w, "duration_ns", (int64_t)(seq + 1) * 25);
    if (mt_capture_writer_finish(w, "complete"))
        die(argv[1], "cannot finish");
    for (unsigned t = 0; t < nthreads; t++) {
        free(th[t].live);
    }
    free(th);
    free(ev);
    free(scratch);
    return 0;
}
