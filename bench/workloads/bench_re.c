// SPDX-License-Identifier: MIT
// Realloc-heavy benchmark workload: one thread growing string-builder buffers. Each step
// descends into one of BENCH_STACKS stacks 20-30 frames deep (as bench_st) and appends a
// random piece (1-32 bytes) to one of RE_BUILDERS buffers with realloc to the exact new
// length, as a naive string builder does; a buffer that passes its random limit (up to
// 64 KiB) is freed and started again with malloc. BENCH_EVENTS counts heap events with a
// realloc as two (it frees one block and allocates another). Prints its exact counts on one
// stdout line (a realloc counts as one malloc and one free); no other heap calls of its own.
#include "workload.h"

#define RE_BUILDERS 256

typedef struct builder {
    char* data;
    size_t len, limit;
} builder;

typedef struct re_state {
    builder b[RE_BUILDERS];
    uint64_t rng;
    uint64_t todo; // events still to make
    uint64_t mallocs, reallocs, frees;
    unsigned work;
} re_state;

static void* checked(void* p) {
    if (!p) {
        fprintf(stderr, "bench_re: out of memory\n");
        exit(1);
    }
    return p;
}

static uint64_t re_leaf(void* arg) {
    re_state* st = arg;
    uint64_t acc = 0;
    for (int i = 0; i < BENCH_OPS_PER_LEAF && st->todo >= 2; i++) {
        uint64_t r = rng_next(&st->rng);
        builder* b = &st->b[(r >> 48) % RE_BUILDERS];
        size_t piece = 1 + (size_t)((r >> 8) % 32);
        if (!b->data) {
            b->limit = 256 + pick_size(r);
            b->data = checked(malloc(piece));
            b->len = 0;
            st->mallocs++;
            st->todo -= 1;
        } else if (b->len + piece > b->limit) {
            free(b->data);
            b->data = NULL;
            st->frees++;
            st->todo -= 1;
            continue;
        } else {
            b->data = checked(realloc(b->data, b->len + piece));
            st->reallocs++;
            st->todo -= 2;
        }
        memset(b->data + b->len, (int)(r & 0xff), piece);
        b->len += piece;
        acc += burn(r, st->work);
    }
    return acc;
}

int main(void) {
    bench_settings cfg = bench_settings_load();
    static re_state st;
    st.rng = cfg.seed;
    st.todo = cfg.events;
    st.work = cfg.work;

    uint64_t t0 = now_ns(), acc = 0;
    while (st.todo >= 2) {
        uint64_t id = rng_next(&st.rng) % BENCH_STACKS;
        acc += bench_descend(id, 14, re_leaf, &st);
    }
    for (unsigned i = 0; i < RE_BUILDERS; i++) {
        if (st.b[i].data) {
            free(st.b[i].data);
            st.frees++;
        }
    }
    uint64_t elapsed = now_ns() - t0;
    bench_sink = acc;

    uint64_t mallocs = st.mallocs + st.reallocs, frees = st.frees + st.reallocs;
    uint64_t pairs = mallocs ? mallocs : 1;
    printf("bench_re: threads=1 mallocs=%llu frees=%llu events=%llu elapsed_ns=%llu "
           "ns_per_pair=%.1f work=%u reallocs=%llu\n",
           (unsigned long long)mallocs, (unsigned long long)frees,
           (unsigned long long)(mallocs + frees), (unsigned long long)elapsed,
           (double)elapsed / (double)pairs, cfg.work, (unsigned long long)st.reallocs);
    return 0;
}
