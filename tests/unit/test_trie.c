// SPDX-License-Identifier: MIT
// The callsite trie (preload/record/trie.c) without LD_PRELOAD: interning gives one id per distinct
// stack, through the per-thread cache and the shared tree alike; nodes link to their parent
// frame by frame; the writer drains each new frame and callsite once, rewrite_all replays
// them all, and a reset gives every stack new ids.
#include "bootstrap.h"
#include "maps.h"
#include "stackhash.h"
#include "trie.h"

#include "../check.h"

#include <stdlib.h>

#define MAX_ROWS 200000

static mt_callsite_row callsites[MAX_ROWS];
static mt_frame_row frames[MAX_ROWS];

static __thread void* cache; // the calling thread's stack cache

// pcs outermost first, as the unwinder gives them.
static uint32_t intern(const uintptr_t* pcs, int n, bool truncated, mt_callsite_memo* memo) {
    mt_stack st = {
        .pcs = pcs, .n = n, .truncated = truncated, .hash = mt_stackhash_of(pcs, n), .memo = memo};
    return mt_trie_intern(&st, &cache);
}

static size_t drain_callsites(void) {
    return mt_trie_drain_callsites(callsites, MAX_ROWS);
}

static size_t drain_frames(void) {
    return mt_trie_drain_frames(frames, MAX_ROWS);
}

static const mt_callsite_row* find_callsite(size_t n, uint32_t id) {
    for (size_t i = 0; i < n; i++)
        if (callsites[i].id == id)
            return &callsites[i];
    return NULL;
}

static const mt_frame_row* find_frame(size_t n, uint32_t id) {
    for (size_t i = 0; i < n; i++)
        if (frames[i].id == id)
            return &frames[i];
    return NULL;
}

// A pc inside this executable's text, which the module maps know.
static uintptr_t own_pc(void) {
    return (uintptr_t)&own_pc;
}

static void test_interning_and_parents(void) {
    uintptr_t a = own_pc(), b = 0x1000, c = 0x2000, d = 0x3000;
    const uintptr_t abc[] = {a, b, c}, abd[] = {a, b, d}, ab[] = {a, b};
    uint32_t id_abc = intern(abc, 3, false, NULL);
    CHECK(id_abc != 0);
    CHECK_EQ_I64(intern(abc, 3, false, NULL), id_abc); // the per-thread cache
    uint32_t id_abd = intern(abd, 3, false, NULL);
    uint32_t id_ab = intern(ab, 2, false, NULL);
    CHECK(id_abd != 0 && id_abd != id_abc);
    CHECK(id_ab != 0 && id_ab != id_abc && id_ab != id_abd);

    // Four nodes (a, ab, abc, abd) and four frames: the shared prefix is interned once.
    size_t nc = drain_callsites(), nf = drain_frames();
    CHECK_EQ_I64(nc, 4);
    CHECK_EQ_I64(nf, 4);
    const mt_callsite_row* leaf_c = find_callsite(nc, id_abc);
    const mt_callsite_row* leaf_d = find_callsite(nc, id_abd);
    const mt_callsite_row* mid = find_callsite(nc, id_ab);
    CHECK(leaf_c && leaf_d && mid);
    if (!leaf_c || !leaf_d || !mid)
        return;
    CHECK_EQ_I64(leaf_c->parent, id_ab);
    CHECK_EQ_I64(leaf_d->parent, id_ab);
    CHECK_EQ_I64(leaf_c->depth, 3);
    CHECK_EQ_I64(mid->depth, 2);
    const mt_callsite_row* root = find_callsite(nc, mid->parent);
    CHECK(root != NULL);
    if (root) {
        CHECK_EQ_I64(root->parent, 0);
        CHECK_EQ_I64(root->depth, 1);
    }

    // Frames carry their pc; one in this executable has a mapping and a pc relative to it.
    const mt_frame_row* fc = find_frame(nf, leaf_c->frame);
    const mt_frame_row* fd = find_frame(nf, leaf_d->frame);
    CHECK(fc && fd);
    if (fc && fd) {
        CHECK_EQ_I64(fc->pc, c);
        CHECK_EQ_I64(fd->pc, d);
        CHECK_EQ_I64(fc->mapping, 0); // 0x2000: no module there
        CHECK_EQ_I64(fc->rel_pc, c);
    }
    const mt_frame_row* fa = root ? find_frame(nf, root->frame) : NULL;
    CHECK(fa != NULL);
    if (fa) {
        CHECK_EQ_I64(fa->pc, a);
        CHECK(fa->mapping != 0);
        CHECK(fa->rel_pc <= fa->pc);
    }

    // Nothing new: nothing to drain. A new leaf under a known prefix: one callsite, one frame.
    CHECK_EQ_I64(intern(abc, 3, false, NULL), id_abc);
    CHECK_EQ_I64(drain_callsites(), 0);
    CHECK_EQ_I64(drain_frames(), 0);
    const uintptr_t abca[] = {a, b, c, a};
    uint32_t id_abca = intern(abca, 4, false, NULL);
    CHECK_EQ_I64(drain_callsites(), 1);
    CHECK_EQ_I64(callsites[0].id, id_abca);
    CHECK_EQ_I64(callsites[0].parent, id_abc);
    CHECK_EQ_I64(drain_frames(), 0); // frame a is known already
}

static void test_truncated_and_memo(void) {
    const uintptr_t pcs[] = {0x5000, 0x6000};
    uint32_t whole = intern(pcs, 2, false, NULL);
    uint32_t cut = intern(pcs, 2, true, NULL);
    CHECK(cut != 0 && cut != whole);
    size_t nc = drain_callsites();
    drain_frames();
    // The truncated stack hangs below a synthetic outermost node of pc 0: depth 3, not 2.
    const mt_callsite_row* leaf = find_callsite(nc, cut);
    CHECK(leaf != NULL);
    if (leaf)
        CHECK_EQ_I64(leaf->depth, 3);

    mt_callsite_memo memo = {0, 0};
    const uintptr_t other[] = {0x7000};
    uint32_t id = intern(other, 1, false, &memo);
    CHECK_EQ_I64(memo.id, id);
    // A filled memo answers without a lookup (the walk cache's promise).
    CHECK_EQ_I64(intern(other, 1, false, &memo), id);
    drain_callsites();
    drain_frames();
}

// Many stacks: the tables grow (rehash) and every stack keeps its id, answered from the
// shared tree once the per-thread cache has evicted it.
static void test_many(void) {
    enum { N = 30000 };
    uint32_t* ids = malloc(N * sizeof *ids);
    CHECK(ids != NULL);
    if (!ids)
        return;
    for (int i = 0; i < N; i++) {
        const uintptr_t pcs[] = {0x10000, 0x20000 + (uintptr_t)(i % 97) * 16,
                                 0x900000 + (uintptr_t)i * 16};
        ids[i] = intern(pcs, 3, false, NULL);
    }
    size_t nc = drain_callsites();
    CHECK_EQ_I64(nc, 1 + 97 + N);
    CHECK_EQ_I64(drain_frames(), 1 + 97 + N);
    int distinct = 1, same = 0;
    for (int i = 0; i < N; i++) {
        const uintptr_t pcs[] = {0x10000, 0x20000 + (uintptr_t)(i % 97) * 16,
                                 0x900000 + (uintptr_t)i * 16};
        same += intern(pcs, 3, false, NULL) == ids[i];
        distinct &= ids[i] != 0 && (i == 0 || ids[i] > ids[i - 1]); // new leaves: rising ids
    }
    CHECK_EQ_I64(same, N);
    CHECK(distinct);
    CHECK_EQ_I64(drain_callsites(), 0);
    free(ids);
}

// A fork child's capture gets every row again, in id order, from the first.
static void test_rewrite_all(void) {
    mt_trie_rewrite_all();
    size_t nc = drain_callsites(), nf = drain_frames();
    CHECK(nc > 30000);
    CHECK(nf > 30000);
    int ordered = 1;
    for (size_t i = 0; i < nc; i++)
        ordered &= callsites[i].id == i + 1 && callsites[i].parent < callsites[i].id;
    for (size_t i = 0; i < nf; i++)
        ordered &= frames[i].id == i + 1;
    CHECK(ordered);
    CHECK_EQ_I64(drain_callsites(), 0);
    CHECK_EQ_I64(drain_frames(), 0);
}

// After a reset (a dlclose), a known stack gets new frames and a new id.
static void test_reset(void) {
    const uintptr_t pcs[] = {0x5000, 0x6000};
    uint32_t before = intern(pcs, 2, false, NULL);
    mt_trie_reset();
    uint32_t after = intern(pcs, 2, false, NULL);
    CHECK(after != 0 && after != before);
    CHECK_EQ_I64(drain_callsites(), 2);
    CHECK_EQ_I64(drain_frames(), 2);
    CHECK_EQ_I64(intern(pcs, 2, false, NULL), after);
}

int main(void) {
    mt_bootstrap_resolve();
    mt_trie_init();
    mt_maps_init();
    test_interning_and_parents();
    test_truncated_and_memo();
    test_many();
    test_rewrite_all();
    test_reset();
    CHECK_DONE();
}
