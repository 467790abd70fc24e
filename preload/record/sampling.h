// SPDX-License-Identifier: MIT
// Sampling by bytes (MEMTRACE_SAMPLE_BYTES=N): which allocations are recorded, and the set
// of sampled blocks whose frees are. A Poisson process over the bytes each thread
// allocates, as tcmalloc and heapprofd do: a per-thread countdown drawn from an exponential
// distribution of mean N; an allocation of s bytes is sampled when it takes the countdown
// to zero or below, so with probability 1-exp(-s/N). Runs inside malloc: no stdio, no
// allocation from the traced heap (the set lives in its own mappings), no lock a signal
// handler of the same thread could wait on forever (docs/tracer.md, Sampling).
#ifndef MT_SAMPLING_H
#define MT_SAMPLING_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

// Set once at initialisation: MEMTRACE_SAMPLE_BYTES > 0. Off: every hook is as before.
extern bool mt_sampling;
// Allocations that were to be sampled but could not enter the set (no memory for it):
// recorded as not sampled, counted here (meta sample_set_full).
extern _Atomic uint64_t mt_sampling_set_full;

// This thread's bytes left to the next sample, valid while mt_sample_drawn_in is the
// current mt_sample_epoch (a new thread's 0 never is). The epoch moves on when a capture
// after a detach forgets the set: an interval drawn before, of another mean perhaps, is
// drawn anew. The slow path, when an allocation of `size` bytes reaches it: true when the
// allocation is sampled (a new interval drawn), false otherwise.
extern __thread int64_t mt_sample_countdown __attribute__((tls_model("initial-exec")));
extern __thread uint32_t mt_sample_drawn_in __attribute__((tls_model("initial-exec")));
extern _Atomic uint32_t mt_sample_epoch;
bool mt_sampling_cross(size_t size);

// The set of sampled blocks. insert: 0, -ENOMEM (no mapping: the caller records the
// allocation as not sampled) or -EBUSY (this thread is inside the set already: a signal
// handler; likewise not sampled). remove: 1 (it was there), 0 (it was not), -EBUSY (cannot
// tell, see above). Both may be called from signal handlers.
int mt_sampling_set_insert(uintptr_t addr);
int mt_sampling_set_remove(uintptr_t addr);
// Blocks in the set now (for tests: the writer does not read it).
uint64_t mt_sampling_set_size(void);

// Reads the settings (after mt_config_load): the hash key, the fork handlers (once). Again
// at each attach, with the capture stopped.
void mt_sampling_init(void);
// Empties the set (and the count of blocks it could not take) for a new capture in this
// process after an earlier one ended (an attach after a detach), with no capture running, and
// has every thread draw its interval anew (MEMTRACE_SAMPLE_SEED: thread k again seed + k). A
// forked child keeps its parent's set: the blocks it inherits are those very blocks.
void mt_sampling_forget(void);

// The cheap path: true (and the countdown lowered) when an allocation of `size` bytes leaves
// it above zero, so it is not sampled; false when mt_sampling_keep_alloc must decide.
static inline bool mt_sampling_skips(size_t size) {
    if (mt_sample_drawn_in != atomic_load_explicit(&mt_sample_epoch, memory_order_relaxed))
        return false;
    int64_t left = mt_sample_countdown - (int64_t)(size > INT64_MAX / 2 ? INT64_MAX / 2 : size);
    if (left <= 0)
        return false;
    mt_sample_countdown = left;
    return true;
}

// Whether an allocation of `size` bytes, just returned at addr, is to be recorded: always
// when not sampling; else when the thread's countdown crosses zero and addr entered the set.
static inline bool mt_sampling_keep_alloc(void* addr, size_t size) {
    if (__builtin_expect(!mt_sampling, 1))
        return true;
    int64_t left = mt_sample_countdown - (int64_t)(size > INT64_MAX / 2 ? INT64_MAX / 2 : size);
    bool current =
        mt_sample_drawn_in == atomic_load_explicit(&mt_sample_epoch, memory_order_relaxed);
    if (__builtin_expect(left > 0 && current, 1)) {
        mt_sample_countdown = left;
        return false;
    }
    return mt_sampling_cross(size) && mt_sampling_set_insert((uintptr_t)addr) == 0;
}

// The counting filter in front of the set: per slot, how many blocks in the set have it. A
// multiplicative hash (the key drawn at init, odd): its top bits are well mixed. Every free
// reads it: 64 KiB stays in the L2 cache, where 1 MiB missed it on each free (bench cxx
// sampled at 512 KiB, CPU: 1.095x with 1 MiB, 1.07x with 32 or 128 KiB); with the few
// thousand blocks a sampled heap of gigabytes holds, a few percent of frees look further.
#define MT_SAMPLE_FILTER_BITS 16
extern _Atomic uint8_t mt_sample_filter[1u << MT_SAMPLE_FILTER_BITS];
extern uint64_t mt_sample_filter_key;
static inline uint32_t mt_sample_filter_slot(uintptr_t addr) {
    return (uint32_t)(((uint64_t)addr * mt_sample_filter_key) >> (64 - MT_SAMPLE_FILTER_BITS));
}

// Whether addr is surely not in the set (its filter slot is 0). The block's own insert
// happened before its free (same thread, or the program handed the pointer over with its
// own synchronisation), so a 0 there is the truth: most frees end here.
static inline bool mt_sampling_not_in_set(void* addr) {
    return !atomic_load_explicit(&mt_sample_filter[mt_sample_filter_slot((uintptr_t)addr)],
                                 memory_order_relaxed);
}

// Whether the free of addr (called before the real free) is to be recorded: always when not
// sampling; else when addr was in the set (it is taken out), or when the set cannot tell
// (a signal handler interrupted this thread inside the set: the free is recorded, and may
// be one without its allocation, which readers allow).

static inline bool mt_sampling_keep_free(void* addr) {
    if (__builtin_expect(!mt_sampling, 1))
        return true;
    if (__builtin_expect(mt_sampling_not_in_set(addr), 1))
        return false;
    return mt_sampling_set_remove((uintptr_t)addr) != 0;
}

#endif
