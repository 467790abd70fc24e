// SPDX-License-Identifier: MIT
// Stack capture: return addresses of the hook's caller, the tracer's own frames removed.
#ifndef MT_UNWIND_H
#define MT_UNWIND_H

#include "stackhash.h"

#include <stdbool.h>
#include <stdint.h>

void mt_unwind_init(int mode);
// Whether a sigprocmask call is libunwind's own, made inside one of the tracer's walks on
// this thread (see the sigprocmask hook).
bool mt_unwind_masking_for_us(uintptr_t caller);
// Whether `caller` (a return address) lies in libunwind's code.
bool mt_unwind_is_libunwind(uintptr_t caller);
// dlclose: forgets every learnt unwind rule (and each thread's cached walks), so code that a
// module loaded later puts at a freed address never meets a rule of the unloaded one.
void mt_unwind_forget(void);
// A thread's exit: frees its rule copies and kept walks (about 0.5 MB of address space).
void mt_unwind_thread_exit(void);
// fork: the rule table's lock must not be held by another thread when the child starts.
void mt_unwind_fork_lock(void);
void mt_unwind_fork_unlock(void);
// The top of the calling thread's stack (the walks' `stack_hi`: a frame lies below it), 0 if
// not known. Takes no lock: a thread's first hook may run inside pthread_getattr_np, which
// holds the thread's own lock while it calls fopen and realloc (Rust's runtime calls it at
// the start of main and of every thread), so pthread_getattr_np cannot be called here.
uintptr_t mt_unwind_stack_top(void);
// The most frames a walk looks at (MEMTRACE_DEPTH is at most 1024, plus the tracer's own).
#define MT_UNWIND_MAX_FRAMES 1100

// The callsite id the trie gave a stack, kept with the cached walk (see mt_trie_intern).
typedef struct mt_callsite_memo {
    uint32_t id, epoch; // id 0: not known yet
} mt_callsite_memo;

// The stack of the hook's caller, the tracer's own frames removed.
typedef struct mt_stack {
    const uintptr_t* pcs; // return addresses, outermost frame first
    // Each frame's stack pointer (where a frame's locals end), parallel to pcs; NULL when
    // the walk did not learn them (libunwind's unw_backtrace). Python frames are placed by it.
    const uintptr_t* sps;
    int n;
    bool signal_frame;      // the walk stepped through a signal handler's frame
    bool truncated;         // deeper than the limit: pcs holds the leaf-most n frames
    bool hash_later;        // hash not computed: mt_trie_intern hashes pcs on a memo miss
    mt_stackhash hash;      // mt_stackhash_of(pcs, n), unless hash_later
    mt_callsite_memo* memo; // where the walk cache keeps this stack's id, or NULL
} mt_stack;

// Walks the caller's stack, at most `max` frames. `scratch` and `sp_scratch` must hold
// MT_UNWIND_MAX_FRAMES entries (hooks keep their stack use small: a program's threads may
// have small stacks); st->pcs and st->sps point into them or into the thread's walk cache,
// valid until its next walk.
void mt_unwind(mt_stack* st, uintptr_t* scratch, uintptr_t* sp_scratch, int max,
               uintptr_t stack_hi);

// Frame pointers only, with no per-thread state (safe in a signal handler that interrupted
// a walk): the caller's return addresses, outermost first, the tracer's own frames dropped.
// Returns how many of `max` were written to `out`.
int mt_unwind_fp_only(uintptr_t* out, int max, uintptr_t stack_hi);

#endif
