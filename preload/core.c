// SPDX-License-Identifier: MIT
// The tracer's core: lifecycle, the recursion guard, per-thread buffers and the record
// functions. Hot path per event: clock, one fetch-add for the global seq, stack walk,
// callsite cache lookup, one 48-byte store into the thread's own buffer. No lock there;
// the queue lock is taken once per full buffer (8192 events).
#include "core.h"

#include "bootstrap.h"
#include "clock.h"
#include "config.h"
#include "maps.h"
#include "output.h"
#include "trie.h"
#include "unwind.h"
#include "writer.h"

#include "memtrace/schema.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

_Static_assert(sizeof(((mt_thread*)0)->pcs) / sizeof(uintptr_t) == MT_UNWIND_MAX_FRAMES,
               "mt_thread.pcs must hold a whole walk");

const char* const mt_call_names[MT_CALL_COUNT_] = {
#define MT_CALL_NAME_(e, name) name,
    MT_CALL_MAP(MT_CALL_NAME_)
#undef MT_CALL_NAME_
};

_Atomic int mt_state;
__thread int mt_guard __attribute__((tls_model("initial-exec")));
static __thread mt_thread* tls_thread __attribute__((tls_model("initial-exec")));

static _Atomic uint64_t seq_counter;
static struct timespec t0;
static _Atomic(mt_thread*) threads_head;
static pthread_key_t thread_key;
static pid_t traced_pid;

// Buffer queues. When MAX_PENDING full buffers wait for the writer, producers wait for it to
// recycle one: this bounds the tracer's memory (64 MiB target) when the program outruns the
// writer. Only full buffers count: the writer always drains those, so a wait always ends,
// however many threads hold a partly filled buffer each.
#define MAX_PENDING 64
// The writer wakes every MEMTRACE_SAMPLE_MS on its own; a producer wakes it early only when
// this many buffers wait. Waking it for every buffer cost a futex call and an IPI to the
// other CPU, per 8192 events, on the program's thread.
#define WAKE_PENDING 16
static pthread_mutex_t queue_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t queue_cond = PTHREAD_COND_INITIALIZER;   // writer: work available
static pthread_cond_t recycle_cond = PTHREAD_COND_INITIALIZER; // producers: buffer freed
static mt_buffer *full_head, *full_tail, *free_pool;
static size_t npending; // buffers in the full queue
static int work_requested;

int64_t mt_core_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)(ts.tv_sec - t0.tv_sec) * 1000000000 + (ts.tv_nsec - t0.tv_nsec);
}

mt_thread* mt_core_threads(void) {
    return atomic_load(&threads_head);
}

// ---- failure: one line, then pass-through

void mt_core_fail(const char* what, const char* why) {
    static _Atomic int reported;
    atomic_store(&mt_state, MT_STATE_STOPPED);
    if (atomic_exchange(&reported, 1))
        return;
    char line[512];
    size_t n = 0;
    const char* parts[] = {"memtrace: ", what, ": ", why, "; the program continues untraced\n"};
    for (size_t i = 0; i < sizeof parts / sizeof *parts; i++)
        for (const char* p = parts[i]; p && *p && n < sizeof line; p++)
            line[n++] = *p;
    // Under the launcher, it says so at the end; the program's stderr stays the program's.
    line[n - 1] = 0;
    if (!mt_output_report_failure(line + strlen("memtrace: "))) {
        line[n - 1] = '\n';
        (void)!write(STDERR_FILENO, line, n);
    }
}

// ---- buffers

static mt_buffer* buffer_get(void) {
    pthread_mutex_lock(&queue_lock);
    mt_buffer* b;
    while (!(b = free_pool) && npending >= MAX_PENDING &&
           atomic_load(&mt_state) == MT_STATE_RECORDING) {
        work_requested = 1;
        pthread_cond_signal(&queue_cond);
        pthread_cond_wait(&recycle_cond, &queue_lock);
    }
    if (b)
        free_pool = b->next;
    pthread_mutex_unlock(&queue_lock);
    if (!b) {
        void* p = mmap(NULL, sizeof(mt_buffer), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                       -1, 0);
        if (p == MAP_FAILED)
            return NULL;
        b = p;
    }
    b->next = NULL;
    b->owner = NULL;
    b->taken = 0;
    atomic_store_explicit(&b->committed, 0, memory_order_relaxed);
    return b;
}

static void buffer_hand_over(mt_buffer* b) {
    pthread_mutex_lock(&queue_lock);
    b->next = NULL;
    if (full_tail)
        full_tail->next = b;
    else
        full_head = b;
    full_tail = b;
    if (++npending >= WAKE_PENDING)
        pthread_cond_signal(&queue_cond);
    pthread_mutex_unlock(&queue_lock);
}

mt_buffer* mt_core_take_full(void) {
    pthread_mutex_lock(&queue_lock);
    mt_buffer* b = full_head;
    if (b) {
        full_head = b->next;
        if (!full_head)
            full_tail = NULL;
        npending--;
    }
    pthread_mutex_unlock(&queue_lock);
    return b;
}

void mt_core_recycle(mt_buffer* b) {
    pthread_mutex_lock(&queue_lock);
    b->next = free_pool;
    free_pool = b;
    pthread_cond_broadcast(&recycle_cond);
    pthread_mutex_unlock(&queue_lock);
}

void mt_core_wait_work(int timeout_ms) {
    struct timespec deadline;
    clock_gettime(CLOCK_REALTIME, &deadline);
    deadline.tv_nsec += (long)timeout_ms * 1000000L;
    deadline.tv_sec += deadline.tv_nsec / 1000000000L;
    deadline.tv_nsec %= 1000000000L;
    pthread_mutex_lock(&queue_lock);
    if (!full_head && !work_requested)
        pthread_cond_timedwait(&queue_cond, &queue_lock, &deadline);
    work_requested = 0;
    pthread_mutex_unlock(&queue_lock);
}

void mt_core_wake_writer(void) {
    pthread_mutex_lock(&queue_lock);
    work_requested = 1;
    pthread_cond_signal(&queue_cond);
    pthread_mutex_unlock(&queue_lock);
}

// ---- threads

static void drain_nested(mt_thread* t);

static void thread_exit(void* arg) {
    mt_thread* t = arg;
    int saved = mt_guard;
    mt_guard = 1;
    prctl(PR_GET_NAME, t->name);
    atomic_store(&t->alive, 0);
    atomic_store(&t->written, 0); // write the row again, with the final name
    if (atomic_load(&t->nested_n))
        drain_nested(t);
    mt_buffer* b = atomic_exchange(&t->cur, NULL);
    if (b)
        buffer_hand_over(b);
    mt_guard = saved;
}

// A thread's first hook: its record, made once (keeps errno: mmap may set it).
static __attribute__((noinline)) mt_thread* thread_create(void) {
    int saved_errno = errno;
    mt_thread* t = NULL;
    void* p = mmap(NULL, sizeof *t, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        goto out;
    t = p;
    t->errno_at = &errno;
    t->tid = (uint32_t)gettid();
    atomic_store(&t->alive, 1);
    pthread_attr_t attr;
    if (pthread_getattr_np(pthread_self(), &attr) == 0) {
        void* addr;
        size_t size;
        if (pthread_attr_getstack(&attr, &addr, &size) == 0) {
            t->stack_lo = (uintptr_t)addr;
            t->stack_hi = (uintptr_t)addr + size;
        }
        pthread_attr_destroy(&attr);
    }
    mt_thread* head = atomic_load(&threads_head);
    do
        t->next = head;
    while (!atomic_compare_exchange_weak(&threads_head, &head, t));
    pthread_setspecific(thread_key, t);
    tls_thread = t;
out:
    errno = saved_errno;
    return t;
}

static inline void count_call(mt_thread* t, mt_call call) {
    uint64_t c = atomic_load_explicit(&t->calls[call], memory_order_relaxed);
    atomic_store_explicit(&t->calls[call], c + 1, memory_order_relaxed);
}

static void push(mt_thread* t, const mt_event* ev) {
    mt_buffer* b = atomic_load_explicit(&t->cur, memory_order_relaxed);
    if (MT_UNLIKELY(!b)) {
        if (!(b = buffer_get()))
            return;
        b->owner = t;
        atomic_store_explicit(&t->cur, b, memory_order_release);
    }
    uint32_t i = atomic_load_explicit(&b->committed, memory_order_relaxed);
    b->ev[i] = *ev;
    atomic_store_explicit(&b->committed, i + 1, memory_order_release);
    if (MT_UNLIKELY(i + 1 == MT_BUFFER_EVENTS)) {
        mt_buffer* nb = buffer_get();
        if (nb)
            nb->owner = t;
        atomic_store_explicit(&t->cur, nb, memory_order_release);
        buffer_hand_over(b);
    }
}

// ---- recording

typedef struct hook_ctx {
    mt_thread* t;
    int saved_errno;
} hook_ctx;

static inline bool enter(hook_ctx* c) {
    // MT_GUARD_HOOK from the first instruction: a signal handler's heap call is recorded
    // through the side queue wherever it interrupts the hook.
    mt_guard = MT_GUARD_HOOK;
    c->t = tls_thread;
    if (MT_UNLIKELY(!c->t)) {
        mt_guard = 1; // thread_create's own allocations pass through
        c->t = thread_create();
        mt_guard = c->t ? MT_GUARD_HOOK : 0;
        if (!c->t)
            return false;
    }
    c->saved_errno = *c->t->errno_at;
    atomic_store_explicit(&c->t->in_hook, 1, memory_order_relaxed);
    return true;
}

static inline void leave(hook_ctx* c) {
    if (MT_UNLIKELY(atomic_load_explicit(&c->t->nested_n, memory_order_relaxed)))
        drain_nested(c->t);
    atomic_store_explicit(&c->t->in_hook, 0, memory_order_release);
    mt_guard = 0;
    *c->t->errno_at = c->saved_errno;
}

static uint32_t capture_stack(mt_thread* t) {
    mt_stack st;
    mt_unwind(&st, t->pcs, mt_cfg.depth, t->stack_hi);
    return mt_trie_intern(&st);
}

static void record(mt_thread* t, int kind, uint64_t seq, void* addr, size_t size,
                   uint32_t callsite) {
    mt_event ev = {.seq = seq,
                   .ts = mt_clock_raw(), // converted to ns by the writer
                   .addr = (uint64_t)(uintptr_t)addr,
                   .size = size,
                   .callsite = callsite,
                   .tid = t->tid,
                   .kind = (uint8_t)kind,
                   .heap = MT_HEAP_LIBC};
    push(t, &ev);
}

uint64_t mt_core_reserve_seq(void) {
    return atomic_fetch_add_explicit(&seq_counter, 1, memory_order_relaxed) + 1;
}

void mt_core_on_alloc(int kind, mt_call call, void* addr, size_t size) {
    hook_ctx c;
    if (!enter(&c))
        return;
    count_call(c.t, call);
    if (addr && !c.t->paused) {
        uint32_t cs = capture_stack(c.t);
        // The seq is taken after the real allocation returned (docs/capture-format.md, Events).
        record(c.t, kind, mt_core_reserve_seq(), addr, size, cs);
    }
    leave(&c);
}

void mt_core_on_free(int kind, mt_call call, void* addr, size_t size) {
    hook_ctx c;
    if (!enter(&c))
        return;
    count_call(c.t, call);
    if (addr && !c.t->paused)
        record(c.t, kind, mt_core_reserve_seq(), addr, size, 0);
    leave(&c);
}

void mt_core_on_realloc(int alloc_kind, int free_kind, mt_call call, uint64_t free_seq, void* old,
                        void* new_ptr, size_t size) {
    if (mt_interrupting_hook()) {
        bool freed_old = old && (new_ptr || size == 0);
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
    if (!c.t->paused) {
        // realloc(p, 0) frees p and returns NULL; a failed realloc leaves p live (its
        // reserved seq stays unused: readers allow gaps).
        bool freed_old = old && (new_ptr || size == 0);
        if (freed_old)
            record(c.t, free_kind, free_seq, old, 0, 0);
        if (new_ptr) {
            uint32_t cs = capture_stack(c.t);
            record(c.t, alloc_kind, mt_core_reserve_seq(), new_ptr, size, cs);
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
        void* p = mmap(NULL, MT_NESTED_SPILL * sizeof *spill, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
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
    e->ev = (mt_event){.seq = addr ? (seq ? seq : mt_core_reserve_seq()) : 0,
                       .ts = mt_clock_raw(),
                       .addr = (uint64_t)(uintptr_t)addr,
                       .size = size,
                       .tid = t->tid,
                       .kind = (uint8_t)kind,
                       .heap = MT_HEAP_LIBC};
    *t->errno_at = saved_errno;
}

static void drain_nested(mt_thread* t) {
    uint32_t done = 0, n = atomic_load_explicit(&t->nested_n, memory_order_acquire);
    do {
        for (; done < n && done < MT_NESTED_MAX; done++) {
            mt_nested_event* e = nested_slot(t, done, false);
            if (!e)
                continue; // its handler could not map the spill block: counted as lost
            if (e->call >= 0)
                count_call(t, (mt_call)e->call);
            if (!e->ev.addr)
                continue;
            if (e->npcs > 0) {
                mt_stack st = {.pcs = e->pcs,
                               .n = e->npcs,
                               .truncated = e->npcs == MT_NESTED_FRAMES,
                               .hash = mt_stackhash_of(e->pcs, e->npcs)};
                e->ev.callsite = mt_trie_intern(&st);
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
    if (atomic_load(&mt_state) != MT_STATE_RECORDING || mt_guard)
        return;
    hook_ctx c;
    if (!enter(&c))
        return;
    if (what == MT_MARK_PAUSE)
        c.t->paused = 1;
    else if (what == MT_MARK_RESUME)
        c.t->paused = 0;
    else if (name)
        mt_writer_mark(name, what, mt_core_now(), c.t->tid);
    leave(&c);
}

MT_EXPORT void memtrace_impl_report(int is_alloc, const void* addr, size_t size) {
    if (!mt_recording() || !addr)
        return;
    hook_ctx c;
    if (!enter(&c))
        return;
    if (!c.t->paused) {
        uint32_t cs = is_alloc ? capture_stack(c.t) : 0;
        record(c.t, is_alloc ? MT_KIND_CUSTOM_ALLOC : MT_KIND_CUSTOM_FREE, mt_core_reserve_seq(),
               (void*)addr, is_alloc ? size : 0, cs);
    }
    leave(&c);
}

// ---- lifecycle

static void start_capture(int child) {
    char path[4096];
    int rc = mt_output_create(child, path, sizeof path);
    if (rc != 0) {
        mt_core_fail(path, strerror(-rc));
        return;
    }
    clock_gettime(CLOCK_MONOTONIC, &t0);
    mt_clock_restart();
    if (mt_writer_start(path) == 0) {
        atomic_store(&mt_state, MT_STATE_RECORDING);
        mt_output_report_capture(path);
    }
}

static void fork_prepare(void) {
    mt_guard++;
    mt_writer_fork_lock(); // first: the writer takes the others while holding it
    pthread_mutex_lock(&queue_lock);
    mt_trie_lock();
    mt_maps_lock();
    mt_unwind_fork_lock();
}

static void fork_parent(void) {
    mt_unwind_fork_unlock();
    mt_maps_unlock();
    mt_trie_unlock();
    pthread_mutex_unlock(&queue_lock);
    mt_writer_fork_unlock();
    mt_guard--;
}

static void fork_child(void) {
    mt_unwind_fork_unlock();
    mt_maps_unlock();
    mt_trie_unlock();
    pthread_mutex_unlock(&queue_lock);
    mt_writer_fork_unlock();
    // Condition variables may hold the state of the parent's waiters (its writer thread),
    // which do not exist here: start them afresh.
    pthread_cond_init(&queue_cond, NULL);
    pthread_cond_init(&recycle_cond, NULL);
    traced_pid = getpid();
    int was_recording = atomic_load(&mt_state) == MT_STATE_RECORDING;
    atomic_store(&mt_state, MT_STATE_STOPPED);
    mt_writer_forget();
    if (was_recording && mt_cfg.follow_fork)
        mt_core_after_fork_child();
    mt_guard--;
}

// A new capture in this process starts with no counts and every thread, stack and mapping
// still to be written to it.
static void forget_written(void) {
    for (mt_thread* t = atomic_load(&threads_head); t; t = t->next) {
        for (int k = 0; k < MT_CALL_COUNT_; k++)
            atomic_store(&t->calls[k], 0);
        atomic_store(&t->written, 0);
    }
    mt_trie_rewrite_all();
    mt_maps_reset_for_child();
}

void mt_core_after_fork_child(void) {
    // Only this thread exists in the child. The parent's pending events and counts belong
    // to the parent's capture: drop them; stacks and maps are written again.
    mt_thread* self = tls_thread;
    for (mt_thread* t = atomic_load(&threads_head); t; t = t->next) {
        if (t != self)
            atomic_store(&t->alive, 0);
        mt_buffer* b = atomic_exchange(&t->cur, NULL);
        if (b && t == self) {
            b->taken = 0;
            atomic_store(&b->committed, 0);
            atomic_store(&t->cur, b);
        }
    }
    if (self)
        self->tid = (uint32_t)gettid();
    // Queued buffers hold the parent's events: leak them here, and stop counting them
    // against the cap, or the child could wait forever for a buffer nobody will recycle.
    full_head = full_tail = NULL;
    npending = 0;
    forget_written();
    start_capture(1);
}

// ---- exec

static _Atomic int stopped_for_exec;

void mt_core_before_exec(void) {
    // A vfork child shares our memory: the capture is its parent's, not its own.
    if (getpid() != traced_pid || atomic_load(&mt_state) != MT_STATE_RECORDING)
        return;
    int saved = errno;
    mt_core_shutdown();
    mt_writer_discard_if_empty();
    atomic_store(&stopped_for_exec, 1);
    errno = saved;
}

void mt_core_after_failed_exec(void) {
    if (!atomic_exchange(&stopped_for_exec, 0))
        return;
    int saved = mt_guard;
    mt_guard = 1;
    forget_written();
    start_capture(0);
    mt_guard = saved;
}

// ---- fatal signals: save the capture, then die as the program would have

static const int fatal_signals[] = {SIGSEGV, SIGBUS, SIGABRT, SIGFPE, SIGILL};

static void on_fatal_signal(int sig) {
    // Not when the crash is inside the tracer itself (its locks may be held) or in a child
    // that shares our memory without being the traced process.
    if (!mt_guard && atomic_load(&mt_state) == MT_STATE_RECORDING && getpid() == traced_pid) {
        int saved = errno;
        mt_guard = 1;
        atomic_store(&mt_state, MT_STATE_STOPPED);
        mt_writer_save_before_death(sig, 1000);
        errno = saved;
    }
    // SA_RESETHAND restored the default action: this raise ends the process (with a core
    // dump where the default action makes one), as without the tracer.
    raise(sig);
}

// Only where the program left the default action: a program's own handler is never
// replaced, and one installed later simply replaces ours.
static void install_fatal_handlers(void) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_fatal_signal;
    sa.sa_flags = SA_RESETHAND | SA_NODEFER;
    sigemptyset(&sa.sa_mask);
    for (size_t i = 0; i < sizeof fatal_signals / sizeof *fatal_signals; i++) {
        struct sigaction old;
        if (sigaction(fatal_signals[i], NULL, &old) == 0 && !(old.sa_flags & SA_SIGINFO) &&
            old.sa_handler == SIG_DFL)
            sigaction(fatal_signals[i], &sa, NULL);
    }
}

__attribute__((constructor)) static void mt_core_ctor(void) {
    mt_core_init();
}

__attribute__((destructor)) static void mt_core_dtor(void) {
    mt_core_shutdown();
}

void mt_core_init(void) {
    static _Atomic int initialised;
    if (atomic_exchange(&initialised, 1))
        return;
    mt_bootstrap_resolve();
    mt_guard = 1;
    traced_pid = getpid();
    mt_config_load();
    mt_clock_init();
    pthread_key_create(&thread_key, thread_exit);
    mt_trie_init();
    clock_gettime(CLOCK_MONOTONIC, &t0);
    mt_maps_init();
    mt_unwind_init(mt_cfg.unwind);
    pthread_atfork(fork_prepare, fork_parent, fork_child);
    start_capture(0);
    if (atomic_load(&mt_state) == MT_STATE_RECORDING)
        install_fatal_handlers();
    mt_guard = 0;
}

void mt_core_shutdown(void) {
    // A vfork child shares our memory and must not touch the parent's capture.
    if (getpid() != traced_pid)
        return;
    int expected = MT_STATE_RECORDING;
    if (!atomic_compare_exchange_strong(&mt_state, &expected, MT_STATE_STOPPED))
        return;
    int saved = mt_guard;
    mt_guard = 1;
    // Let hooks already past their state check finish pushing (bounded wait).
    for (int spin = 0; spin < 1000; spin++) {
        bool busy = false;
        for (mt_thread* t = atomic_load(&threads_head); t; t = t->next)
            busy |= t != tls_thread && atomic_load(&t->in_hook);
        if (!busy)
            break;
        struct timespec ts = {0, 100000};
        nanosleep(&ts, NULL);
    }
    pthread_mutex_lock(&queue_lock);
    pthread_cond_broadcast(&recycle_cond); // release producers waiting for a buffer
    pthread_mutex_unlock(&queue_lock);
    if (tls_thread && atomic_load(&tls_thread->nested_n))
        drain_nested(tls_thread);
    mt_writer_stop();
    mt_guard = saved;
}
