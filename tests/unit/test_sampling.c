// SPDX-License-Identifier: MIT
// preload/record/sampling.c without LD_PRELOAD: the set of sampled blocks (insert, remove, a block
// inserted twice, growth past its first tables, churn that leaves tombstones, threads working
// at once) and the Poisson countdown (an allocation of s bytes is sampled with probability
// 1-exp(-s/N), a fixed seed repeats the draws), with the settings set by hand.
#include "config.h"
#include "sampling.h"

#include "../check.h"

#include <math.h>
#include <pthread.h>
#include <stdint.h>

#define ADDR(i) ((uintptr_t)0x7f0000000000ull + (uintptr_t)(i)*48)

static void test_set_basics(void) {
    CHECK(mt_sampling_set_size() == 0);
    CHECK(mt_sampling_set_remove(ADDR(1)) == 0);
    CHECK(mt_sampling_set_insert(ADDR(1)) == 0);
    CHECK(mt_sampling_set_insert(ADDR(1)) == 0); // a missed free: still one entry
    CHECK(mt_sampling_set_size() == 1);
    CHECK(mt_sampling_set_remove(ADDR(2)) == 0);
    CHECK(mt_sampling_set_remove(ADDR(1)) == 1);
    CHECK(mt_sampling_set_remove(ADDR(1)) == 0);
    CHECK(mt_sampling_set_size() == 0);
}

// 200K blocks: every stripe grows several times; each is found once, then gone.
static void test_set_growth(void) {
    enum { N = 200000 };
    int bad = 0;
    for (int i = 0; i < N; i++)
        bad += mt_sampling_set_insert(ADDR(i)) != 0;
    CHECK(bad == 0);
    CHECK(mt_sampling_set_size() == N);
    for (int i = 0; i < N; i += 2)
        bad += mt_sampling_set_remove(ADDR(i)) != 1;
    for (int i = 0; i < N; i += 2)
        bad += mt_sampling_set_remove(ADDR(i)) != 0;
    for (int i = 1; i < N; i += 2)
        bad += mt_sampling_set_remove(ADDR(i)) != 1;
    CHECK(bad == 0);
    CHECK(mt_sampling_set_size() == 0);
}

// A window of 1000 live blocks slides over 2M addresses: tables fill with tombstones and are
// rebuilt; nothing is lost or found twice.
static void test_set_churn(void) {
    enum { LIVE = 1000, STEPS = 2000000 };
    int bad = 0;
    for (int i = 0; i < STEPS; i++) {
        bad += mt_sampling_set_insert(ADDR(i)) != 0;
        if (i >= LIVE)
            bad += mt_sampling_set_remove(ADDR(i - LIVE)) != 1;
    }
    CHECK(mt_sampling_set_size() == LIVE);
    for (int i = STEPS - LIVE; i < STEPS; i++)
        bad += mt_sampling_set_remove(ADDR(i)) != 1;
    CHECK(bad == 0);
    CHECK(mt_sampling_set_size() == 0);
}

// Four threads, each with its own addresses, at once; one frees what another inserted.
enum { THREADS = 4, PER_THREAD = 100000 };
static _Atomic int thread_bad;

static void* insert_range(void* arg) {
    uintptr_t base = (uintptr_t)arg * PER_THREAD;
    for (uintptr_t i = 0; i < PER_THREAD; i++)
        if (mt_sampling_set_insert(ADDR(base + i)) != 0)
            thread_bad++;
    return NULL;
}

static void* remove_range(void* arg) {
    uintptr_t base = (uintptr_t)arg * PER_THREAD;
    for (uintptr_t i = 0; i < PER_THREAD; i++)
        if (mt_sampling_set_remove(ADDR(base + i)) != 1)
            thread_bad++;
    return NULL;
}

static void run_threads(void* (*fn)(void*), int shift) {
    pthread_t t[THREADS];
    for (int i = 0; i < THREADS; i++)
        CHECK(pthread_create(&t[i], NULL, fn, (void*)(uintptr_t)((i + shift) % THREADS)) == 0);
    for (int i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);
}

static void test_set_threads(void) {
    run_threads(insert_range, 0);
    CHECK(mt_sampling_set_size() == THREADS * PER_THREAD);
    run_threads(remove_range, 1); // thread i frees thread i+1's blocks
    CHECK(thread_bad == 0);
    CHECK(mt_sampling_set_size() == 0);
}

// The fraction of allocations of `size` bytes sampled over n, each then taken out again.
static double sampled_fraction(size_t size, int n) {
    int hits = 0;
    for (int i = 0; i < n; i++)
        if (mt_sampling_keep_alloc((void*)ADDR(i), size)) {
            hits++;
            CHECK(mt_sampling_set_remove(ADDR(i)) == 1);
        }
    return (double)hits / n;
}

static void test_countdown(void) {
    enum { N = 4096, TRIALS = 200000 };
    mt_cfg.sample_bytes = N;
    mt_cfg.sample_seeded = 1;
    mt_cfg.sample_seed = 42;
    mt_sampling_init();
    CHECK(mt_sampling);
    // Disjoint stretches of a Poisson process are independent: a binomial count, whose
    // standard deviation is under 0.001 here; 0.005 is more than 5 of them.
    static const size_t sizes[] = {16, 256, 1024, 4096, 16384};
    for (size_t k = 0; k < sizeof sizes / sizeof *sizes; k++) {
        double want = 1 - exp(-(double)sizes[k] / N);
        double got = sampled_fraction(sizes[k], TRIALS);
        if (fabs(got - want) >= 0.005)
            fprintf(stderr, "size %zu: sampled %.4f, want %.4f\n", sizes[k], got, want);
        CHECK(fabs(got - want) < 0.005);
    }
    CHECK(sampled_fraction(1 << 20, 1000) == 1.0); // 256 intervals: never missed
    CHECK(mt_sampling_set_size() == 0);
}

// Sizes of the order of the interval: each draw's first allocation must be sampled with
// 1-exp(-s/N) as every other (an interval rounded down made it 1-exp(-(s+1)/N): 0.221
// against 0.118 at N=8, s=1, and an overall fraction above 0.13).
static void test_countdown_small_interval(void) {
    enum { N = 8, TRIALS = 200000 };
    mt_cfg.sample_bytes = N;
    // A block of 1 MiB ends what is left of the last test's interval (mean 4096): the draws
    // from here on are of mean N.
    CHECK(sampled_fraction(1 << 20, 1) == 1.0);
    static const size_t sizes[] = {1, 2, 4};
    for (size_t k = 0; k < sizeof sizes / sizeof *sizes; k++) {
        double want = 1 - exp(-(double)sizes[k] / N);
        double got = sampled_fraction(sizes[k], TRIALS);
        if (fabs(got - want) >= 0.005)
            fprintf(stderr, "N %d, size %zu: sampled %.4f, want %.4f\n", N, sizes[k], got, want);
        CHECK(fabs(got - want) < 0.005);
    }
    CHECK(mt_sampling_set_size() == 0);
}

int main(void) {
    test_set_basics();
    test_set_growth();
    test_set_churn();
    test_set_threads();
    test_countdown();
    test_countdown_small_interval();
    CHECK_DONE();
}
