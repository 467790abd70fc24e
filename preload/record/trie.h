// SPDX-License-Identifier: MIT
// Callsite interning: a stack (return addresses, leaf first) becomes one integer, the id of
// its leaf node in a tree of (parent, frame) nodes. A per-thread cache keyed by a 128-bit
// keyed hash of the whole stack answers repeats without a lock; a miss walks the shared
// tree under a mutex and creates only the new nodes and frames, which the writer drains.
#ifndef MT_TRIE_H
#define MT_TRIE_H

#include "unwind.h"

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct mt_callsite_row {
    uint32_t id, parent, frame, depth;
} mt_callsite_row;

typedef struct mt_frame_row {
    uint32_t id, mapping;
    uintptr_t pc, rel_pc;
} mt_frame_row;

void mt_trie_init(void);
// The callsite id of a stack: from its memo when the walk cache kept one (then it is filled),
// else from the thread's cache keyed by its hash, else from the shared tree. A truncated
// stack gets a synthetic outermost frame (pc 0, "[truncated]").
// `cache` is the calling thread's cache slot (NULL until the first call maps it); it lives
// with the thread's record so that a record reused by a new thread keeps it warm.
static inline uint32_t mt_trie_intern(const mt_stack* st, void** cache);
// Whether a memo's id is still the callsite of its stack (mt_trie_reset makes every memo
// stale).
static inline bool mt_trie_memo_valid(const mt_callsite_memo* memo);
// After a dlclose: forget every interned frame so addresses reused by another object get
// new frames (old rows stay in the capture with their own mapping).
void mt_trie_reset(void);

// Writer side: copies out rows to write (up to max), returns the count: those an event first
// named since the last drain (mt_trie_use), then those created since.
size_t mt_trie_drain_frames(mt_frame_row* out, size_t max);
size_t mt_trie_drain_callsites(mt_callsite_row* out, size_t max);
// A new capture of this image (a failed exec, another attach): every row is written again.
void mt_trie_rewrite_all(void);
// Fork child: the rows made so far are the parent's stacks, thousands where the child's
// events name a few (a shell's child): each is written into the child's capture when an
// event first names it (mt_trie_use), with its callers and frames.
void mt_trie_write_on_use(void);
// Writer side, for each event's callsite before the next drain.
void mt_trie_use_slow(uint32_t callsite);
extern size_t mt_trie_inherited; // callsites made before the fork (mt_trie_write_on_use)
static inline void mt_trie_use(uint32_t callsite) {
    if (__builtin_expect(callsite && callsite <= mt_trie_inherited, 0))
        mt_trie_use_slow(callsite);
}
void mt_trie_lock(void);
void mt_trie_unlock(void);
// The exit watcher's, with every thread gone: a table lock that a thread died holding is
// made anew (what it was doing leaves every counted row whole, and the rows to write either
// queued or written again).
void mt_trie_take_over(void);

// ---- inline implementation (a stack's memo answers most walks: no call for those)

extern _Atomic uint32_t mt_trie_epoch; // bumped by mt_trie_reset
// mt_trie_intern past the memo: the thread's cache, then the shared tree.
uint32_t mt_trie_intern_hashed(const mt_stack* st, void** cache);

static inline bool mt_trie_memo_valid(const mt_callsite_memo* memo) {
    return memo->id && memo->epoch == atomic_load_explicit(&mt_trie_epoch, memory_order_acquire);
}

static inline uint32_t mt_trie_intern(const mt_stack* st, void** cache) {
    if (st->memo && mt_trie_memo_valid(st->memo))
        return st->memo->id;
    return mt_trie_intern_hashed(st, cache);
}

#endif
