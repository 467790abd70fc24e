// SPDX-License-Identifier: MIT
// The auto unwinder's per-thread cache (see unwind.c): the thread's copies of the rules it
// uses, its previous walk (top), and walks kept for later, with the helpers that check,
// store and look them up. Included by unwind.c only; the helpers are static inline because
// they run on every allocation's walk.
#ifndef MT_UNWIND_CACHE_H
#define MT_UNWIND_CACHE_H

#include "unwind.h"

#include <stdbool.h>
#include <stdint.h>

#define MAX_WALK MT_UNWIND_MAX_FRAMES

// Each thread keeps copies of the rules it uses in a small direct-mapped table: the shared
// table is too large to stay in the L1 cache and TLB, and the walk is latency-bound.
#define LOCAL_SLOTS 1024
typedef struct local_rule {
    uintptr_t pc;
    uint32_t cfa_off;
    uint16_t bp_off;
    uint8_t flags;
} local_rule;

// One frame of a cached walk, with what the walk read to leave it: the same frame (pc, sp,
// bp) with the same stack words above it unwinds to the same callers.
typedef struct walk_frame {
    uintptr_t pc, sp, bp;
    mt_stackhash hash;     // of the stack from the outermost frame down to this one
    mt_callsite_memo memo; // the callsite id of that stack, once interned
    uint16_t bp_off;       // the rule's bp_off (where the caller's RBP was read from)
    bool bp_cfa;           // the rule's CFA is RBP + 16
    bool bp_needed;        // the walk from here out reads this frame's RBP (see walk_cached)
    // Where this frame's RBP is saved below its sp, when the walk out reads it (the frame
    // inside saved it and bp_needed): first_stale checks that word; 0: no such word.
    uint16_t check_off;
} walk_frame;

// A complete walk kept for later (stacks seen before but not just before): its frames,
// outermost first, with the stack words the walk read to find them. A walk from the same leaf
// frame (pc, sp, and RBP where the walk used it) over the same words gives the same frames,
// so checking those words (independent loads, no rule lookups) replaces walking again.
#define RECENT_FRAMES 48 // deeper stacks are not kept
#define RECENT_SETS 64
#define RECENT_WAYS 4
#define RECENT_KEY_FRAMES 1 // frames walked (leaf first) before the kept walks are looked up
typedef struct recent_walk {
    uint64_t key;        // of the leaf frame (sp, pc) and its caller's pc
    uint32_t generation; // the rules' generation it was walked under; else empty
    int n;
    uintptr_t leaf_bp; // checked when leaf_bp_needed (see walk_frame.bp_needed)
    bool leaf_bp_needed;
    uintptr_t end_sp;      // not 0: the walk ended on a zero return address at end_sp - 8
    mt_stackhash hash;     // of the whole stack
    mt_callsite_memo memo; // its callsite id, once interned
    uintptr_t pc[RECENT_FRAMES], sp[RECENT_FRAMES];
    // The words read to step out to frame j are its return address at sp[j] - 8 and, where
    // the walk out reads frame j's RBP from the stack, the saved RBP: bp_at[i] must hold
    // bp_word[i] for each of the nbp frames that have one. Code without frame pointers has
    // few or none, so the return addresses are checked by a loop of their own.
    int nbp;
    uintptr_t bp_at[RECENT_FRAMES], bp_word[RECENT_FRAMES];
} recent_walk;

typedef struct local_rules {
    uint32_t generation;
    local_rule slot[LOCAL_SLOTS];
    uint32_t recent_clock;  // picks the way a new walk replaces
    recent_walk* last_kept; // the walk kept last: its callsite id is copied from top's
    // The kept walk the last walk found: a leaf that allocates in a loop makes the same stack
    // again, so the next walk checks it before anything else (top is another stack then).
    recent_walk* last_found;
    // Kept walks pay only where stacks recur: a thread whose lookups mostly miss (more
    // distinct stacks than kept walks) stops keeping and looking up for a while.
    uint32_t recent_probes, recent_hits, recent_off;
    uintptr_t top_end_sp; // recent_walk.end_sp of the walk in top
    uint32_t deep_off;    // walks left that stop past the limit (a stack too deep was met)
    recent_walk recent[RECENT_SETS][RECENT_WAYS];
    // The previous complete walk, outermost frame first, so that the frames a new walk
    // shares with it stay where they are: top_pc is what the callsite trie gets (top_sp what
    // Python frames are placed by). fresh holds a walk's new frames, leaf first.
    int top_n; // 0: nothing reusable (cut by the depth limit, or invalidated)
    walk_frame top[MAX_WALK];
    uintptr_t top_pc[MAX_WALK], top_sp[MAX_WALK];
    walk_frame fresh[MAX_WALK];
} local_rules;

// The first frame (outermost first) among 0..t-1 whose stack words changed since the walk
// stored them, or t: a walk that meets the stored one at frame j may reuse frames 0..j only
// if none of them did, i.e. for j up to the frame returned. The words of frame i are those
// read to step out to it from frame i + 1: its return address, and its RBP where frame i + 1
// saved it and the walk from frame i out reads it. In code without frame pointers RBP is an
// ordinary register whose saved value changes from call to call (a loop's counter): checked
// only where needed, it does not make an unchanged stack look new.
static inline int first_stale(const walk_frame* top, int t) {
    for (int i = 0; i < t; i++) {
        const walk_frame* f = &top[i];
        if (*(const uintptr_t*)(f->sp - 8) != f->pc ||
            (f->check_off && *(const uintptr_t*)(f->sp - f->check_off) != f->bp))
            return i;
    }
    return t;
}

// Keeps a complete walk for the next one: its k new frames (fresh, leaf first) go above the
// `shared` frames it reused, each with its hash state and RBP dependency.
static inline void store_walk(local_rules* lr, int shared, int k) {
    walk_frame* top = lr->top;
    int n = shared + k;
    mt_stackhash h = shared ? top[shared - 1].hash : mt_stackhash_begin();
    bool needed = shared && top[shared - 1].bp_needed;
    for (int i = shared; i < n; i++) {
        walk_frame* f = &top[i];
        *f = lr->fresh[n - 1 - i];
        f->memo = (mt_callsite_memo){0, 0};
        mt_stackhash_add(&h, f->pc);
        f->hash = h;
        // In code without frame pointers RBP is an ordinary register: the walk depends on
        // its value only where a rule uses it before some frame reloads it from the stack.
        needed = f->bp_cfa || (!f->bp_off && needed);
        f->bp_needed = needed;
        f->check_off = 0;
        if (i)
            top[i - 1].check_off = top[i - 1].bp_needed ? f->bp_off : 0;
        lr->top_pc[i] = f->pc;
        lr->top_sp[i] = f->sp;
    }
    lr->top_n = n;
}

// The leaf-most `max` frames of a walk too deep for the limit, outermost first: the walk's
// k new frames (fresh, leaf first) and below them the `shared` frames reused from top.
static inline void leafmost(const local_rules* lr, int shared, int k, int max, uintptr_t* out,
                            uintptr_t* out_sp) {
    int from_top = max > k ? max - k : 0;
    for (int i = 0; i < from_top; i++) {
        out[i] = lr->top_pc[shared - from_top + i];
        out_sp[i] = lr->top_sp[shared - from_top + i];
    }
    for (int i = from_top; i < max; i++) {
        out[i] = lr->fresh[max - 1 - i].pc;
        out_sp[i] = lr->fresh[max - 1 - i].sp;
    }
}

// Several kept walks may share a key: each is checked.
static inline uint64_t recent_key(uintptr_t leaf_sp, uintptr_t pc0, uintptr_t pc1) {
    uint64_t h = (leaf_sp ^ pc0) * 0x9e3779b97f4a7c15ull;
    h = (h ^ pc1) * 0xc2b2ae3d27d4eb4full;
    return h ^ (h >> 29);
}

static inline recent_walk* recent_set(local_rules* lr, uint64_t key) {
    return lr->recent[key >> 58 & (RECENT_SETS - 1)];
}

// Whether the kept walk e is the stack of the leaf frame (pc, sp, bp): the same leaf, and
// every stack word it read unchanged.
static inline bool recent_valid(const local_rules* lr, const recent_walk* e, uintptr_t pc,
                                uintptr_t sp, uintptr_t bp, int max) {
    int n = e->n;
    if (e->generation != lr->generation || n > max || e->pc[n - 1] != pc || e->sp[n - 1] != sp ||
        (e->leaf_bp_needed && e->leaf_bp != bp))
        return false;
    uintptr_t diff = e->end_sp ? *(const uintptr_t*)(e->end_sp - 8) : 0;
    // From the leaf out, four frames at a time: another stack under the same key (a leaf
    // called at the same depth from elsewhere) differs near the leaf.
    const uintptr_t *sps = e->sp, *pcs = e->pc;
    int j = n - 1;
    for (; j >= 4; j -= 4) {
        diff |= (*(const uintptr_t*)(sps[j - 1] - 8) ^ pcs[j - 1]) |
                (*(const uintptr_t*)(sps[j - 2] - 8) ^ pcs[j - 2]) |
                (*(const uintptr_t*)(sps[j - 3] - 8) ^ pcs[j - 3]) |
                (*(const uintptr_t*)(sps[j - 4] - 8) ^ pcs[j - 4]);
        if (diff)
            return false;
    }
    for (; j > 0; j--)
        diff |= *(const uintptr_t*)(sps[j - 1] - 8) ^ pcs[j - 1];
    for (int i = 0; i < e->nbp; i++)
        diff |= *(const uintptr_t*)e->bp_at[i] ^ e->bp_word[i];
    return !diff;
}

// A kept walk that starts at the leaf frame `leaf`, whose caller's return address is pc1,
// and whose stack words are unchanged.
static inline recent_walk* recent_find(local_rules* lr, const walk_frame* leaf, uintptr_t pc1,
                                       int max) {
    uint64_t key = recent_key(leaf->sp, leaf->pc, pc1);
    recent_walk* set = recent_set(lr, key);
    for (int w = 0; w < RECENT_WAYS; w++)
        if (set[w].key == key && recent_valid(lr, &set[w], leaf->pc, leaf->sp, leaf->bp, max))
            return &set[w];
    return NULL;
}

// Below one hit in three lookups, keeping walks costs more than it saves (measured on bench
// st: 1024 stacks, 256 kept): off for the next 64K walks, then tried again.
static inline void recent_count(local_rules* lr, bool hit) {
    lr->recent_hits += hit;
    if (++lr->recent_probes < 4096)
        return;
    if (lr->recent_hits * 3 < lr->recent_probes)
        lr->recent_off = 65536;
    lr->recent_probes = lr->recent_hits = 0;
}

// Keeps the complete walk in top (n frames) among the recent ones.
static inline recent_walk* recent_keep(local_rules* lr, int n) {
    if (n < 2 || n > RECENT_FRAMES)
        return NULL;
    const walk_frame* top = lr->top;
    uint64_t key = recent_key(top[n - 1].sp, top[n - 1].pc, top[n - 2].pc);
    recent_walk* set = recent_set(lr, key);
    recent_walk* e = NULL;
    for (int w = 0; w < RECENT_WAYS && !e; w++)
        if (set[w].generation != lr->generation)
            e = &set[w];
    if (!e)
        e = &set[lr->recent_clock++ % RECENT_WAYS];
    e->key = key;
    e->generation = lr->generation;
    e->n = n;
    e->leaf_bp = top[n - 1].bp;
    e->leaf_bp_needed = top[n - 1].bp_needed;
    e->end_sp = lr->top_end_sp;
    e->hash = top[n - 1].hash;
    e->memo = top[n - 1].memo;
    int nbp = 0;
    for (int j = 0; j < n; j++) {
        e->pc[j] = top[j].pc;
        e->sp[j] = top[j].sp;
        // As in first_stale: a saved RBP is checked where the walk out reads it.
        uint16_t off = top[j].check_off;
        if (off) {
            e->bp_at[nbp] = top[j].sp - off;
            e->bp_word[nbp++] = top[j].bp;
        }
    }
    e->nbp = nbp;
    return e;
}

#endif
