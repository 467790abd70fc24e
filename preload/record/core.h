// SPDX-License-Identifier: MIT
// The tracer's core: state, per-thread event buffers, the recursion guard, and the
// record functions the hooks call. A C API (like heaptrack's libheaptrack.h) so unit tests
// can drive it without LD_PRELOAD. Everything here may run inside malloc: no stdio, no
// getenv after init, no allocation from the traced heap.
#ifndef MT_CORE_H
#define MT_CORE_H

#include "bootstrap.h"
#include "seq.h"

#include "memtrace/event.h"

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define MT_EXPORT __attribute__((visibility("default")))
#define MT_LIKELY(x) __builtin_expect(!!(x), 1)
#define MT_UNLIKELY(x) __builtin_expect(!!(x), 0)

// Entry points counted in call_count (free(NULL) and failed calls included): hooks.def's
// heap hooks.
typedef enum mt_call {
#define MT_HEAP_HOOK(CALL, name, real, attach) MT_CALL_##CALL,
#include "hooks.def"
    // CPython's allocators (python_heap.c): wrapped with PyMem_SetAllocator, not hooked.
    MT_CALL_PY_MALLOC,
    MT_CALL_PY_CALLOC,
    MT_CALL_PY_REALLOC,
    MT_CALL_PY_FREE,
    MT_CALL_COUNT_
} mt_call;

extern const char* const mt_call_names[MT_CALL_COUNT_];

// Events per buffer; a thread hands a full buffer to the writer and takes a fresh one.
#define MT_BUFFER_EVENTS 8192

typedef struct mt_thread mt_thread;

// A signal handler that allocates while one of its thread's hooks is recording cannot use
// the thread's buffer or walk state (both are mid-update): its events wait in a side queue
// that the interrupted hook drains. The queue's first MT_NESTED_FIXED slots live in the
// thread's record; a hook that lasts (waiting for the writer, say) while signals keep coming
// spills into a larger block, mapped once by the handler that needs it. Beyond that, events
// are counted (meta events_lost), not recorded.
#define MT_NESTED_FIXED 16
#define MT_NESTED_SPILL 4096
#define MT_NESTED_MAX (MT_NESTED_FIXED + MT_NESTED_SPILL)
#define MT_NESTED_FRAMES 32

typedef struct mt_nested_event {
    mt_event ev;
    int call; // the entry point to count, or -1 (the free half of a realloc)
    int npcs; // frames walked in the handler (frame pointers only), outermost first
    uintptr_t pcs[MT_NESTED_FRAMES];
} mt_nested_event;

typedef struct mt_buffer {
    struct mt_buffer* next; // queue link (full queue or free pool)
    mt_thread* owner;
    _Atomic uint32_t committed; // events written, published by the owner (release)
    uint32_t taken;             // events already encoded by the writer (writer only)
    // Writer only: `taken` at the writer's last commit, the list of buffers it took events
    // from since, and whether this one is drained, to be recycled at the commit (writer.c).
    uint32_t taken_committed;
    struct mt_buffer* uncommitted_next;
    bool uncommitted, drained;
    mt_event ev[MT_BUFFER_EVENTS];
} mt_buffer;

struct mt_thread {
    // Registry list, never unlinked: once a thread's task is gone and the writer has
    // written its last events and row, the record is retired and a new thread takes it
    // (mt_core_retire), so records and their stack caches number the threads alive at
    // once, not all that ran.
    mt_thread* next;
    uint32_t tid;
    int* errno_at; // this thread's errno (saves a call into libc per hook)
    _Atomic int alive;
    _Atomic int in_hook;       // set while a hook of this thread is recording
    _Atomic uint32_t nested_n; // side queue (below): slots taken (may exceed MT_NESTED_MAX)
    _Atomic(mt_buffer*) cur;   // the buffer being filled (the writer may steal from it)
    _Atomic uint32_t queued;   // its full buffers the writer has not taken yet
    _Atomic uint64_t calls[MT_CALL_COUNT_]; // owner-only increments, read by the writer
    _Atomic int written;                    // thread row written by the writer
    _Atomic int ending;                     // enum mt_thread_end
    _Atomic int reusable;                   // retired by the writer: free for a new thread
    void* trie_cache; // the thread's stack cache (trie.h), kept for the record's next one
    int paused;
    char name[16];                // thread name at exit (the writer may be too late)
    uintptr_t pcs[1100];          // stack walk scratch (MT_UNWIND_MAX_FRAMES), off the
                                  // program's stack: its threads may have small stacks
    uintptr_t sps[1100];          // the walk's stack pointers (unwind.h)
    uintptr_t stack_hi;           // the top of its stack: walks read below it
    _Atomic uint64_t nested_lost; // events beyond the side queue (meta events_lost)
    mt_nested_event nested[MT_NESTED_FIXED];
    _Atomic(mt_nested_event*) nested_spill; // MT_NESTED_SPILL more slots, mapped on demand
};

// How far a thread is from its end. Its exit (a thread-specific data destructor) is not its
// last heap call: glibc frees its own thread data later, through our hooks, so the record
// stays the thread's until the writer finds its task gone (mt_core_task_gone).
enum mt_thread_end {
    MT_THREAD_RUNNING = 0,
    MT_THREAD_EXITING = 1, // past its exit; its name is kept in `name`
    MT_THREAD_GONE = 2,    // its task is gone (set by the writer): no event can follow
};

// Global state (mt_state): hooks pass through until it is recording.
enum mt_state_value {
    MT_STATE_INIT = 0, // not yet initialised
    MT_STATE_RECORDING = 1,
    MT_STATE_STOPPED = 2, // shut down, or failed
    // A forked child whose capture is not made yet: it starts at the child's first event,
    // or before anything that could lose it (mt_core_start_deferred).
    MT_STATE_DEFERRED = 3,
};
extern _Atomic int mt_state;

static inline bool mt_interrupting_hook(void) {
    return MT_UNLIKELY(mt_guard == MT_GUARD_HOOK);
}

// A heap call before the library's constructor ran (another library's constructor, the
// loader): starts the capture at that first call when the library is preloaded, and says
// whether it records now (autostart.c; absent where a test links the core alone).
__attribute__((weak)) bool mt_core_start_early(void);

// A forked child's capture, made now if it was deferred (by the function the lifecycle gave,
// core_lifecycle.c): at its first event, and before a call after which it could not be made
// or would be lost (set*id, chroot, unshare, setns, prctl, fork, exit, a fatal signal). Says
// whether it records now.
bool mt_core_start_deferred(void);
void mt_core_on_deferred_start(bool (*start)(void));

// Before a call after which a deferred capture could not be made, or not where it should be.
static inline void mt_core_undefer(void) {
    if (MT_UNLIKELY(atomic_load(&mt_state) == MT_STATE_DEFERRED) && !mt_guard)
        mt_core_start_deferred();
}

// Recording, or a forked child whose capture is deferred: what it records later (modules
// loaded and unloaded) is kept up to date now.
static inline bool mt_core_tracing(void) {
    int state = atomic_load(&mt_state);
    return state == MT_STATE_RECORDING || state == MT_STATE_DEFERRED;
}

static inline bool mt_recording(void) {
    int state = atomic_load_explicit(&mt_state, memory_order_relaxed);
    if (MT_LIKELY(state == MT_STATE_RECORDING))
        return !mt_guard;
    if (mt_guard)
        return false;
    if (state == MT_STATE_DEFERRED)
        return mt_core_start_deferred();
    return MT_UNLIKELY(state == MT_STATE_INIT) && mt_core_start_early && mt_core_start_early();
}

// Record functions, called by the hooks only when mt_recording() was true. They set the
// guard, keep errno, count the call, and push an event when `addr` is not NULL.
void mt_core_on_alloc(int kind, mt_call call, void* addr, size_t size);
void mt_core_on_free(int kind, mt_call call, void* addr, size_t size);
// realloc family: seq for the free is taken before the real call (mt_seq_take, seq.h),
// both events are pushed after it returns.
void mt_core_on_realloc(int alloc_kind, int free_kind, mt_call call, uint64_t free_seq, void* old,
                        void* new_ptr, size_t size);
void mt_core_count_call(mt_call call);
// Sampling (sampling.h), before mt_core_on_alloc / mt_core_on_free: counts a call that
// records nothing (an allocation the countdown skips, the free of a block not sampled) and
// returns true; false when the record function must run.
bool mt_core_unsampled_alloc(mt_call call, void* addr, size_t size);
bool mt_core_unsampled_free(mt_call call, void* addr);
// A heap call made by a signal handler that interrupted a recording hook of this thread
// (mt_interrupting_hook()). `call` < 0: count no call. `seq` 0: take one now.
void mt_core_on_nested(int kind, int call, void* addr, size_t size, uint64_t seq, bool stack);

// CPython's allocators (python_heap.c), called when mt_recording() was true: the events of
// `heap` as the libc record functions push theirs (sampled alike), the calls counted as
// python_malloc, python_calloc, python_realloc and python_free.
// realloc: free_seq is 0 when old is NULL or was not sampled; nothing is recorded when the
// call failed (new_ptr NULL: old stays live).
void mt_core_on_heap_alloc(int heap, int kind, mt_call call, void* addr, size_t size);
void mt_core_on_heap_free(int heap, void* addr);
void mt_core_on_heap_realloc(int heap, uint64_t free_seq, void* old, void* new_ptr, size_t size);

// Events of a heap other than libc's (mmap_track.c), pushed in the order given; nothing if
// the thread is paused. seq 0: take one now. callsite MT_CALLSITE_HERE: this call's stack,
// walked once and written back into the op.
#define MT_CALLSITE_HERE UINT32_MAX
typedef struct mt_heap_op {
    int kind;
    uint64_t seq;
    uintptr_t addr;
    size_t size;
    uint32_t callsite;
} mt_heap_op;
void mt_core_on_heap_ops(int heap, mt_heap_op* ops, int n);

// memtrace_impl_mark's `what`: the values of memtrace.h's public enum (a stable ABI; that
// header is not included here because it declares memtrace_impl_mark weak).
enum mt_mark_what {
    MT_MARK_POINT = 0,
    MT_MARK_RANGE_BEGIN = 1,
    MT_MARK_RANGE_END = 2,
    MT_MARK_PAUSE = 3,
    MT_MARK_RESUME = 4,
};

// The annotation API's implementation (memtrace.h calls these through weak symbols).
MT_EXPORT void memtrace_impl_mark(const char* name, int what);
MT_EXPORT void memtrace_impl_report(int is_alloc, const void* addr, size_t size);
MT_EXPORT void memtrace_impl_heap_name(const char* name);
// The name of heap MT_HEAP_POOL (the reported blocks'), as the program last gave it ("pool"
// unless it did), copied into buf (MT_POOL_NAME_MAX bytes); returns its version, which
// changes with each name given, so that the writer rewrites the heap's row.
#define MT_POOL_NAME_MAX 64
uint64_t mt_core_pool_name(char* buf);
// A reported size above this is not recorded but counted (meta reports_ignored): it is more
// than any Linux address space (2^56 bytes: x86-64 with 5-level paging), a program's bug,
// and readers bound what a heap allocates in all (docs/capture-format.md, "Limits").
#define MT_REPORT_SIZE_MAX (UINT64_C(1) << 56)
extern _Atomic uint64_t mt_core_reports_ignored;

// Lifecycle.
// Settings (MEMTRACE_*), capture, writer thread. Called once, by libmemtrace.so's
// constructor (autostart.c) or by a unit test that links the core without the shim.
void mt_core_init(void);
void mt_core_shutdown(void); // destructor / _exit: flush everything and finalize
// memtrace --pid (attach.c): a capture at `output` from now on, in a process the library was
// injected into; again after a detach. 0, -EALREADY, or -EIO (already reported).
int mt_core_attach(const char* output, const char* report);
extern _Atomic int mt_core_attached; // the capture started in a running process
void mt_core_after_fork_child(void);
// exec: finish the capture before the image is replaced; start a new one if it was not.
// The same around a seccomp filter (shim_ns.c), which may refuse the writer's calls.
void mt_core_before_exec(void);
void mt_core_after_failed_exec(void);
// Whether `handler` is the tracer's own for fatal signals (installed where the program left
// the default action, so the program must see the default action there).
bool mt_core_is_fatal_handler(void (*handler)(int));

// For the writer: the registry of threads.
mt_thread* mt_core_threads(void);
// Writer only. Whether an exiting thread's task has ended (then it calls no hook again).
bool mt_core_task_gone(const mt_thread* t);
// Writer only, once a gone thread's last events and row are written: its counts join the
// retired totals and the record becomes free for a new thread.
void mt_core_retire(mt_thread* t);
// Writer only: heap calls counted so far by all threads, exited ones included, and events
// lost past the side queues (core.h, above).
void mt_core_call_totals(uint64_t total[MT_CALL_COUNT_], uint64_t* lost);

// Buffers handed over by threads, in hand-over order; the writer drains them. The buffer
// taken (or NULL) is stored in *hand while the queue still holds it: a writer killed at any
// moment leaves each buffer in the queue or in its hand (mt_writer_finish_orphaned).
mt_buffer* mt_core_take_full(mt_buffer* _Atomic* hand);
void mt_core_recycle(mt_buffer* b);
// Waits (up to timeout_ms) until some buffer is full or a flush is requested.
void mt_core_wait_work(int timeout_ms);
// The process ended unseen (mt_writer_finish_orphaned): threads killed while waiting left
// the condition variables in a state where a signal waits for them; start them afresh.
void mt_core_buffers_forget_waiters(void);
// The same, and a queue lock that a thread died holding made anew (its queue rebuilt from
// the head, the pool of drained buffers dropped): the exit watcher's, with every thread gone.
void mt_core_buffers_take_over(void);
// Recording stopped (shutdown, a failed capture): wakes producers waiting for a buffer, so
// they see the state and stop waiting; the writer recycles no buffer once it has failed.
void mt_core_buffers_release_waiters(void);
// Wakes the writer now (stop requests, marks).
void mt_core_wake_writer(void);

#endif
