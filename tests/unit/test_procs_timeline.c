// SPDX-License-Identifier: MIT
// The processes of a tree on one wall-clock axis (reporter/model/procs_timeline.h): the
// total's peak is the exact highest sum of the processes' live bytes, on captures with
// known truth (tests/reports/fixture.c: ts = seq * 1000 ns, placed on the common axis by
// meta start_realtime_ns) and on random ones against a plain merge of every event.
#include "procs_timeline.h"
#include "profile.h"
#include "replay.h"

#include "../check.h"
#include "../reports/fixture.h"
#include "../rng.h"
#include "../tmpdir.h"
#include "memtrace/schema.h"

#include <stdio.h>
#include <stdlib.h>

#define START 1700000000000000000ll // the first process's wall clock start (ns)

static void meta(fx* f, int64_t offset, int pid) {
    char sql[256];
    snprintf(sql, sizeof sql,
             "INSERT INTO meta VALUES('start_realtime_ns','%lld'),('pid','%d'),"
             "('exe','/usr/bin/p%d');",
             (long long)(START + offset), pid, pid);
    fx_sql(f, sql);
}

static void open_set(mr_capture_set* s, char** paths, size_t n) {
    char bad[512], err[256];
    int e = mr_capture_set_open(s, paths, n, bad, sizeof bad, err, sizeof err);
    if (e)
        fprintf(stderr, "%s: %s\n", bad, err);
    CHECK_EQ_I64(e, 0);
}

// A at its 2 us holds 1000 bytes for a moment, then 600 from 3 us until it frees all at
// 4 us; B, starting 2.5 us later, holds 1000 from its 1 us (3.5 us on the common axis) to
// its 2 us. The sum's peak is 1600 at 3.5 us; A's drawn series keeps only its first, lowest,
// highest and last points per bucket, so a sum of held points would read 2000 there.
static void test_known(void) {
    char a[512], b[512];
    snprintf(a, sizeof a, "%s/pt_a.db", test_tmpdir());
    snprintf(b, sizeof b, "%s/pt_b.db", test_tmpdir());
    fx f;
    fx_open(&f, a);
    meta(&f, 0, 10);
    fx_alloc(&f, 100, 0x1000, 600, 1); // 1 us: 600
    fx_alloc(&f, 100, 0x2000, 400, 1); // 2 us: 1000
    fx_free(&f, 100, 0x2000);          // 3 us: 600
    fx_free(&f, 100, 0x1000);          // 4 us: 0
    fx_alloc(&f, 100, 0x3000, 1, 1);   // 5 us: 1
    fx_finish(&f, "complete");
    fx_open(&f, b);
    meta(&f, 2500, 11);
    fx_alloc(&f, 100, 0x1000, 1000, 1); // 1 us (3.5 us): 1000
    fx_free(&f, 100, 0x1000);           // 2 us (4.5 us): 0
    fx_finish(&f, "complete");
    char* paths[] = {a, b};
    mr_capture_set s;
    open_set(&s, paths, 2);
    for (int64_t buckets = 1; buckets <= 64; buckets *= 4) {
        mr_procs_timeline t;
        mr_procs_error err;
        CHECK_EQ_I64(mr_procs_timeline_build(&s, buckets, &t, &err), 0);
        CHECK_EQ_I64(t.total_peak, 1600);
        CHECK_EQ_I64(t.total_peak_ts, 3500);
        CHECK_EQ_I64(t.procs[0].t.peak, 1000);
        CHECK_EQ_I64(t.procs[1].t.peak, 1000);
        mr_procs_timeline_free(&t);
    }
    mr_capture_set_free(&s);
}

// Process i's live bytes at the moment m says to ask it about, as a report reads it.
static uint64_t profile_live(const mr_capture_set* s, const mr_procs_moment* m, size_t i) {
    if (m->at[i] < 0)
        return 0;
    mr_query q = MR_QUERY_INIT(MT_HEAP_LIBC);
    q.moment = MR_AT_TIME;
    q.at = m->at[i];
    q.before_seq = m->before_seq[i];
    mr_profile p;
    char err[256];
    CHECK_EQ_I64(mr_profile_build(s->procs[i].cap, &q, &p, err, sizeof err), 0);
    uint64_t live = p.live_bytes;
    mr_profile_free(&p);
    return live;
}

// The moment's shares sum to its peak, and each is what a report of that process reads.
static void check_shares(const mr_capture_set* s, const mr_procs_moment* m) {
    uint64_t sum = 0;
    for (size_t i = 0; i < s->n; i++) {
        sum += m->live[i];
        CHECK_EQ_I64(profile_live(s, m, i), m->live[i]);
    }
    CHECK_EQ_I64(sum, m->peak);
}

// The peak between two events of one time stamp: A and B start together; at 2 us A
// allocates 400 (A 1000 + B 300: 1300, the peak), frees them, and B frees its 300. Each
// process's state at the end of 2 us sums to 600; at the peak, in the sum's order (tree
// order, then seq), A holds 1000 and B 300.
static void test_shares_within_a_stamp(void) {
    char a[512], b[512];
    snprintf(a, sizeof a, "%s/pt_sa.db", test_tmpdir());
    snprintf(b, sizeof b, "%s/pt_sb.db", test_tmpdir());
    fx f;
    fx_open(&f, a);
    meta(&f, 0, 30);
    fx_alloc(&f, 100, 0x1000, 600, 1); // 1 us: 600
    fx_alloc(&f, 100, 0x2000, 400, 1); // 2 us: 1000
    fx_free(&f, 100, 0x2000);          // 2 us: 600
    f.ev[f.n - 1].ts = 2000;
    fx_free(&f, 100, 0x1000); // 4 us: 0
    fx_finish(&f, "complete");
    fx_open(&f, b);
    meta(&f, 0, 31);
    fx_alloc(&f, 100, 0x1000, 300, 1); // 1 us: 300
    fx_free(&f, 100, 0x1000);          // 2 us: 0
    fx_alloc(&f, 100, 0x2000, 1, 1);   // 3 us: 1
    fx_finish(&f, "complete");
    char* paths[] = {a, b};
    mr_capture_set s;
    open_set(&s, paths, 2);
    mr_procs_moment m;
    mr_procs_error err;
    CHECK_EQ_I64(mr_procs_timeline_moment_find(&s, &m, &err), 0);
    CHECK_EQ_I64(m.peak, 1300);
    CHECK_EQ_I64(m.ts, 2000);
    CHECK_EQ_I64(m.live[0], 1000);
    CHECK_EQ_I64(m.live[1], 300);
    CHECK_EQ_I64(m.before_seq[0], 3); // A's free of its 400
    CHECK_EQ_I64(m.before_seq[1], 2); // B's free of its 300
    check_shares(&s, &m);
    mr_procs_timeline_moment_free(&m);
    mr_capture_set_free(&s);
}

static uint32_t next_random(uint64_t* state) {
    return (uint32_t)(test_lcg(state) >> 33);
}

// The truth by brute force: every event of every process on the common axis, merged.
typedef struct point {
    int64_t ts;
    uint32_t proc;
    uint64_t seq, live;
} point;

typedef struct points {
    point* v;
    size_t n;
    uint32_t proc;
    int64_t shift;
} points;

static int collect(mr_replay* r, const mt_event* ev, const mr_block* freed, void* ud) {
    (void)freed;
    points* p = ud;
    p->v[p->n++] = (point){ev->ts + p->shift, p->proc, ev->seq, r->live_bytes};
    return 0;
}

static int by_time(const void* a, const void* b) {
    const point *x = a, *y = b;
    if (x->ts != y->ts)
        return x->ts < y->ts ? -1 : 1;
    if (x->proc != y->proc)
        return x->proc < y->proc ? -1 : 1;
    return (x->seq > y->seq) - (x->seq < y->seq);
}

static uint64_t brute_peak(const mr_capture_set* s, const mr_procs_timeline* t, size_t nevents) {
    points p = {.v = calloc(nevents + s->n, sizeof *p.v)};
    for (size_t i = 0; i < s->n; i++) {
        mr_replay r;
        p.proc = (uint32_t)i;
        p.shift = t->procs[i].offset;
        CHECK_EQ_I64(mr_replay_init(&r, s->procs[i].cap, MT_HEAP_LIBC), 0);
        CHECK_EQ_I64(mr_replay_run(&r, UINT64_MAX, collect, &p), 0);
        mr_replay_free(&r);
        p.v[p.n++] = (point){t->procs[i].end + 1, (uint32_t)i, UINT64_MAX, 0};
    }
    qsort(p.v, p.n, sizeof *p.v, by_time);
    uint64_t cur[8] = {0}, sum = 0, best = 0;
    for (size_t k = 0; k < p.n; k++) {
        sum = sum - cur[p.v[k].proc] + p.v[k].live;
        cur[p.v[k].proc] = p.v[k].live;
        best = sum > best ? sum : best;
    }
    free(p.v);
    return best;
}

// Three processes of random allocations and frees at random offsets, some two to a time
// stamp, in 1 to 1000 buckets; the joint peak's shares.
static void test_random(void) {
    for (uint64_t seed = 1; seed <= 15; seed++) {
        uint64_t rnd = seed;
        char names[3][512];
        char* paths[3];
        size_t total = 0;
        for (int i = 0; i < 3; i++) {
            snprintf(names[i], sizeof names[i], "%s/pt_r%d.db", test_tmpdir(), i);
            paths[i] = names[i];
            fx f;
            fx_open(&f, names[i]);
            meta(&f, (int64_t)(next_random(&rnd) % 200) * 1000 + next_random(&rnd) % 3, 20 + i);
            uint64_t live[32], next_addr = 0x1000;
            size_t nlive = 0, nev = 20 + next_random(&rnd) % 200;
            for (size_t e = 0; e < nev; e++) {
                if (nlive && (nlive == 32 || next_random(&rnd) % 2)) {
                    size_t k = next_random(&rnd) % nlive;
                    fx_free(&f, 100, live[k]);
                    live[k] = live[--nlive];
                } else {
                    fx_alloc(&f, 100, live[nlive++] = next_addr += 0x100,
                             1 + next_random(&rnd) % 1000, 1);
                }
                if (f.n > 1 && next_random(&rnd) % 4 == 0) // one stamp for two events
                    f.ev[f.n - 1].ts = f.ev[f.n - 2].ts;
            }
            total += f.seq;
            fx_finish(&f, "complete");
        }
        mr_capture_set s;
        open_set(&s, paths, 3);
        for (int64_t buckets = 1; buckets <= 1000; buckets *= 7) {
            mr_procs_timeline t;
            mr_procs_error err;
            CHECK_EQ_I64(mr_procs_timeline_build(&s, buckets, &t, &err), 0);
            CHECK_EQ_I64(t.total_peak, brute_peak(&s, &t, total));
            mr_procs_timeline_free(&t);
        }
        mr_procs_moment m;
        mr_procs_error err;
        CHECK_EQ_I64(mr_procs_timeline_moment_find(&s, &m, &err), 0);
        check_shares(&s, &m);
        mr_procs_timeline_moment_free(&m);
        mr_capture_set_free(&s);
    }
}

int main(void) {
    test_known();
    test_shares_within_a_stamp();
    test_random();
    CHECK_DONE();
}
