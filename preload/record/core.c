// SPDX-License-Identifier: MIT
// The tracer's event path: per-thread records, the recursion guard, the record functions
// the hooks call and the side queue of signal handlers' heap calls. Hot path per event:
// clock, one fetch-add for the global seq, stack walk, callsite cache lookup, one 48-byte
// store into the thread's own buffer. No lock there; the queue lock (core_buffers.c) is
// taken once per full buffer (8192 events). Runs inside malloc: no stdio, no allocation from
// the traced heap. Starting and stopping captures is core_lifecycle.c's.
#include "bootstrap.h"
#include "clock.h"
#include "config.h"
#include "core_internal.h"
#include "python_frames.h"
#include "recording.h"
#include "sampling.h"
#include "trie.h"
#include "unwind.h"

#include "memtrace/schema.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

_Static_assert(sizeof(((mt_thread*)0)->pcs) / sizeof(uintptr_t) == MT_UNWIND_MAX_FRAMES,
               "mt_thread.pcs must hold a whole walk");

const char* const mt_call_names[MT_CALL_COUNT_] = {
#define MT_HEAP_HOOK(CALL, name, real, attach) #name,
#include "hooks.def"
    "python_malloc", "python_calloc", "python_realloc", "python_free"};

_Atomic int mt_state;
_Atomic int mt_core_attached;
static __thread mt_thread* tls_thread __attribute__((tls_model("initial-exec")));

static _Atomic(mt_thread*) threads_head;
static pthread_key_t thread_key;

mt_thread* mt_core_threads(void) {
    return atomic_load(&threads_head);
}

mt_thread* mt_core_this_thread(void) {
    return tls_thread;
}

// ---- the traced process, and what the floors above do for the event path

static pid_t traced_pid;
// A page the kernel empties in a child whose memory is a copy of ours (MADV_WIPEONFORK):
// fork()'s child handler sets it again; a child made by clone() without CLONE_VM, clone3 or
// a raw fork system call runs no handler and finds it empty. A vfork child shares our memory
// and finds it set. NULL where the kernel lacks the advice (before Linux 4.14): the pid then.
static _Atomic int* own_memory;
// Set by core_lifecycle.c before the first capture (this floor cannot call the writer's).
static void (*fail_capture)(const char* what, const char* why);
static void (*queue_mark)(const char* name, int what, int64_t ts, uint32_t tid);
static bool (*deferred_start)(void);

void mt_core_on_deferred_start(bool (*start)(void)) {
    deferred_start = start;
}

bool mt_core_start_deferred(void) {
    return deferred_start && deferred_start();
}

void mt_core_on_failure(void (*fail)(const char* what, const char* why)) {
    fail_capture = fail;
}

void mt_core_on_mark(void (*mark)(const char* name, int what, int64_t ts, uint32_t tid)) {
    queue_mark = mark;
}

void mt_core_mark_traced(void) {
    traced_pid = getpid();
    if (!own_memory) {
        // Raw system calls: the tracer's page is no mapping of the program's (MEMTRACE_MMAP).
        long p = syscall(SYS_mmap, NULL, (size_t)4096, PROT_READ | PROT_WRITE,
                         MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == -1 || (p > -4096 && p < 0))
            return;
        if (syscall(SYS_madvise, (void*)p, (size_t)4096, MADV_WIPEONFORK) != 0) {
            syscall(SYS_munmap, (void*)p, (size_t)4096);
            return;
        }
        own_memory = (_Atomic int*)p;
    }
    atomic_store(own_memory, 1);
}

pid_t mt_core_traced_pid(void) {
    return traced_pid;
}

// Whether this process is a child made without fork() (clone() without CLONE_VM, clone3, a
// raw fork system call): a copy of the traced process whose buffers no writer drains, as no
// fork handler ran in it. A vfork child shares the traced process's memory: false there.
static bool copied_unseen(void) {
    _Atomic int* p = own_memory;
    return p ? !atomic_load_explicit(p, memory_order_relaxed)
             : traced_pid && getpid() != traced_pid;
}

// Stops recording in such a child (it is not traced) and says why, once.
static void stop_copied(void) {
    int saved_errno = errno, saved_guard = mt_guard;
    mt_guard = 1; // the message's calls are the tracer's
    fail_capture("no capture",
                 "a child made without fork() (clone, clone3, a fork system call) is not traced");
    mt_guard = saved_guard;
    errno = saved_errno;
}

// ---- threads

// Counts of retired records (mt_core_retire), writer only.
static uint64_t retired_calls[MT_CALL_COUNT_], retired_lost;

static void thread_exit(void* arg) {
    mt_thread* t = arg;
    // The program's signals wait while the guard lets heap calls pass unseen.
    sigset_t all, old;
    sigfillset(&all);
    mt_real.sigprocmask(SIG_BLOCK, &all, &old);
    int saved = mt_guard;
    mt_guard = 1;
    prctl(PR_GET_NAME, t->name);
    atomic_store(&t->alive, 0);
    if (atomic_load(&t->nested_n))
        mt_core_drain_nested(t);
    mt_buffer* b = atomic_exchange(&t->cur, NULL);
    if (b) {
        atomic_fetch_add(&t->queued, 1);
        mt_core_buffer_hand_over(b);
    }
    mt_unwind_thread_exit();
    mt_python_frames_thread_exit();
    // The writer retires the record once this tid's task is gone: the tid must be this
    // thread's own, not a vfork child's (a thread whose first heap call was in a vfork
    // child got its record there, with the child's pid).
    t->tid = (uint32_t)gettid();
    atomic_store_explicit(&t->ending, MT_THREAD_EXITING, memory_order_release);
    mt_guard = saved;
    mt_real.sigprocmask(SIG_SETMASK, &old, NULL);
}

bool mt_core_task_gone(const mt_thread* t) {
    // Signal 0 only checks: ESRCH once the kernel has released the task. Where tgkill is
    // refused (a seccomp filter), records are simply never reused.
    return syscall(SYS_tgkill, (pid_t)getpid(), (pid_t)t->tid, 0) == -1 && errno == ESRCH;
}

void mt_core_retire(mt_thread* t) {
    for (int k = 0; k < MT_CALL_COUNT_; k++) {
        retired_calls[k] += atomic_load_explicit(&t->calls[k], memory_order_relaxed);
        atomic_store_explicit(&t->calls[k], 0, memory_order_relaxed);
    }
    retired_lost += atomic_exchange_explicit(&t->nested_lost, 0, memory_order_relaxed);
    atomic_store(&t->ending, MT_THREAD_RUNNING);
    // written stays 1 until a new thread has set the record up.
    atomic_store_explicit(&t->reusable, 1, memory_order_release);
}

void mt_core_call_totals(uint64_t total[MT_CALL_COUNT_], uint64_t* lost) {
    memcpy(total, retired_calls, sizeof retired_calls);
    *lost = retired_lost;
    for (mt_thread* t = atomic_load(&threads_head); t; t = t->next) {
        for (int k = 0; k < MT_CALL_COUNT_; k++)
            total[k] += atomic_load_explicit(&t->calls[k], memory_order_relaxed);
        *lost += atomic_load_explicit(&t->nested_lost, memory_order_relaxed);
    }
}

// Zero counts for a new capture (core_lifecycle.c); the writer is not running.
void mt_core_forget_counts(void) {
    memset(retired_calls, 0, sizeof retired_calls);
    retired_lost = 0;
    atomic_store(&mt_core_reports_ignored, 0);
    for (mt_thread* t = atomic_load(&threads_head); t; t = t->next) {
        for (int k = 0; k < MT_CALL_COUNT_; k++)
            atomic_store(&t->calls[k], 0);
        atomic_store(&t->nested_lost, 0);
    }
}

static mt_thread* claim_retired(void) {
    for (mt_thread* t = atomic_load(&threads_head); t; t = t->next) {
        int free_ = 1;
        if (atomic_load_explicit(&t->reusable, memory_order_relaxed) &&
            atomic_compare_exchange_strong(&t->reusable, &free_, 0))
            return t;
    }
    return NULL;
}

// A thread's first hook: its record, a retired one or a new one (keeps errno: mmap may set
// it).
static __attribute__((noinline)) mt_thread* thread_create(void) {
    int saved_errno = errno;
    mt_thread* t = claim_retired();
    bool reused = t != NULL;
    if (!reused) {
        void* p = mt_own_pages(
            mmap(NULL, sizeof *t, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0),
            sizeof *t);
        if (p == MAP_FAILED)
            goto out;
        t = p;
    }
    t->errno_at = &errno;
    t->tid = (uint32_t)gettid();
    t->paused = 0;
    t->name[0] = 0;
    // A record freed in a fork child may hold what its thread was doing in the parent.
    atomic_store(&t->in_hook, 0);
    atomic_store(&t->nested_n, 0);
    atomic_store(&t->alive, 1);
    t->stack_hi = mt_unwind_stack_top();
    if (reused) {
        atomic_store_explicit(&t->written, 0, memory_order_release); // the writer's cue
    } else {
        mt_thread* head = atomic_load(&threads_head);
        do
            t->next = head;
        while (!atomic_compare_exchange_weak(&threads_head, &head, t));
    }
    pthread_setspecific(thread_key, t);
    tls_thread = t;
out:
    errno = saved_errno;
    return t;
}

void mt_core_threads_init(void) {
    pthread_key_create(&thread_key, thread_exit);
}

static inline void count_call(mt_thread* t, mt_call call) {
    uint64_t c = atomic_load_explicit(&t->calls[call], memory_order_relaxed);
    atomic_store_explicit(&t->calls[call], c + 1, memory_order_relaxed);
}

// The slot for this thread's next event, or NULL when no buffer can be had. The caller
// writes the event there and commits it: built in place, the event is not copied from a
// temporary (whose narrow stores a wide copy cannot forward: a stall on every event).
// The thread has no buffer (its first event, or none could be had): takes one. Out of line,
// as the record functions inline their fast path.
static __attribute__((noinline)) mt_buffer* buffer_for(mt_thread* t) {
    if (MT_UNLIKELY(copied_unseen())) {
        stop_copied();
        return NULL;
    }
    mt_buffer* b = mt_core_buffer_get();
    if (!b)
        return NULL;
    b->owner = t;
    atomic_store_explicit(&t->cur, b, memory_order_release);
    return b;
}

static inline mt_event* next_slot(mt_thread* t) {
    mt_buffer* b = atomic_load_explicit(&t->cur, memory_order_relaxed);
    if (MT_UNLIKELY(!b) && !(b = buffer_for(t)))
        return NULL;
    return &b->ev[atomic_load_explicit(&b->committed, memory_order_relaxed)];
}

// The thread's buffer b is full: the writer gets it, the thread a fresh one.
static __attribute__((noinline)) void hand_over_full(mt_thread* t, mt_buffer* b) {
    // A copy of this process that no writer drains would wait for a buffer forever.
    if (MT_UNLIKELY(copied_unseen())) {
        b->taken = 0;
        atomic_store_explicit(&b->committed, 0, memory_order_relaxed);
        stop_copied();
        return;
    }
    mt_buffer* nb = mt_core_buffer_get();
    if (nb)
        nb->owner = t;
    // Counted before the next buffer shows: the writer must not take newer events from
    // it while these older ones wait (writer.c, steal_partials).
    atomic_fetch_add_explicit(&t->queued, 1, memory_order_release);
    atomic_store_explicit(&t->cur, nb, memory_order_release);
    mt_core_buffer_hand_over(b);
}

// Publishes the event written at `slot` (next_slot's) to the writer; drops it if the buffer
// was emptied meanwhile (a signal handler forked: the child's capture starts empty, and this
// event, the parent's, is not the child's).
static inline void commit(mt_thread* t, const mt_event* slot) {
    mt_buffer* b = atomic_load_explicit(&t->cur, memory_order_relaxed);
    uint32_t i = b ? atomic_load_explicit(&b->committed, memory_order_relaxed) : 0;
    if (MT_UNLIKELY(!b || &b->ev[i] != slot))
        return;
    uint32_t n = i + 1;
    atomic_store_explicit(&b->committed, n, memory_order_release);
    if (MT_UNLIKELY(n == MT_BUFFER_EVENTS))
        hand_over_full(t, b);
}

static void push(mt_thread* t, const mt_event* ev) {
    mt_event* slot = next_slot(t);
    if (slot) {
        *slot = *ev;
        commit(t, slot);
    }
}

// ---- recording

// This thread paused itself (memtrace_pause), or recording is off for the whole process
// (recording.h): the call is counted, no event recorded.
static inline bool events_off(const mt_thread* t) {
    if (t->paused)
        return true;
    int off = atomic_load_explicit(&mt_events_off, memory_order_relaxed);
    return MT_UNLIKELY(off) && mt_recording_off_slow(off);
}

typedef struct hook_ctx {
    mt_thread* t;
    int saved_errno;
} hook_ctx;

// A thread's first hook: its record, made with the program's signals blocked (a handler's
// heap call would find no record to queue on yet and pass unseen; let in after, it goes to
// the side queue as in any hook). NULL when none can be made. Out of line: once a thread.
static __attribute__((noinline)) mt_thread* enter_first(void) {
    sigset_t all, old;
    sigfillset(&all);
    mt_real.sigprocmask(SIG_BLOCK, &all, &old);
    mt_thread* t = tls_thread; // a handler let in before the block may have made it
    if (!t) {
        mt_guard = 1; // thread_create's own allocations pass through
        t = thread_create();
    }
    mt_guard = t ? MT_GUARD_HOOK : 0;
    mt_real.sigprocmask(SIG_SETMASK, &old, NULL);
    return t;
}

static inline __attribute__((always_inline)) bool enter(hook_ctx* c) {
    // The guard says "inside a hook" only once the thread has a record: a signal handler's
    // heap call then goes to the record's side queue wherever it interrupts the hook. Before,
    // a handler runs a whole hook of its own, as if it had come before this one.
    c->t = tls_thread;
    if (MT_UNLIKELY(!c->t)) {
        if (!(c->t = enter_first()))
            return false;
    } else {
        atomic_signal_fence(memory_order_seq_cst); // the record is read before the guard rises
        mt_guard = MT_GUARD_HOOK;
    }
    c->saved_errno = *c->t->errno_at;
    atomic_store_explicit(&c->t->in_hook, 1, memory_order_relaxed);
    return true;
}

static inline void leave(hook_ctx* c) {
    if (MT_UNLIKELY(atomic_load_explicit(&c->t->nested_n, memory_order_relaxed)))
        mt_core_drain_nested(c->t);
    atomic_store_explicit(&c->t->in_hook, 0, memory_order_release);
    mt_guard = 0;
    *c->t->errno_at = c->saved_errno;
}

static inline __attribute__((always_inline)) uint32_t capture_stack(mt_thread* t) {
    mt_stack st;
    mt_unwind(&st, t->pcs, t->sps, mt_cfg.depth, t->stack_hi);
    if (MT_UNLIKELY(mt_python_frames_on))
        mt_python_frames_add(&st, mt_cfg.depth, t->stack_hi);
    return mt_trie_intern(&st, &t->trie_cache);
}

// Inlined into each record function: a call with seven arguments cost about a fifth of a
// free's hook.
static inline __attribute__((always_inline)) void record_in(mt_thread* t, int heap, int kind,
                                                            uint64_t seq, void* addr, size_t size,
                                                            uint32_t callsite) {
    mt_event* ev = next_slot(t);
    if (!ev)
        return;
    *ev = (mt_event){.seq = seq,
                     .ts = mt_clock_raw(), // converted to ns by the writer
                     .addr = (uint64_t)(uintptr_t)addr,
                     .size = size,
                     .callsite = callsite,
                     .tid = t->tid,
                     .kind = (uint8_t)kind,
                     .heap = (uint8_t)heap};
    commit(t, ev);
}

static inline void record(mt_thread* t, int kind, uint64_t seq, void* addr, size_t size,
                          uint32_t callsite) {
    record_in(t, MT_HEAP_LIBC, kind, seq, addr, size, callsite);
}

// Sampling's cheap path (core.h): a call that records nothing is counted without the rest
// of a hook (no errno to keep: nothing here calls libc). The caller raised the guard, so a
// signal handler's heap call meanwhile went to the side queue, drained here as a hook
// would. False: the whole hook must run (and counts the call).
static __attribute__((noinline)) void drain_after_count(mt_thread* t) {
    hook_ctx c = {.t = t, .saved_errno = *t->errno_at};
    atomic_store_explicit(&t->in_hook, 1, memory_order_relaxed);
    leave(&c);
}

static inline bool counted(mt_thread* t, mt_call call) {
    count_call(t, call);
    if (MT_UNLIKELY(atomic_load_explicit(&t->nested_n, memory_order_relaxed)))
        drain_after_count(t);
    mt_guard = 0;
    return true;
}

// The guard rises only on a thread with a record, as in enter().
static inline mt_thread* guard_if_known(void) {
    mt_thread* t = tls_thread;
    atomic_signal_fence(memory_order_seq_cst);
    if (MT_LIKELY(t))
        mt_guard = MT_GUARD_HOOK;
    return t;
}

bool mt_core_unsampled_alloc(mt_call call, void* addr, size_t size) {
    mt_thread* t = guard_if_known();
    if (!t)
        return false;
    if (!addr || mt_sampling_skips(size))
        return counted(t, call);
    mt_guard = 0;
    return false;
}

bool mt_core_unsampled_free(mt_call call, void* addr) {
    mt_thread* t = guard_if_known();
    if (!t)
        return false;
    if (!addr || mt_sampling_not_in_set(addr))
        return counted(t, call);
    mt_guard = 0;
    return false;
}

void mt_core_on_alloc(int kind, mt_call call, void* addr, size_t size) {
    hook_ctx c;
    if (!enter(&c))
        return;
    count_call(c.t, call);
    if (addr && !events_off(c.t) && mt_sampling_keep_alloc(addr, size)) {
        uint32_t cs = capture_stack(c.t);
        // The seq is taken after the real allocation returned (docs/capture-format.md, Events).
        record(c.t, kind, mt_seq_take(), addr, size, cs);
    }
    leave(&c);
}

void mt_core_on_free(int kind, mt_call call, void* addr, size_t size) {
    hook_ctx c;
    if (!enter(&c))
        return;
    count_call(c.t, call);
    // Sampling: a sampled block leaves the set even while events are off.
    if (addr && mt_sampling_keep_free(addr) && !events_off(c.t))
        record(c.t, kind, mt_seq_take(), addr, size, 0);
    leave(&c);
}

void mt_core_on_realloc(int alloc_kind, int free_kind, mt_call call, uint64_t free_seq, void* old,
                        void* new_ptr, size_t size) {
    // free_seq 0 with old set: sampling, and old was not sampled (shim.c took it out of the
    // set before the real call); a failed realloc puts a sampled old block back.
    if (MT_UNLIKELY(mt_sampling) && free_seq && old && !new_ptr && size)
        mt_sampling_set_insert((uintptr_t)old);
    if (mt_interrupting_hook()) {
        bool freed_old = old && free_seq && (new_ptr || size == 0);
        if (freed_old)
            mt_core_on_nested(free_kind, new_ptr ? -1 : (int)call, old, 0, free_seq, false);
        if (new_ptr || !freed_old)
            mt_core_on_nested(alloc_kind, (int)call, new_ptr, size, 0, true);
        return;
    }
    hook_ctx c;
    if (!enter(&c))
        return;
    count_call(c.t, call);
    if (!events_off(c.t)) {
        // realloc(p, 0) frees p and returns NULL; a failed realloc leaves p live (its
        // reserved seq stays unused: readers allow gaps).
        bool freed_old = old && free_seq && (new_ptr || size == 0);
        if (freed_old)
            record(c.t, free_kind, free_seq, old, 0, 0);
        if (new_ptr && mt_sampling_keep_alloc(new_ptr, size)) {
            uint32_t cs = capture_stack(c.t);
            record(c.t, alloc_kind, mt_seq_take(), new_ptr, size, cs);
        }
    }
    leave(&c);
}

// ---- CPython's allocators (python_heap.c): as the libc hooks

void mt_core_on_heap_alloc(int heap, int kind, mt_call call, void* addr, size_t size) {
    hook_ctx c;
    if (!enter(&c))
        return;
    count_call(c.t, call);
    if (!events_off(c.t) && mt_sampling_keep_alloc(addr, size)) {
        uint32_t cs = capture_stack(c.t);
        record_in(c.t, heap, kind, mt_seq_take(), addr, size, cs);
    }
    leave(&c);
}

void mt_core_on_heap_free(int heap, void* addr) {
    hook_ctx c;
    if (!enter(&c))
        return;
    count_call(c.t, MT_CALL_PY_FREE);
    if (mt_sampling_keep_free(addr) && !events_off(c.t))
        record_in(c.t, heap, MT_KIND_FREE, mt_seq_take(), addr, 0, 0);
    leave(&c);
}

void mt_core_on_heap_realloc(int heap, uint64_t free_seq, void* old, void* new_ptr, size_t size) {
    // A failed realloc leaves old live (CPython's allocators never free on a size of 0).
    if (MT_UNLIKELY(mt_sampling) && free_seq && !new_ptr)
        mt_sampling_set_insert((uintptr_t)old);
    hook_ctx c;
    if (!enter(&c))
        return;
    count_call(c.t, MT_CALL_PY_REALLOC);
    if (!events_off(c.t) && new_ptr) {
        if (free_seq)
            record_in(c.t, heap, MT_KIND_REALLOC_FREE, free_seq, old, 0, 0);
        if (mt_sampling_keep_alloc(new_ptr, size)) {
            uint32_t cs = capture_stack(c.t);
            record_in(c.t, heap, MT_KIND_REALLOC, mt_seq_take(), new_ptr, size, cs);
        }
    }
    leave(&c);
}

// ---- heap calls of signal handlers that interrupted a hook (core.h: the side queue)

// Slot i of t's side queue; NULL past its end (or if the spill block cannot be mapped).
static mt_nested_event* nested_slot(mt_thread* t, uint32_t i, bool may_map) {
    if (i < MT_NESTED_FIXED)
        return &t->nested[i];
    if (i >= MT_NESTED_MAX)
        return NULL;
    mt_nested_event* spill = atomic_load_explicit(&t->nested_spill, memory_order_acquire);
    if (!spill && may_map) {
        // mmap is async-signal-safe; a nested handler may race us to it: one mapping wins.
        void* p = mt_own_pages(mmap(NULL, MT_NESTED_SPILL * sizeof *spill, PROT_READ | PROT_WRITE,
                                    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0),
                               MT_NESTED_SPILL * sizeof *spill);
        if (p == MAP_FAILED)
            return NULL;
        if (atomic_compare_exchange_strong(&t->nested_spill, &spill, (mt_nested_event*)p))
            spill = p;
        else
            munmap(p, MT_NESTED_SPILL * sizeof *spill);
    }
    return spill ? &spill[i - MT_NESTED_FIXED] : NULL;
}

void mt_core_on_nested(int kind, int call, void* addr, size_t size, uint64_t seq, bool stack) {
    mt_thread* t = tls_thread;
    if (!t)
        return;
    // Sampling: a handler's allocations are not sampled (the countdown is the interrupted
    // hook's); its frees are recorded when the block was (a realloc's free half, seq given,
    // was decided by shim.c).
    if (MT_UNLIKELY(mt_sampling) && addr && !seq && (stack || !mt_sampling_keep_free(addr)))
        addr = NULL;
    int saved_errno = *t->errno_at; // the spill block's mmap may set it
    // Handlers nest inside each other, never interleave: a slot taken is written before the
    // handler that took it returns, and the interrupted hook drains only after that.
    uint32_t i = atomic_fetch_add_explicit(&t->nested_n, 1, memory_order_relaxed);
    mt_nested_event* e = nested_slot(t, i, true);
    if (!e) {
        atomic_fetch_add_explicit(&t->nested_lost, 1, memory_order_relaxed);
        *t->errno_at = saved_errno;
        return;
    }
    e->call = call;
    e->npcs = stack && addr ? mt_unwind_fp_only(e->pcs, MT_NESTED_FRAMES, t->stack_hi) : 0;
    e->ev = (mt_event){.seq = addr ? (seq ? seq : mt_seq_take()) : 0,
                       .ts = mt_clock_raw(),
                       .addr = (uint64_t)(uintptr_t)addr,
                       .size = size,
                       .tid = t->tid,
                       .kind = (uint8_t)kind,
                       .heap = MT_HEAP_LIBC};
    *t->errno_at = saved_errno;
}

void mt_core_drain_nested(mt_thread* t) {
    uint32_t done = 0, n = atomic_load_explicit(&t->nested_n, memory_order_acquire);
    do {
        for (; done < n && done < MT_NESTED_MAX; done++) {
            mt_nested_event* e = nested_slot(t, done, false);
            if (!e)
                continue; // its handler could not map the spill block: counted as lost
            if (e->call >= 0)
                count_call(t, (mt_call)e->call);
            if (!e->ev.addr || events_off(t))
                continue;
            if (e->npcs > 0) {
                mt_stack st = {.pcs = e->pcs,
                               .n = e->npcs,
                               .truncated = e->npcs == MT_NESTED_FRAMES,
                               .hash = mt_stackhash_of(e->pcs, e->npcs)};
                e->ev.callsite = mt_trie_intern(&st, &t->trie_cache);
            }
            push(t, &e->ev);
        }
        // A handler that ran meanwhile took the next slot: drain that one too.
    } while (!atomic_compare_exchange_weak_explicit(&t->nested_n, &n, 0, memory_order_acq_rel,
                                                    memory_order_acquire));
}

void mt_core_count_call(mt_call call) {
    hook_ctx c;
    if (!enter(&c))
        return;
    count_call(c.t, call);
    leave(&c);
}

// ---- public annotation API (memtrace.h)

MT_EXPORT void memtrace_impl_mark(const char* name, int what) {
    int state = atomic_load(&mt_state);
    if (mt_guard ||
        (state != MT_STATE_RECORDING && !(state == MT_STATE_DEFERRED && mt_core_start_deferred())))
        return;
    hook_ctx c;
    if (!enter(&c))
        return;
    if (what == MT_MARK_PAUSE)
        c.t->paused = 1;
    else if (what == MT_MARK_RESUME)
        c.t->paused = 0;
    else if (name)
        queue_mark(name, what, mt_clock_raw(), c.t->tid); // the events' clock
    leave(&c);
}

_Atomic uint64_t mt_core_reports_ignored;

MT_EXPORT void memtrace_impl_report(int is_alloc, const void* addr, size_t size) {
    if (!mt_recording() || !addr)
        return;
    if (is_alloc && (uint64_t)size > MT_REPORT_SIZE_MAX) {
        atomic_fetch_add_explicit(&mt_core_reports_ignored, 1, memory_order_relaxed);
        return;
    }
    hook_ctx c;
    if (!enter(&c))
        return;
    if (!events_off(c.t)) {
        uint32_t cs = is_alloc ? capture_stack(c.t) : 0;
        // A heap of their own (MT_HEAP_POOL): they end no block of libc's, nor one of them
        // libc's, and the leak scan's table of malloc'ed blocks never sees them.
        record_in(c.t, MT_HEAP_POOL, is_alloc ? MT_KIND_CUSTOM_ALLOC : MT_KIND_CUSTOM_FREE,
                  mt_seq_take(), (void*)addr, is_alloc ? size : 0, cs);
    }
    leave(&c);
}

// The pool heap's name: a version odd while a name is copied in, so that a reader retries.
static char pool_name[MT_POOL_NAME_MAX] = "pool";
static _Atomic uint64_t pool_name_version = 2;
static atomic_flag pool_name_lock = ATOMIC_FLAG_INIT;

// The names of the heaps a capture has already: a pool may not take one of them.
static bool heap_name_taken(const char* name) {
    static const char* const taken[] = {"libc", "npu", "mmap", "python"};
    for (size_t i = 0; i < sizeof taken / sizeof *taken; i++)
        if (!strcmp(name, taken[i]))
            return true;
    return false;
}

MT_EXPORT void memtrace_impl_heap_name(const char* name) {
    size_t len = name ? strnlen(name, MT_POOL_NAME_MAX) : 0;
    if (len == 0 || len == MT_POOL_NAME_MAX || heap_name_taken(name))
        return; // ignored, as memtrace.h says
    while (atomic_flag_test_and_set_explicit(&pool_name_lock, memory_order_acquire))
        ;
    atomic_fetch_add_explicit(&pool_name_version, 1, memory_order_acq_rel);
    for (size_t i = 0; i <= len; i++) // relaxed stores: a reader checks the version around
        __atomic_store_n(&pool_name[i], i < len ? name[i] : 0, __ATOMIC_RELAXED);
    atomic_fetch_add_explicit(&pool_name_version, 1, memory_order_acq_rel);
    atomic_flag_clear_explicit(&pool_name_lock, memory_order_release);
}

uint64_t mt_core_pool_name(char* buf) {
    for (;;) {
        uint64_t v = atomic_load_explicit(&pool_name_version, memory_order_acquire);
        if (v & 1)
            continue;
        for (size_t i = 0; i < MT_POOL_NAME_MAX; i++)
            buf[i] = __atomic_load_n(&pool_name[i], __ATOMIC_RELAXED);
        atomic_thread_fence(memory_order_acquire);
        if (atomic_load_explicit(&pool_name_version, memory_order_relaxed) == v) {
            buf[MT_POOL_NAME_MAX - 1] = 0;
            return v;
        }
    }
}

// ---- other heaps (mmap_track.c): rare calls, so no side queue for signal handlers

void mt_core_on_heap_ops(int heap, mt_heap_op* ops, int n) {
    hook_ctx c;
    if (!enter(&c))
        return;
    uint32_t here = 0;
    bool walked = false;
    for (int i = 0; i < n && !events_off(c.t); i++) {
        if (ops[i].callsite == MT_CALLSITE_HERE) {
            if (!walked)
                here = capture_stack(c.t);
            walked = true;
            ops[i].callsite = here;
        }
        mt_event ev = {.seq = ops[i].seq ? ops[i].seq : mt_seq_take(),
                       .ts = mt_clock_raw(),
                       .addr = ops[i].addr,
                       .size = ops[i].size,
                       .callsite = ops[i].callsite,
                       .tid = c.t->tid,
                       .kind = (uint8_t)ops[i].kind,
                       .heap = (uint8_t)heap};
        push(c.t, &ev);
    }
    leave(&c);
}
