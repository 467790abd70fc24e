// SPDX-License-Identifier: MIT
// The writer's live set (preload/live_set.c) against the truth: events made by simulated
// threads that reuse each other's addresses, delivered each thread in order but threads
// interleaved at random (as the writer gets buffers), must leave exactly the blocks that a
// replay in seq order leaves. Also: the table grows, marks of old frees go once settled.
#include "bootstrap.h"
#include "live_set.h"
#include "writer_heap.h"

#include "../check.h"
#include "../rng.h"
#include "memtrace/schema.h"

#include <stdlib.h>

#define THREADS 4
#define EVENTS 200000
#define ADDRS 512 // few addresses: each is freed and reused by other threads many times

static mt_event per_thread[THREADS][EVENTS];
static size_t count[THREADS];
static uint64_t truth_size[ADDRS + 1];
static uint64_t truth_seq[ADDRS + 1];
static uint32_t truth_cs[ADDRS + 1];

static int check_block(const mt_live_block* b, void* ud) {
    int* bad = ud;
    uint64_t a = b->addr / 16;
    if (a == 0 || a > ADDRS || truth_size[a] != b->size || truth_seq[a] != b->seq ||
        truth_cs[a] != b->callsite || b->heap != MT_HEAP_LIBC)
        ++*bad;
    return 0;
}

static void interleaved(uint64_t seed) {
    uint64_t x = seed;
    for (int t = 0; t < THREADS; t++)
        count[t] = 0;
    for (int a = 0; a <= ADDRS; a++)
        truth_size[a] = truth_seq[a] = truth_cs[a] = 0;
    bool live[ADDRS + 1] = {0};
    // Events in seq order: an allocation on any thread of an address not live, a free of a
    // live one, on any thread (as a producer/consumer program frees what another made).
    uint64_t live_bytes = 0;
    size_t live_n = 0;
    for (uint64_t seq = 1; seq <= EVENTS * THREADS / 2; seq++) {
        int t = (int)(test_rng(&x) % THREADS);
        if (count[t] == EVENTS)
            break;
        uint64_t a = 1 + test_rng(&x) % ADDRS;
        mt_event* e = &per_thread[t][count[t]++];
        *e = (mt_event){.seq = seq, .addr = a * 16, .tid = (uint32_t)t, .heap = MT_HEAP_LIBC};
        if (live[a]) {
            e->kind = MT_KIND_FREE;
            live[a] = false;
            live_bytes -= truth_size[a];
            live_n--;
            truth_size[a] = 0;
        } else {
            e->kind = MT_KIND_MALLOC;
            e->size = 1 + test_rng(&x) % 1000;
            e->callsite = (uint32_t)(test_rng(&x) % 50);
            live[a] = true;
            truth_size[a] = e->size;
            truth_seq[a] = seq;
            truth_cs[a] = e->callsite;
            live_bytes += e->size;
            live_n++;
        }
    }
    mt_live_set* s = mt_live_set_new();
    CHECK(s != NULL);
    size_t at[THREADS] = {0};
    for (;;) {
        int left = 0;
        for (int t = 0; t < THREADS; t++)
            left += at[t] < count[t];
        if (!left)
            break;
        int t = (int)(test_rng(&x) % THREADS);
        size_t n = 1 + test_rng(&x) % 300; // a piece of a buffer
        for (; n && at[t] < count[t]; n--)
            CHECK_EQ_I64(mt_live_set_apply(s, &per_thread[t][at[t]++]), 0);
    }
    CHECK(mt_live_set_complete(s));
    CHECK_EQ_I64(mt_live_set_count(s), live_n);
    CHECK_EQ_I64(mt_live_set_bytes(s), live_bytes);
    int bad = 0;
    mt_live_set_each(s, check_block, &bad);
    CHECK_EQ_I64(bad, 0);
    mt_live_block* sorted;
    size_t n;
    CHECK_EQ_I64(mt_live_set_sorted(s, MT_HEAP_LIBC, &sorted, &n), 0);
    CHECK_EQ_I64(n, live_n);
    for (size_t i = 1; i < n; i++)
        CHECK(sorted[i - 1].addr < sorted[i].addr);
    mt_writer_heap_free(sorted);
    mt_live_set_free(s);
}

// Many blocks (the table grows several times), then all freed: once settled, the marks of
// those frees go at the next growth, and the set holds only what is live.
static void grows_and_forgets(void) {
    mt_live_set* s = mt_live_set_new();
    const uint64_t n = 100000;
    uint64_t seq = 0;
    for (uint64_t i = 1; i <= n; i++) {
        mt_event e = {.seq = ++seq, .addr = i * 32, .size = i, .kind = MT_KIND_MALLOC, .heap = 1};
        mt_live_set_apply(s, &e);
    }
    CHECK_EQ_I64(mt_live_set_count(s), n);
    CHECK_EQ_I64(mt_live_set_bytes(s), n * (n + 1) / 2);
    for (uint64_t i = 1; i <= n; i++) {
        mt_event e = {.seq = ++seq, .addr = i * 32, .kind = MT_KIND_FREE, .heap = 1};
        mt_live_set_apply(s, &e);
    }
    CHECK_EQ_I64(mt_live_set_count(s), 0);
    CHECK_EQ_I64(mt_live_set_bytes(s), 0);
    // An allocation older than a free already seen at its address stays freed.
    mt_event old = {.seq = 1, .addr = 32, .size = 5, .kind = MT_KIND_MALLOC, .heap = 1};
    mt_live_set_apply(s, &old);
    CHECK_EQ_I64(mt_live_set_count(s), 0);
    mt_live_set_settle(s, seq + 1);
    for (uint64_t i = 1; i <= 2 * n; i++) {
        mt_event e = {
            .seq = ++seq, .addr = (n + i) * 32, .size = 1, .kind = MT_KIND_MALLOC, .heap = 1};
        mt_live_set_apply(s, &e);
    }
    CHECK_EQ_I64(mt_live_set_count(s), 2 * n);
    // Settled: the freed marks are gone, so this old allocation is taken as live now (what
    // settling promises never happens in the writer).
    mt_live_set_apply(s, &old);
    CHECK_EQ_I64(mt_live_set_count(s), 2 * n + 1);
    mt_live_set_free(s);
}

// The blocks in address order, each once, for a few (merge sort) and many (radix sort):
// addresses anywhere in 48 bits, as the heap and mappings give them.
static void sorts_few_and_many(void) {
    uint64_t x = 0x51a7c0ffeeull;
    const size_t sizes[] = {0, 1, 2, 3, 1000, 16383, 16384, 40000};
    for (size_t k = 0; k < sizeof sizes / sizeof *sizes; k++) {
        mt_live_set* s = mt_live_set_new();
        uint64_t sum = 0;
        for (size_t i = 0; i < sizes[k]; i++) {
            uint64_t addr = ((test_rng(&x) & 0xffffffffffull) << 4) | ((uint64_t)i << 44);
            mt_event e = {.seq = i + 1, .addr = addr, .size = 8, .kind = MT_KIND_MALLOC, .heap = 1};
            CHECK_EQ_I64(mt_live_set_apply(s, &e), 0);
            sum += addr;
        }
        mt_live_block* sorted;
        size_t n;
        CHECK_EQ_I64(mt_live_set_sorted(s, MT_HEAP_LIBC, &sorted, &n), 0);
        CHECK_EQ_I64(n, sizes[k]);
        uint64_t got = 0;
        for (size_t i = 0; i < n; i++) {
            got += sorted[i].addr;
            if (i)
                CHECK(sorted[i - 1].addr < sorted[i].addr);
        }
        CHECK_EQ_I64(got, sum);
        mt_writer_heap_free(sorted);
        mt_live_set_free(s);
    }
}

int main(void) {
    mt_bootstrap_resolve();
    sorts_few_and_many();
    for (uint64_t seed = 1; seed <= 5; seed++)
        interleaved(seed * 0x9e3779b97f4a7c15ull);
    grows_and_forgets();
    CHECK_DONE();
}
