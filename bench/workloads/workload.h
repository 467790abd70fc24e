// SPDX-License-Identifier: MIT
// Shared pieces of the benchmark workloads: settings from the environment, a cheap PRNG, the
// size mix (16 B-64 KiB), the calibrated native work, and the deep call stacks (recursion
// through several distinct noinline functions). Included by exactly one .c per program, so
// everything here is static. It never allocates: the counts the workloads print must be theirs.
#ifndef BENCH_WORKLOAD_H
#define BENCH_WORKLOAD_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

// Iterations of burn() per malloc/free pair. Calibrated on the 2-core AMD EPYC bench machine so
// that the one-thread workload runs at about 320 ns per pair natively (malloc, free, touch and
// this work together); override with BENCH_WORK and read the ns/pair the program prints.
#define BENCH_WORK_DEFAULT 110
#define BENCH_EVENTS_DEFAULT 10000000ull
// Distinct leaf stacks: real programs allocate from thousands of places, not millions.
#define BENCH_STACKS 1024
// Malloc/free operations done per descent, so that the recursion is not most of the work.
#define BENCH_OPS_PER_LEAF 4

typedef struct bench_settings {
    uint64_t events; // malloc + free events the workload makes (rounded down to even)
    unsigned work;   // burn() iterations per pair
    uint64_t seed;
} bench_settings;

static uint64_t env_u64(const char* name, uint64_t fallback) {
    const char* v = getenv(name);
    if (!v || !*v)
        return fallback;
    char* end;
    unsigned long long n = strtoull(v, &end, 10);
    if (*end) {
        fprintf(stderr, "bench: %s=%s is not a number\n", name, v);
        exit(1);
    }
    return n;
}

static bench_settings bench_settings_load(void) {
    bench_settings s;
    s.events = env_u64("BENCH_EVENTS", BENCH_EVENTS_DEFAULT) & ~1ull;
    s.work = (unsigned)env_u64("BENCH_WORK", BENCH_WORK_DEFAULT);
    s.seed = env_u64("BENCH_SEED", 42) | 1;
    return s;
}

static inline uint64_t rng_next(uint64_t* s) {
    // xorshift64*: a few cycles, and good enough to mix sizes, slots and stacks.
    uint64_t x = *s;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *s = x;
    return x * 0x2545F4914F6CDD1Dull;
}

// 16 B-64 KiB in 12 octaves from 16 B, uniform inside an octave; each octave half as likely
// as the one below (the top one takes the rest), so counts are dominated by small blocks and
// bytes are spread about evenly over all sizes, as in typical C and C++ programs.
static inline size_t pick_size(uint64_t r) {
    unsigned octave = (unsigned)__builtin_ctzll(r | (1ull << 11));
    size_t base = (size_t)16 << octave;
    return base + (size_t)((r >> 16) % base);
}

static volatile uint64_t bench_sink;

// The program's own computation between heap calls: a dependent xorshift chain that the
// compiler can neither vectorise nor fold.
static __attribute__((noinline)) uint64_t burn(uint64_t x, unsigned iters) {
    for (unsigned i = 0; i < iters; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
    }
    return x;
}

// Writes the start of a fresh block, as a program initialising it would.
static inline void touch(void* p, size_t size, uint64_t v) {
    memset(p, (int)(v & 0xff), size < 64 ? size : 64);
}

static inline uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

// ---- deep stacks ------------------------------------------------------------------------
// A descent goes through `depth` frames of step0..step5, the order fixed by the stack id, and
// calls the leaf at the bottom. The arithmetic after each call keeps it from becoming a tail
// call (which would drop frames); the distinct constants keep identical-code folding from
// merging the functions (which would make different stacks look alike).

typedef uint64_t (*bench_leaf_fn)(void* arg);

typedef struct bench_walk {
    uint64_t path;
    int depth;
    bench_leaf_fn leaf;
    void* arg;
} bench_walk;

#define BENCH_NSTEP 6
typedef uint64_t (*bench_step_fn)(const bench_walk* w, int level);
// Declared first so that the table (C and C++ alike) can precede step_next, which uses it.
static uint64_t step0(const bench_walk* w, int level);
static uint64_t step1(const bench_walk* w, int level);
static uint64_t step2(const bench_walk* w, int level);
static uint64_t step3(const bench_walk* w, int level);
static uint64_t step4(const bench_walk* w, int level);
static uint64_t step5(const bench_walk* w, int level);
static const bench_step_fn bench_steps[BENCH_NSTEP] = {step0, step1, step2, step3, step4, step5};

static inline uint64_t step_next(const bench_walk* w, int level) {
    if (level >= w->depth)
        return w->leaf(w->arg);
    uint64_t h = (w->path + (uint64_t)level * 0x9E3779B97F4A7C15ull) * 0xBF58476D1CE4E5B9ull;
    return bench_steps[(h >> 32) % BENCH_NSTEP](w, level + 1);
}

#define BENCH_STEP(n, k)                                                                           \
    static __attribute__((noinline, noclone)) uint64_t step##n(const bench_walk* w, int level) {   \
        return step_next(w, level) * (k) + (uint64_t)level;                                        \
    }
BENCH_STEP(0, 3)
BENCH_STEP(1, 5)
BENCH_STEP(2, 7)
BENCH_STEP(3, 11)
BENCH_STEP(4, 13)
BENCH_STEP(5, 17)

// Runs leaf(arg) at the bottom of the stack numbered id (0..BENCH_STACKS-1), which is
// min_depth..min_depth+10 recursion frames deep.
static inline uint64_t bench_descend(uint64_t id, int min_depth, bench_leaf_fn leaf, void* arg) {
    uint64_t h = (id + 1) * 0x9E3779B97F4A7C15ull;
    bench_walk w = {h, min_depth + (int)((h >> 40) % 11), leaf, arg};
    return bench_steps[id % BENCH_NSTEP](&w, 1);
}

#endif
