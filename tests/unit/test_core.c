// SPDX-License-Identifier: MIT
// The core's event path (preload/record/core.c, core_buffers.c) without LD_PRELOAD: the test starts
// the core itself (mt_core_init, MEMTRACE_OUTPUT in a temporary directory) and calls the
// record functions as the shim would after the real malloc, calloc, realloc and free, plus
// the calls that record nothing (free(NULL), failed allocations, a paused stretch), the
// annotation API, another thread, and enough events to fill several buffers. After
// mt_core_shutdown, common's reader must give back exactly those events (seq, kind, address,
// size, thread, a callsite for each allocation) and the call counts.
#include "core.h"

#include "../check.h"
#include "../tmpdir.h"
#include "memtrace/capture.h"
#include "memtrace/schema.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#define BULK_PAIRS (3 * MT_BUFFER_EVENTS + 5) // alloc/free pairs: several full buffers
#define MAX_EXPECTED (2 * BULK_PAIRS + 64)

static mt_event expected[MAX_EXPECTED];
static size_t nexpected;
static uint64_t next_seq = 1; // the core's first seq
static uint32_t worker_tid;

// The event the core must have recorded for the call just made; seq is the next one taken.
static void expect(int kind, uint64_t addr, uint64_t size) {
    expected[nexpected++] = (mt_event){
        .seq = next_seq++,
        .addr = addr,
        .size = size,
        .tid = (uint32_t)gettid(),
        .kind = (uint8_t)kind,
        // A program's pool blocks are a heap of their own.
        .heap = kind == MT_KIND_CUSTOM_ALLOC || kind == MT_KIND_CUSTOM_FREE ? MT_HEAP_POOL
                                                                            : MT_HEAP_LIBC};
}

// realloc as the shim records it: the free's seq is taken before the real call.
static void realloc_call(uint64_t old, uint64_t new_ptr, size_t size) {
    uint64_t free_seq = old ? mt_seq_take() : 0;
    mt_core_on_realloc(MT_KIND_REALLOC, MT_KIND_REALLOC_FREE, MT_CALL_REALLOC, free_seq,
                       (void*)(uintptr_t)old, (void*)(uintptr_t)new_ptr, size);
}

static void* worker(void* arg) {
    (void)arg;
    worker_tid = (uint32_t)gettid();
    pthread_setname_np(pthread_self(), "core-worker");
    mt_core_on_alloc(MT_KIND_MALLOC, MT_CALL_MALLOC, (void*)0x7000, 33);
    expect(MT_KIND_MALLOC, 0x7000, 33);
    mt_core_on_free(MT_KIND_FREE, MT_CALL_FREE, (void*)0x7000, 0);
    expect(MT_KIND_FREE, 0x7000, 0);
    return NULL;
}

static void record_everything(void) {
    mt_core_on_alloc(MT_KIND_MALLOC, MT_CALL_MALLOC, (void*)0x1000, 100);
    expect(MT_KIND_MALLOC, 0x1000, 100);
    mt_core_on_alloc(MT_KIND_CALLOC, MT_CALL_CALLOC, (void*)0x2000, 24);
    expect(MT_KIND_CALLOC, 0x2000, 24);
    realloc_call(0x1000, 0x3000, 1000); // moved: free of the old block, then the new one
    expect(MT_KIND_REALLOC_FREE, 0x1000, 0);
    expect(MT_KIND_REALLOC, 0x3000, 1000);
    mt_core_on_free(MT_KIND_FREE, MT_CALL_FREE, (void*)0x2000, 0);
    expect(MT_KIND_FREE, 0x2000, 0);

    // Counted, never recorded: free(NULL), a failed malloc, a failed realloc (its reserved
    // seq stays unused: a gap).
    mt_core_on_free(MT_KIND_FREE, MT_CALL_FREE, NULL, 0);
    mt_core_on_alloc(MT_KIND_MALLOC, MT_CALL_MALLOC, NULL, SIZE_MAX);
    realloc_call(0x3000, 0, (size_t)1 << 62);
    next_seq++;
    realloc_call(0, 0x4000, 50); // realloc(NULL, n): an allocation only
    expect(MT_KIND_REALLOC, 0x4000, 50);
    realloc_call(0x4000, 0, 0); // realloc(p, 0): frees p, returns NULL
    expect(MT_KIND_REALLOC_FREE, 0x4000, 0);

    // Paused: counted, not recorded.
    memtrace_impl_mark(NULL, MT_MARK_PAUSE);
    mt_core_on_alloc(MT_KIND_MALLOC, MT_CALL_MALLOC, (void*)0x5000, 7);
    memtrace_impl_mark(NULL, MT_MARK_RESUME);
    memtrace_impl_mark("phase", MT_MARK_POINT);
    memtrace_impl_report(1, (void*)0x6000, 64);
    expect(MT_KIND_CUSTOM_ALLOC, 0x6000, 64);
    memtrace_impl_report(0, (void*)0x6000, 64); // a custom free carries no size
    expect(MT_KIND_CUSTOM_FREE, 0x6000, 0);

    // Another thread, joined before the next event: its buffer is handed over at its exit.
    pthread_t th;
    CHECK(pthread_create(&th, NULL, worker, NULL) == 0);
    pthread_join(th, NULL);

    for (uint64_t i = 0; i < BULK_PAIRS; i++) {
        uint64_t addr = 0x100000 + 16 * i, size = 1 + i % 1000;
        mt_core_on_alloc(MT_KIND_MALLOC, MT_CALL_MALLOC, (void*)(uintptr_t)addr, size);
        expect(MT_KIND_MALLOC, addr, size);
        mt_core_on_free(MT_KIND_FREE, MT_CALL_FREE, (void*)(uintptr_t)addr, 0);
        expect(MT_KIND_FREE, addr, 0);
    }
}

// ---- reading the capture back

#define MAX_CALLSITES 4096
static int64_t callsite_ids[MAX_CALLSITES];
static size_t ncallsites;

static int on_callsite(void* ud, const mt_callsite_rec* c) {
    (void)ud;
    if (ncallsites < MAX_CALLSITES)
        callsite_ids[ncallsites++] = c->id;
    return 0;
}

static bool callsite_known(uint32_t id) {
    for (size_t i = 0; i < ncallsites; i++)
        if (callsite_ids[i] == id)
            return true;
    return false;
}

static void check_events(mt_capture* cap) {
    CHECK_EQ_I64(mt_capture_callsites(cap, on_callsite, NULL), 0);
    mt_event_iter* it = NULL;
    CHECK_EQ_I64(mt_capture_iter_open(cap, MT_HEAP_PROGRAM, &it), 0); // libc's and the pool's
    mt_event ev;
    size_t n = 0, bad = 0;
    int64_t last_ts = 0;
    int rc;
    while (it && (rc = mt_capture_iter_next(it, &ev)) == 1) {
        if (n < nexpected) {
            const mt_event* e = &expected[n];
            bool is_alloc = e->kind != MT_KIND_FREE && e->kind != MT_KIND_REALLOC_FREE &&
                            e->kind != MT_KIND_CUSTOM_FREE;
            bool ok =
                ev.seq == e->seq && ev.kind == e->kind && ev.addr == e->addr &&
                ev.size == e->size && ev.tid == e->tid && ev.heap == e->heap && ev.ts >= last_ts &&
                (is_alloc ? ev.callsite != 0 && callsite_known(ev.callsite) : ev.callsite == 0);
            if (!ok && bad++ < 5)
                fprintf(stderr,
                        "event %zu: seq %" PRIu64 " kind %d addr %#" PRIx64 " size %" PRIu64
                        " tid %u callsite %u; expected seq %" PRIu64 " kind %d addr %#" PRIx64
                        " size %" PRIu64 " tid %u\n",
                        n, ev.seq, ev.kind, ev.addr, ev.size, ev.tid, ev.callsite, e->seq, e->kind,
                        e->addr, e->size, e->tid);
        }
        last_ts = ev.ts;
        n++;
    }
    CHECK_EQ_I64(rc, 0);
    CHECK_EQ_I64(n, nexpected);
    CHECK_EQ_I64(bad, 0);
    mt_capture_iter_close(it);

    mt_heap_span span, pool;
    CHECK_EQ_I64(mt_capture_heap_span(cap, MT_HEAP_LIBC, &span), 1);
    CHECK_EQ_I64(mt_capture_heap_span(cap, MT_HEAP_POOL, &pool), 1);
    CHECK_EQ_I64(pool.events, 2);
    CHECK_EQ_I64(span.events + pool.events, nexpected);
    CHECK_EQ_I64(mt_capture_meta_int(cap, "events_written", -1), (int64_t)nexpected);
}

static int64_t call_counts[MT_CALL_COUNT_];
static int unknown_calls;

static int on_call_count(void* ud, const char* name, int64_t count) {
    (void)ud;
    for (int k = 0; k < MT_CALL_COUNT_; k++)
        if (name && strcmp(name, mt_call_names[k]) == 0) {
            call_counts[k] = count;
            return 0;
        }
    unknown_calls++;
    return 0;
}

static void check_counts(mt_capture* cap) {
    CHECK_EQ_I64(mt_capture_call_counts(cap, on_call_count, NULL), 0);
    CHECK_EQ_I64(unknown_calls, 0);
    // malloc: 0x1000, the failed one, the paused one, the worker's, the bulk ones.
    CHECK_EQ_I64(call_counts[MT_CALL_MALLOC], 4 + BULK_PAIRS);
    CHECK_EQ_I64(call_counts[MT_CALL_CALLOC], 1);
    CHECK_EQ_I64(call_counts[MT_CALL_REALLOC], 4);
    // free: 0x2000, free(NULL), the worker's, the bulk ones.
    CHECK_EQ_I64(call_counts[MT_CALL_FREE], 3 + BULK_PAIRS);
    for (int k = 0; k < MT_CALL_COUNT_; k++)
        if (k != MT_CALL_MALLOC && k != MT_CALL_CALLOC && k != MT_CALL_REALLOC && k != MT_CALL_FREE)
            CHECK_EQ_I64(call_counts[k], 0);
}

static bool worker_named;

static void on_thread(void* ud, int64_t tid, const char* name) {
    (void)ud;
    if (tid == (int64_t)worker_tid)
        worker_named = name && strcmp(name, "core-worker") == 0;
}

static int on_mark(void* ud, const mt_mark_rec* m) {
    int* n = ud;
    CHECK_EQ_STR(m->kind, "mark");
    CHECK_EQ_STR(m->name, "phase");
    CHECK(m->has_tid && m->tid == gettid());
    (*n)++;
    return 0;
}

static void check_threads_and_marks(mt_capture* cap) {
    CHECK_EQ_I64(mt_capture_threads(cap, on_thread, NULL), 0);
    CHECK(worker_tid != 0 && worker_tid != (uint32_t)gettid());
    CHECK(worker_named);
    int marks = 0;
    mt_mark_query q = {.heap = MT_HEAP_LIBC};
    CHECK_EQ_I64(mt_capture_marks(cap, &q, on_mark, &marks), 0);
    CHECK_EQ_I64(marks, 1);
}

int main(void) {
    char path[1100];
    snprintf(path, sizeof path, "%s/core.db", test_tmpdir());
    setenv("MEMTRACE_OUTPUT", path, 1);
    setenv("MEMTRACE_SYMBOLIZE", "0", 1); // names are not the event path's business
    unsetenv("MEMTRACE_REPORT");

    mt_core_init();
    CHECK(mt_recording());
    if (mt_recording())
        record_everything();
    mt_core_shutdown();
    CHECK(!mt_recording());

    char err[512] = "";
    mt_capture* cap = NULL;
    int rc = mt_capture_open(path, &cap, err, sizeof err);
    CHECK_EQ_I64(rc, 0);
    if (rc == 0) {
        CHECK(!mt_capture_truncated(cap));
        check_events(cap);
        check_counts(cap);
        check_threads_and_marks(cap);
        mt_capture_close(cap);
    } else {
        fprintf(stderr, "%s: %s\n", path, err);
    }
    CHECK_DONE();
}
