// SPDX-License-Identifier: MIT
// One-thread benchmark workload: BENCH_EVENTS heap events (half malloc, half free) from stacks
// 20-30 frames deep, sizes 16 B-64 KiB, a pool of live blocks so lifetimes vary, and about
// 320 ns of native work per malloc/free pair. Prints its own exact counts and its ns per pair
// on one stdout line; it makes no other heap calls of its own.
#include "workload.h"

#define POOL 4096

typedef struct st_state {
    void* pool[POOL];
    uint64_t rng;
    uint64_t todo; // mallocs still to make
    uint64_t mallocs, frees;
    unsigned work;
} st_state;

static uint64_t st_leaf(void* arg) {
    st_state* st = arg;
    uint64_t acc = 0;
    for (int i = 0; i < BENCH_OPS_PER_LEAF && st->todo; i++, st->todo--) {
        uint64_t r = rng_next(&st->rng);
        unsigned slot = (unsigned)(r >> 48) % POOL;
        if (st->pool[slot]) {
            free(st->pool[slot]);
            st->frees++;
        }
        size_t size = pick_size(r);
        void* p = malloc(size);
        if (!p) {
            fprintf(stderr, "bench_st: out of memory\n");
            exit(1);
        }
        st->mallocs++;
        touch(p, size, r);
        st->pool[slot] = p;
        acc += burn(r, st->work);
    }
    return acc;
}

int main(int argc, char** argv) {
    // Recursion frames under each leaf: 14..24 by default (20..30 frames in all); deeper
    // with an argument, e.g. 300 for stacks past the tracer's default depth limit (256).
    int min_depth = argc > 1 ? atoi(argv[1]) : 14;
    if (min_depth < 1 || min_depth > 100000) {
        fprintf(stderr, "usage: bench_st [MIN_DEPTH (1-100000, default 14)]\n");
        return 1;
    }
    bench_settings cfg = bench_settings_load();
    static st_state st;
    st.rng = cfg.seed;
    st.todo = cfg.events / 2;
    st.work = cfg.work;

    uint64_t t0 = now_ns(), acc = 0;
    while (st.todo) {
        uint64_t id = rng_next(&st.rng) % BENCH_STACKS;
        // 14..24 recursion frames + main, the leaf and libc's 3 start-up frames = 20..30.
        acc += bench_descend(id, min_depth, st_leaf, &st);
    }
    for (unsigned i = 0; i < POOL; i++) {
        if (st.pool[i]) {
            free(st.pool[i]);
            st.frees++;
        }
    }
    uint64_t elapsed = now_ns() - t0;
    bench_sink = acc;

    uint64_t pairs = st.mallocs ? st.mallocs : 1;
    printf("bench_st: threads=1 mallocs=%llu frees=%llu events=%llu elapsed_ns=%llu "
           "ns_per_pair=%.1f work=%u\n",
           (unsigned long long)st.mallocs, (unsigned long long)st.frees,
           (unsigned long long)(st.mallocs + st.frees), (unsigned long long)elapsed,
           (double)elapsed / (double)pairs, cfg.work);
    return 0;
}
