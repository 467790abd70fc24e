// SPDX-License-Identifier: MIT
// preload/record/sampling.c's mt_sampling_forget without LD_PRELOAD: what a new capture after a
// detach starts from. The set is empty (size, every entry, every counter of the filter, one
// saturated at 255 too, the count of blocks it could not take) and works as before: blocks
// enter it and leave it again, also past its first tables; each thread draws its interval
// anew, and a seeded run draws as it did at the start.
#include "config.h"
#include "sampling.h"

#include "../check.h"

#include <stdint.h>

#define ADDR(i) ((uintptr_t)0x7f0000000000ull + (uintptr_t)(i)*48)
#define BLOCKS 20000  // several times a stripe's first table: every stripe has grown
#define SAME_SLOT 300 // blocks sharing one filter counter: past its 255

static bool filter_empty(void) {
    for (uint32_t i = 0; i < (1u << MT_SAMPLE_FILTER_BITS); i++)
        if (atomic_load(&mt_sample_filter[i]))
            return false;
    return true;
}

// Fills the set with BLOCKS blocks and SAME_SLOT more that share one filter counter.
static void fill(uintptr_t same[SAME_SLOT]) {
    int bad = 0;
    for (int i = 0; i < BLOCKS; i++)
        bad += mt_sampling_set_insert(ADDR(i)) != 0;
    uint32_t slot = mt_sample_filter_slot(ADDR(BLOCKS));
    int n = 0;
    for (uint64_t i = BLOCKS; n < SAME_SLOT; i++)
        if (mt_sample_filter_slot(ADDR(i)) == slot) {
            same[n++] = ADDR(i);
            bad += mt_sampling_set_insert(ADDR(i)) != 0;
        }
    CHECK(bad == 0);
    CHECK(mt_sampling_set_size() == BLOCKS + SAME_SLOT);
    CHECK(atomic_load(&mt_sample_filter[slot]) == 255);
}

static void test_forget(void) {
    static uintptr_t same[SAME_SLOT];
    fill(same);
    atomic_store(&mt_sampling_set_full, 3);
    mt_sampling_forget();
    CHECK(mt_sampling_set_size() == 0);
    CHECK(filter_empty());
    CHECK(atomic_load(&mt_sampling_set_full) == 0);
    int bad = 0;
    for (int i = 0; i < BLOCKS; i++)
        bad += !mt_sampling_not_in_set((void*)ADDR(i)) || mt_sampling_set_remove(ADDR(i)) != 0;
    for (int i = 0; i < SAME_SLOT; i++)
        bad += mt_sampling_set_remove(same[i]) != 0;
    CHECK(bad == 0);

    // The next capture's blocks: in, out, and the set empty again as it was.
    fill(same);
    for (int i = 0; i < BLOCKS; i++)
        bad += mt_sampling_set_remove(ADDR(i)) != 1;
    for (int i = 0; i < SAME_SLOT; i++)
        bad += mt_sampling_set_remove(same[i]) != 1;
    CHECK(bad == 0);
    CHECK(mt_sampling_set_size() == 0);
    mt_sampling_forget(); // a saturated counter stays at 255 when its blocks leave
    CHECK(filter_empty());
}

// Which of n allocations of `size` bytes at mean interval `bytes` are sampled, as bits.
static uint64_t draws(int64_t bytes, size_t size, int n) {
    mt_cfg.sample_bytes = bytes;
    uint64_t bits = 0;
    for (int i = 0; i < n; i++)
        if (mt_sampling_keep_alloc((void*)ADDR(i), size)) {
            bits |= 1ull << i;
            CHECK(mt_sampling_set_remove(ADDR(i)) == 1);
        }
    return bits;
}

// The next capture's intervals: drawn anew, not what is left of the last capture's.
static void test_forget_redraws(void) {
    mt_cfg.sample_seeded = 1; // the same draws in every run
    mt_cfg.sample_seed = 7;
    CHECK(draws(1 << 30, 64, 1) == 0); // an interval of about 1 GiB left over
    mt_sampling_forget();
    CHECK(draws(1, 64, 64) == UINT64_MAX); // at a mean of 1 byte, under 40: every one
    // A seeded run repeats its draws in each new capture, as from a program start.
    mt_sampling_forget();
    uint64_t first = draws(4096, 1024, 64);
    mt_sampling_forget();
    CHECK(first != 0 && first != UINT64_MAX && draws(4096, 1024, 64) == first);
}

int main(void) {
    mt_cfg.sample_bytes = 4096;
    mt_sampling_init();
    CHECK(mt_sampling);
    test_forget();
    test_forget_redraws();
    CHECK_DONE();
}
