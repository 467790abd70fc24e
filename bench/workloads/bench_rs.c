// SPDX-License-Identifier: MIT
// Random-stacks benchmark workload: one thread whose consecutive heap calls come from
// unrelated call paths. Each malloc and each free is made at the bottom of its own descent
// into one of RS_SITES sites picked at random, each site a fixed recursion path 16-24 frames
// deep, so a stack is seen again often but rarely just after itself (the opposite of bench_st,
// which makes several calls per descent). Sizes 16 B-64 KiB, random slots of a pool of live
// blocks, and the same BENCH_WORK per malloc/free pair as bench_st. Prints its exact counts
// and ns per pair on one stdout line; it makes no other heap calls of its own.
#include "workload.h"

#define POOL 4096
// Distinct call sites (leaf stacks); a free and the next malloc each pick one at random.
#define RS_SITES 100

typedef struct rs_state {
    void* pool[POOL];
    uint64_t rng;
    unsigned slot; // the slot the current pair works on
    uint64_t mallocs, frees;
    unsigned work;
} rs_state;

static uint64_t rs_free_leaf(void* arg) {
    rs_state* st = arg;
    if (st->pool[st->slot]) {
        free(st->pool[st->slot]);
        st->pool[st->slot] = NULL;
        st->frees++;
    }
    return st->slot;
}

static uint64_t rs_malloc_leaf(void* arg) {
    rs_state* st = arg;
    uint64_t r = rng_next(&st->rng);
    size_t size = pick_size(r);
    void* p = malloc(size);
    if (!p) {
        fprintf(stderr, "bench_rs: out of memory\n");
        exit(1);
    }
    st->mallocs++;
    touch(p, size, r);
    st->pool[st->slot] = p;
    return burn(r, st->work);
}

// Runs leaf(arg) at the bottom of site `site`: a recursion path of its own, 16-24 frames.
static uint64_t rs_descend(unsigned site, bench_leaf_fn leaf, void* arg) {
    uint64_t h = (site + 1) * 0xD1B54A32D192ED03ull;
    bench_walk w = {h, 16 + (int)((h >> 40) % 9), leaf, arg};
    return bench_steps[site % BENCH_NSTEP](&w, 1);
}

int main(void) {
    bench_settings cfg = bench_settings_load();
    static rs_state st;
    st.rng = cfg.seed;
    st.work = cfg.work;
    uint64_t pairs_todo = cfg.events / 2;

    uint64_t t0 = now_ns(), acc = 0;
    for (uint64_t i = 0; i < pairs_todo; i++) {
        uint64_t r = rng_next(&st.rng);
        st.slot = (unsigned)(r >> 48) % POOL;
        acc += rs_descend((unsigned)(r % RS_SITES), rs_free_leaf, &st);
        acc += rs_descend((unsigned)((r >> 16) % RS_SITES), rs_malloc_leaf, &st);
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
    printf("bench_rs: threads=1 mallocs=%llu frees=%llu events=%llu elapsed_ns=%llu "
           "ns_per_pair=%.1f work=%u\n",
           (unsigned long long)st.mallocs, (unsigned long long)st.frees,
           (unsigned long long)(st.mallocs + st.frees), (unsigned long long)elapsed,
           (double)elapsed / (double)pairs, cfg.work);
    return 0;
}
