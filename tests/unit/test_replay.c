// SPDX-License-Identifier: MIT
// Event replay on captures written with mt_capture_writer: live bytes, peak and when, counts,
// unmatched frees, realloc as free + alloc, cross-thread address reuse across chunks,
// partial replay (stop_seq), the per-event callback, a random stream against a model, and
// the pipelined run against the plain one.
#include "capture_sql.h"
#include "replay.h"

#include "../check.h"
#include "../rng.h"
#include "../tmpdir.h"
#include "memtrace/capture.h"
#include "memtrace/codec.h"
#include "memtrace/schema.h"

#include <errno.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int files;

static uint64_t rng = 0x9fb21c651e98df25ull;

// Writes events (in seq order) as a capture: each thread's events cut into chunks of at
// most `per_chunk`, threads written last-tid-first so file order is not seq order.
static void write_capture(const char* path, const mt_event* ev, size_t n, size_t per_chunk) {
    char err[256];
    mt_capture_writer* w;
    CHECK_EQ_I64(mt_capture_writer_open(path, &w, err, sizeof err), 0);
    CHECK_EQ_I64(mt_capture_writer_heap(w, MT_HEAP_LIBC, "libc", "libc", "ns"), 0);
    CHECK_EQ_I64(mt_capture_writer_heap(w, MT_HEAP_NPU, "npu", "npu", "step"), 0);
    CHECK_EQ_I64(mt_capture_writer_begin(w), 0);
    uint32_t tids[64];
    size_t ntids = 0;
    for (size_t i = 0; i < n; i++) {
        size_t t = 0;
        while (t < ntids && tids[t] != ev[i].tid)
            t++;
        if (t == ntids && ntids < 64)
            tids[ntids++] = ev[i].tid;
    }
    mt_event* buf = malloc((n ? n : 1) * sizeof *buf);
    uint8_t* scratch = malloc(mt_codec_bound(n ? n : 1));
    for (size_t t = ntids; t-- > 0;) {
        size_t m = 0;
        for (size_t i = 0; i < n; i++)
            if (ev[i].tid == tids[t])
                buf[m++] = ev[i];
        for (size_t off = 0; off < m; off += per_chunk) {
            size_t len = m - off < per_chunk ? m - off : per_chunk;
            CHECK_EQ_I64(mt_capture_writer_chunk(w, MT_HEAP_LIBC, buf + off, len, scratch), 0);
        }
    }
    // An NPU event with a colliding address: other heaps never leak into heap 1.
    mt_event npu = {.seq = 1, .ts = 1, .addr = 0x1000, .size = 1 << 30, .kind = MT_KIND_NPU_ALLOC};
    CHECK_EQ_I64(mt_capture_writer_chunk(w, MT_HEAP_NPU, &npu, 1, scratch), 0);
    CHECK_EQ_I64(mt_capture_writer_commit(w), 0);
    CHECK_EQ_I64(mt_capture_writer_finish(w, "complete"), 0);
    free(buf);
    free(scratch);
}

static mt_capture* open_events(const mt_event* ev, size_t n, size_t per_chunk) {
    char path[128], err[256];
    snprintf(path, sizeof path, "%s/c%d.db", test_tmpdir(), files++);
    write_capture(path, ev, n, per_chunk);
    mt_capture* cap = NULL;
    int rc = mt_capture_open(path, &cap, err, sizeof err);
    CHECK_EQ_I64(rc, 0);
    if (rc)
        fprintf(stderr, "%s: %s\n", path, err);
    return cap;
}

#define EV(s, k, a, sz, t)                                                                         \
    (mt_event) {                                                                                   \
        .seq = (s), .ts = (int64_t)(s)*10, .addr = (a), .size = (sz), .callsite = (uint32_t)(s),   \
        .tid = (t), .kind = MT_KIND_##k, .heap = MT_HEAP_LIBC                                      \
    }

static void test_basic(void) {
    const mt_event ev[] = {
        EV(1, MALLOC, 0xa0, 100, 1),     EV(2, MALLOC, 0xb0, 200, 1),
        EV(3, FREE, 0xa0, 0, 1),         EV(4, REALLOC_FREE, 0xb0, 0, 1),
        EV(5, REALLOC, 0xc0, 300, 1),    EV(6, CALLOC, 0xd0, 50, 1),
        EV(7, FREE, 0xe0, 0, 1), /* a block from before tracing */
        EV(8, FREE, 0xc0, 0, 1),         EV(9, POSIX_MEMALIGN, 0xf0, 64, 1),
        EV(10, FREE_SIZED, 0xf0, 64, 1),
    };
    size_t n = sizeof ev / sizeof *ev;
    // The same stream chunked three ways reads the same.
    for (size_t per = 1; per <= n; per += 4) {
        mt_capture* cap = open_events(ev, n, per);
        if (!cap)
            return;
        mr_replay r;
        CHECK_EQ_I64(mr_replay_init(&r, cap, MT_HEAP_LIBC), 0);
        CHECK_EQ_I64(mr_replay_run(&r, UINT64_MAX, NULL, NULL), 0);
        CHECK_EQ_I64(r.events, 10);
        CHECK_EQ_I64(r.allocations, 5);
        CHECK_EQ_I64(r.frees, 5);
        CHECK_EQ_I64(r.unmatched_frees, 1);
        CHECK_EQ_I64(r.bytes_allocated, 714);
        CHECK_EQ_I64(r.peak_bytes, 350);
        CHECK_EQ_I64(r.peak_seq, 6);
        CHECK_EQ_I64(r.peak_ts, 60);
        CHECK_EQ_I64(r.live_bytes, 50);
        CHECK_EQ_I64(r.live.count, 1);
        CHECK(mr_heapmap_get(&r.live, 0xd0, NULL));
        CHECK_EQ_I64(r.last_seq, 10);
        CHECK_EQ_I64(r.first_ts, 10);
        CHECK_EQ_I64(r.last_ts, 100);
        mr_replay_free(&r);
        mt_capture_close(cap);
    }
}

// A replay stopped at a seq has the state of that moment; the peak is the first event to
// reach the maximum, not a later tie.
static void test_stop_and_ties(void) {
    const mt_event ev[] = {
        EV(2, MALLOC, 0x10, 300, 1), EV(3, MALLOC, 0x20, 200, 2), EV(5, FREE, 0x10, 0, 2),
        EV(6, MALLOC, 0x30, 300, 1), EV(9, FREE, 0x20, 0, 1),     EV(11, FREE, 0x30, 0, 2),
    };
    mt_capture* cap = open_events(ev, 6, 2);
    if (!cap)
        return;
    mr_replay r;
    CHECK_EQ_I64(mr_replay_init(&r, cap, MT_HEAP_LIBC), 0);
    CHECK_EQ_I64(mr_replay_run(&r, 5, NULL, NULL), 0);
    CHECK_EQ_I64(r.events, 3);
    CHECK_EQ_I64(r.live_bytes, 200);
    CHECK_EQ_I64(r.peak_bytes, 500);
    CHECK_EQ_I64(r.peak_seq, 3);
    mr_replay_free(&r);

    CHECK_EQ_I64(mr_replay_init(&r, cap, MT_HEAP_LIBC), 0);
    CHECK_EQ_I64(mr_replay_run(&r, 4, NULL, NULL), 0); // a seq between events
    CHECK_EQ_I64(r.events, 2);
    CHECK_EQ_I64(r.last_seq, 3);
    mr_replay_free(&r);

    CHECK_EQ_I64(mr_replay_init(&r, cap, MT_HEAP_LIBC), 0);
    CHECK_EQ_I64(mr_replay_run(&r, UINT64_MAX, NULL, NULL), 0);
    CHECK_EQ_I64(r.peak_bytes, 500);
    CHECK_EQ_I64(r.peak_seq, 3); // seq 6 ties at 500 and does not move it
    CHECK_EQ_I64(r.live_bytes, 0);
    CHECK_EQ_I64(r.unmatched_frees, 0);
    mr_replay_free(&r);
    mt_capture_close(cap);
}

// An address allocated again without a free in between (a free the tracer never saw): the
// old block is replaced, not double counted.
static void test_missed_free(void) {
    const mt_event ev[] = {EV(1, MALLOC, 0x40, 100, 1), EV(2, MALLOC, 0x40, 30, 1)};
    mt_capture* cap = open_events(ev, 2, 8);
    if (!cap)
        return;
    mr_replay r;
    CHECK_EQ_I64(mr_replay_init(&r, cap, MT_HEAP_LIBC), 0);
    CHECK_EQ_I64(mr_replay_run(&r, UINT64_MAX, NULL, NULL), 0);
    CHECK_EQ_I64(r.allocations, 2);
    CHECK_EQ_I64(r.live_bytes, 30);
    CHECK_EQ_I64(r.live.count, 1);
    CHECK_EQ_I64(r.peak_bytes, 100);
    mr_replay_free(&r);
    mt_capture_close(cap);
}

typedef struct seen {
    size_t calls, freed_blocks;
    uint64_t freed_bytes, freed_callsite_sum;
    uint64_t stop_at;
} seen;

static int on_event(mr_replay* r, const mt_event* ev, const mr_block* freed, void* ud) {
    seen* s = ud;
    s->calls++;
    CHECK_EQ_I64(r->last_seq, ev->seq); // called after the event is applied
    if (freed) {
        CHECK(mt_kind_is_free(ev->kind));
        CHECK_EQ_I64(freed->addr, ev->addr);
        s->freed_blocks++;
        s->freed_bytes += freed->size;
        s->freed_callsite_sum += freed->callsite;
    }
    return ev->seq == s->stop_at ? 42 : 0;
}

static void test_callback(void) {
    const mt_event ev[] = {
        EV(1, MALLOC, 0x10, 10, 1), EV(2, MALLOC, 0x20, 20, 1),      EV(3, FREE, 0x99, 0, 1),
        EV(4, FREE, 0x20, 0, 1),    EV(5, REALLOC_FREE, 0x10, 0, 1), EV(6, REALLOC, 0x10, 40, 1),
        EV(7, FREE, 0x10, 0, 1),
    };
    mt_capture* cap = open_events(ev, 7, 3);
    if (!cap)
        return;
    mr_replay r;
    seen s = {.stop_at = UINT64_MAX};
    CHECK_EQ_I64(mr_replay_init(&r, cap, MT_HEAP_LIBC), 0);
    CHECK_EQ_I64(mr_replay_run(&r, UINT64_MAX, on_event, &s), 0);
    CHECK_EQ_I64(s.calls, 7);
    CHECK_EQ_I64(s.freed_blocks, 3); // the free of 0x99 has no block
    CHECK_EQ_I64(s.freed_bytes, 20 + 10 + 40);
    CHECK_EQ_I64(s.freed_callsite_sum, 2 + 1 + 6); // each callsite is its seq (EV)
    mr_replay_free(&r);

    s = (seen){.stop_at = 4};
    CHECK_EQ_I64(mr_replay_init(&r, cap, MT_HEAP_LIBC), 0);
    CHECK_EQ_I64(mr_replay_run(&r, UINT64_MAX, on_event, &s), 42);
    CHECK_EQ_I64(s.calls, 4);
    CHECK_EQ_I64(r.events, 4);
    mr_replay_free(&r);
    mt_capture_close(cap);
}

// Threads reusing one address: thread 1 frees it, thread 2 gets it from malloc, and so on.
// The chunks of each thread overlap in seq, so only the global seq order pairs them right.
static void test_cross_thread_reuse(void) {
    enum { ROUNDS = 3000 };
    static mt_event ev[ROUNDS * 2];
    uint64_t seq = 0;
    for (size_t i = 0; i < ROUNDS; i++) {
        uint32_t t = 1 + (uint32_t)(i % 4);
        ev[2 * i] = EV(++seq, MALLOC, 0x5000, 16 + i % 4, t);
        ev[2 * i + 1] = EV(++seq, FREE, 0x5000, 0, 1 + (t % 4));
    }
    mt_capture* cap = open_events(ev, ROUNDS * 2, 97);
    if (!cap)
        return;
    mr_replay r;
    CHECK_EQ_I64(mr_replay_init(&r, cap, MT_HEAP_LIBC), 0);
    CHECK_EQ_I64(mr_replay_run(&r, UINT64_MAX, NULL, NULL), 0);
    CHECK_EQ_I64(r.events, ROUNDS * 2);
    CHECK_EQ_I64(r.unmatched_frees, 0);
    CHECK_EQ_I64(r.live_bytes, 0);
    CHECK_EQ_I64(r.live.count, 0);
    CHECK_EQ_I64(r.peak_bytes, 19);
    mr_replay_free(&r);
    mt_capture_close(cap);
}

// A random valid stream (4 threads, realloc pairs, cross-thread frees, address reuse)
// against a direct model computed here.
static void test_random(void) {
    enum { N = 200000, SLOTS = 3000 };
    mt_event* ev = malloc(N * sizeof *ev);
    uint64_t size_of[SLOTS] = {0}; // size + 1 of the live block in slot i (addr = base + i)
    uint64_t seq = 0, live = 0, peak = 0, peak_seq = 0, allocs = 0, frees = 0, bytes = 0;
    uint64_t nlive = 0;
    size_t n = 0;
    while (n < N - 1) {
        size_t i = (size_t)(test_rng(&rng) % SLOTS);
        uint64_t addr = 0x7f1200000000ull + i * 32;
        uint32_t tid = 100 + (uint32_t)(test_rng(&rng) % 4);
        seq += 1 + test_rng(&rng) % 2;
        if (!size_of[i]) {
            uint64_t sz = test_rng(&rng) % 4096;
            ev[n++] = EV(seq, MALLOC, addr, sz, tid);
            size_of[i] = sz + 1;
            live += sz;
            nlive++;
            allocs++;
            bytes += sz;
        } else if (test_rng(&rng) % 2) {
            ev[n++] = EV(seq, FREE, addr, 0, tid);
            live -= size_of[i] - 1;
            size_of[i] = 0;
            nlive--;
            frees++;
        } else { // realloc to another free slot
            size_t j = (size_t)(test_rng(&rng) % SLOTS);
            if (size_of[j] && j != i)
                continue;
            uint64_t sz = test_rng(&rng) % 8192;
            ev[n++] = EV(seq, REALLOC_FREE, addr, 0, tid);
            live -= size_of[i] - 1;
            size_of[i] = 0;
            ev[n++] = EV(++seq, REALLOC, 0x7f1200000000ull + j * 32, sz, tid);
            size_of[j] = sz + 1;
            live += sz;
            frees++;
            allocs++;
            bytes += sz;
        }
        if (live > peak) {
            peak = live;
            peak_seq = seq;
        }
    }
    mt_capture* cap = open_events(ev, n, 1000);
    if (cap) {
        mr_replay r;
        CHECK_EQ_I64(mr_replay_init(&r, cap, MT_HEAP_LIBC), 0);
        CHECK_EQ_I64(mr_replay_run(&r, UINT64_MAX, NULL, NULL), 0);
        CHECK_EQ_I64(r.events, n);
        CHECK_EQ_I64(r.allocations, allocs);
        CHECK_EQ_I64(r.frees, frees);
        CHECK_EQ_I64(r.unmatched_frees, 0);
        CHECK_EQ_I64(r.bytes_allocated, bytes);
        CHECK_EQ_I64(r.peak_bytes, peak);
        CHECK_EQ_I64(r.peak_seq, peak_seq);
        CHECK_EQ_I64(r.live_bytes, live);
        CHECK_EQ_I64(r.live.count, nlive);
        mr_replay_free(&r);
        mt_capture_close(cap);
    }
    free(ev);
}

// What a callback sees of one event, and at the events the table is exact at, of the table.
typedef struct view {
    uint64_t seq, events, live_bytes, peak_bytes, peak_seq, unmatched;
    bool has_freed;
    mr_block freed;
    uint64_t table_count, table_sum; // set when exact: blocks, and a sum over them
} view;

typedef struct seen_log {
    view* v;
    size_t n;
    uint64_t exact_every;
    uint64_t stop_at; // the callback stops the run at this event count (0: never)
} seen_log;

static int record(mr_replay* r, const mt_event* ev, const mr_block* freed, void* ud) {
    seen_log* l = ud;
    view s;
    memset(&s, 0, sizeof s); // compared with memcmp: the padding too
    s.seq = ev->seq;
    s.events = r->events;
    s.live_bytes = r->live_bytes;
    s.peak_bytes = r->peak_bytes;
    s.peak_seq = r->peak_seq;
    s.unmatched = r->unmatched_frees;
    s.has_freed = freed != NULL;
    if (freed)
        s.freed = *freed;
    if (r->events % l->exact_every == 0) {
        mr_block b;
        s.table_count = r->live.count;
        for (size_t i = 0; mr_heapmap_next(&r->live, &i, &b);)
            s.table_sum += b.addr * 31 + b.size * 7 + b.callsite + ((uint64_t)b.tid << 40);
    }
    l->v[l->n++] = s;
    return l->stop_at && r->events == l->stop_at ? 1 : 0;
}

// The pipelined run (replay.h, pipelined) against the plain one on random streams with
// missed frees, frees of unknown blocks, realloc pairs, reported blocks at the addresses of
// the allocator's and events past stop_seq: every callback sees the same, the table is the
// same where it is exact and at the end.
static void test_pipelined(void) {
    enum { N = 30000, SLOTS = 700 };
    mt_event* ev = malloc(N * sizeof *ev);
    seen_log plain = {.v = malloc(N * sizeof(view))}, piped = {.v = malloc(N * sizeof(view))};
    for (int round = 0; round < 6 && ev && plain.v && piped.v; round++) {
        size_t n = 0;
        uint64_t seq = 0;
        while (n < N - 1) {
            uint64_t addr = 0x7f1200000000ull + (test_rng(&rng) % SLOTS) * 32;
            uint32_t tid = 100 + (uint32_t)(test_rng(&rng) % 4);
            uint64_t sz = test_rng(&rng) % 5000;
            seq += 1 + test_rng(&rng) % 2;
            unsigned what = (unsigned)(test_rng(&rng) % 9);
            if (what < 4) {
                ev[n++] = EV(seq, MALLOC, addr, sz, tid);
            } else if (what < 7) {
                ev[n++] = EV(seq, FREE, addr, 0, tid);
            } else if (what == 7) {
                ev[n++] = EV(seq, CUSTOM_ALLOC, addr, sz, tid);
            } else {
                ev[n++] = EV(seq, REALLOC_FREE, addr, 0, tid);
                ev[n++] = EV(++seq, REALLOC, addr + 64, sz, tid);
            }
        }
        mt_capture* cap = open_events(ev, n, 1 + test_rng(&rng) % 3000);
        if (!cap)
            break;
        uint64_t stop = round % 2 ? UINT64_MAX : ev[n / 2 + test_rng(&rng) % (n / 3)].seq;
        uint64_t every = 1 + test_rng(&rng) % 9000;
        uint64_t stop_at = round == 5 ? 1 + test_rng(&rng) % (n / 2) : 0;
        mr_replay a, b;
        plain.n = piped.n = 0;
        plain.exact_every = piped.exact_every = every;
        plain.stop_at = piped.stop_at = stop_at;
        CHECK_EQ_I64(mr_replay_init(&a, cap, MT_HEAP_LIBC), 0);
        CHECK_EQ_I64(mr_replay_init(&b, cap, MT_HEAP_LIBC), 0);
        b.pipelined = true;
        b.live_exact_every = every;
        CHECK_EQ_I64(mr_replay_run(&a, stop, record, &plain), stop_at ? 1 : 0);
        CHECK_EQ_I64(mr_replay_run(&b, stop, record, &piped), stop_at ? 1 : 0);
        CHECK_EQ_I64(piped.n, plain.n);
        CHECK(piped.n != plain.n || !memcmp(piped.v, plain.v, plain.n * sizeof(view)));
        mr_heap_totals ta, tb;
        mr_replay_totals(&a, &ta);
        mr_replay_totals(&b, &tb);
        if (!stop_at) // stopped by the callback, the table may be ahead (replay.h)
            CHECK(!memcmp(&ta, &tb, sizeof ta));
        CHECK_EQ_I64(b.events, a.events);
        CHECK_EQ_I64(b.live_bytes, a.live_bytes);
        mr_replay_free(&a);
        mr_replay_free(&b);
        mt_capture_close(cap);
    }
    free(ev);
    free(plain.v);
    free(piped.v);
}

static int fail_at(mr_replay* r, const mt_event* ev, const mr_block* freed, void* ud) {
    (void)freed;
    const int* err = ud;
    if (ev->seq != 2)
        return 0;
    if (*err == -EPIPE) // a callback that words its own failure keeps its message
        snprintf(r->err, sizeof r->err, "writing the report failed");
    return *err;
}

// A callback's own failure is reported as itself, never as a corrupt capture.
static void test_callback_error(void) {
    const mt_event ev[] = {EV(1, MALLOC, 0x10, 10, 1), EV(2, MALLOC, 0x20, 20, 1),
                           EV(3, FREE, 0x10, 0, 1)};
    mt_capture* cap = open_events(ev, 3, 2);
    if (!cap)
        return;
    const int errs[] = {-ENOMEM, -EIO, -EPIPE};
    const char* words[] = {"out of memory", strerror(EIO), "writing the report failed"};
    for (size_t i = 0; i < 3; i++) {
        mr_replay r;
        CHECK_EQ_I64(mr_replay_init(&r, cap, MT_HEAP_LIBC), 0);
        CHECK_EQ_I64(mr_replay_run(&r, UINT64_MAX, fail_at, (void*)&errs[i]), errs[i]);
        CHECK_EQ_I64(r.events, 2);
        CHECK_EQ_STR(r.err, words[i]);
        CHECK(!strstr(r.err, "corrupt"));
        mr_replay_free(&r);
    }
    mt_capture_close(cap);
}

static void test_empty_and_corrupt(void) {
    mt_capture* cap = open_events(NULL, 0, 1);
    if (!cap)
        return;
    mr_replay r;
    CHECK_EQ_I64(mr_replay_init(&r, cap, MT_HEAP_LIBC), 0);
    CHECK_EQ_I64(mr_replay_run(&r, UINT64_MAX, NULL, NULL), 0);
    CHECK_EQ_I64(r.events, 0);
    CHECK_EQ_I64(r.peak_bytes, 0);
    CHECK_EQ_I64(r.peak_seq, 0);
    mr_replay_free(&r);
    mt_capture_close(cap);

    const mt_event ev[] = {EV(1, MALLOC, 0x10, 10, 1), EV(2, MALLOC, 0x20, 20, 1),
                           EV(3, FREE, 0x10, 0, 1)};
    cap = open_events(ev, 3, 1);
    if (!cap)
        return;
    // A count that does not match the blob, found only when the chunk is decoded.
    CHECK_EQ_I64(capture_sql_exec(cap, "UPDATE event_chunk SET count = count + 1 WHERE heap=1 AND"
                                       " seq_first = 2"),
                 SQLITE_OK);
    CHECK_EQ_I64(mr_replay_init(&r, cap, MT_HEAP_LIBC), 0);
    CHECK_EQ_I64(mr_replay_run(&r, UINT64_MAX, NULL, NULL), -EPROTO);
    CHECK(strstr(r.err, "event chunk") && strstr(r.err, "is corrupt"));
    mr_replay_free(&r);
    mt_capture_close(cap);
}

int main(void) {
    test_basic();
    test_stop_and_ties();
    test_missed_free();
    test_callback();
    test_cross_thread_reuse();
    test_random();
    mr_replay_pipeline_after(0); // these streams are small
    test_pipelined();
    test_empty_and_corrupt();
    test_callback_error();
    CHECK_DONE();
}
