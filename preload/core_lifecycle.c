// SPDX-License-Identifier: MIT
// When a capture starts and ends: initialisation (it hands the event path the writer's
// functions the event path cannot call), shutdown, fork (the child's own capture), exec
// (finish before the image is replaced) and fatal signals (save the capture, then die as
// the program would have). Never on the event path; called with the guard set, so the
// tracer's own allocations here pass through untraced.
#include "bootstrap.h"
#include "clock.h"
#include "config.h"
#include "core_internal.h"
#include "exit_watch.h"
#include "maps.h"
#include "mmap_track.h"
#include "output.h"
#include "python_frames.h"
#include "python_heap.h"
#include "recording.h"
#include "sampling.h"
#include "say.h"
#include "trie.h"
#include "unwind.h"
#include "write_signals.h"
#include "writer.h"
#include "writer_heap.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

// ---- start

// A forked child's capture is deferred: its clock was set at the fork, its start.
static bool zeroed_at_fork;

// Returns 0 or why the capture could not start (a negative errno).
static int start_capture(int child) {
    char path[4096];
    if (mt_output_root_changed()) { // a fork after chroot: paths name files of the new root
        mt_writer_fail("no capture", "the process changed its root directory (chroot)");
        return -EXDEV;
    }
    int rc = mt_output_create(child, path, sizeof path);
    if (rc != 0) {
        mt_writer_fail(path, strerror(-rc));
        return rc;
    }
    if (!zeroed_at_fork)
        mt_clock_zero();
    zeroed_at_fork = false;
    mt_clock_restart();
    mt_recording_capture_start();
    if ((rc = mt_writer_start(path)) == 0) {
        atomic_store(&mt_state, MT_STATE_RECORDING);
        mt_output_report_capture(path);
        // Root may setuid or chroot at once: the capture's files are opened before that,
        // here. Others leave it to the writer thread, so the program does not wait for it.
        if (geteuid() == 0)
            mt_writer_open_now();
    }
    return rc;
}

// ---- fork

static void fork_prepare(void) {
    // The child's capture names its parent's (parent_capture), which must exist.
    mt_core_undefer();
    mt_guard++;
    mt_writer_fork_lock(); // first: the writer takes the others while holding it
    mt_core_buffers_fork_lock();
    mt_trie_lock();
    mt_maps_lock();
    mt_unwind_fork_lock();
    mt_writer_heap_fork_lock(); // last: a leaf, taken with any of the others held
}

static void fork_parent(void) {
    mt_writer_heap_fork_unlock();
    mt_unwind_fork_unlock();
    mt_maps_unlock();
    mt_trie_unlock();
    mt_core_buffers_fork_unlock();
    mt_writer_fork_unlock();
    mt_guard--;
}

static void fork_child(void) {
    mt_writer_heap_fork_unlock();
    mt_unwind_fork_unlock();
    mt_maps_unlock();
    mt_trie_unlock();
    mt_core_buffers_fork_unlock();
    mt_writer_fork_unlock();
    mt_core_buffers_fork_child();
    mt_mmap_track_fork_child();
    mt_seq_fork_child();
    mt_exit_watch_forget();
    mt_exit_watch_note_main(); // this thread is all the child has
    // The process that forked: getppid() would say 1 if it has ended already.
    pid_t parent = mt_core_traced_pid();
    mt_core_mark_traced(); // this process now, its page emptied in this child too
    int was_recording = atomic_load(&mt_state) == MT_STATE_RECORDING;
    atomic_store(&mt_state, MT_STATE_STOPPED);
    mt_writer_forget(parent);
    if (was_recording && mt_cfg.follow_fork) {
        int saved = errno; // fork returns 0 with errno as it was
        mt_core_after_fork_child();
        errno = saved;
    }
    mt_guard--;
}

// A new capture in this process starts with no counts and every thread, stack and mapping
// still to be written to it (a fork child's stacks from before the fork: those its events
// name).
static void forget_written(bool fork_child) {
    mt_core_forget_counts();
    for (mt_thread* t = mt_core_threads(); t; t = t->next)
        if (!atomic_load(&t->reusable))
            atomic_store(&t->written, 0);
    if (fork_child)
        mt_trie_write_on_use();
    else
        mt_trie_rewrite_all();
    mt_maps_rewrite_all();
}

void mt_core_after_fork_child(void) {
    // Only this thread exists in the child. The parent's pending events and counts belong
    // to the parent's capture: drop them; stacks and maps are written again.
    mt_thread* self = mt_core_this_thread();
    for (mt_thread* t = mt_core_threads(); t; t = t->next) {
        if (t != self && !atomic_load(&t->reusable)) { // free for the child's new threads
            atomic_store(&t->in_hook, 0); // its thread, inside a hook at the fork, is not here
            atomic_store(&t->nested_n, 0);
            atomic_store(&t->alive, 0);
            atomic_store(&t->ending, MT_THREAD_RUNNING);
            atomic_store(&t->written, 1);
            atomic_store(&t->reusable, 1);
        }
        atomic_store(&t->queued, 0); // the queued buffers are dropped below
        mt_buffer* b = atomic_exchange(&t->cur, NULL);
        if (b && t == self) {
            b->taken = 0;
            atomic_store(&b->committed, 0);
            atomic_store(&t->cur, b);
        }
    }
    if (self)
        self->tid = (uint32_t)gettid();
    mt_core_buffers_drop_queued();
    forget_written(true);
    // Most children exec at once, with no heap call before (a shell's commands): a capture
    // made now would be removed by the exec, unused. It is made at the first event, or
    // before the child could lose it; the child's times start now.
    mt_clock_zero();
    zeroed_at_fork = true;
    atomic_store(&mt_state, MT_STATE_DEFERRED);
}

// The deferred capture's start. A thread that comes second waits for the first; signals
// wait meanwhile, so that a handler's heap calls are recorded after it, as the program's.
static bool start_deferred(void) {
    static _Atomic int starting;
    if (getpid() != mt_core_traced_pid()) // a vfork child: its parent's capture, not its own
        return false;
    if (atomic_exchange(&starting, 1)) {
        while (atomic_load(&mt_state) == MT_STATE_DEFERRED)
            sched_yield();
        return atomic_load(&mt_state) == MT_STATE_RECORDING && !mt_guard;
    }
    if (atomic_load(&mt_state) == MT_STATE_DEFERRED) {
        int saved = errno;
        sigset_t all, old;
        sigfillset(&all);
        pthread_sigmask(SIG_SETMASK, &all, &old);
        mt_guard++;
        if (start_capture(1) != 0)
            atomic_store(&mt_state, MT_STATE_STOPPED);
        mt_guard--;
        pthread_sigmask(SIG_SETMASK, &old, NULL);
        errno = saved;
    }
    atomic_store(&starting, 0);
    return atomic_load(&mt_state) == MT_STATE_RECORDING && !mt_guard;
}

// ---- exec

static _Atomic int stopped_for_exec;

void mt_core_before_exec(void) {
    // A vfork child shares our memory: the capture is its parent's, not its own. A deferred
    // capture was never made: nothing to finish, and the new image makes its own.
    if (getpid() != mt_core_traced_pid() || atomic_load(&mt_state) != MT_STATE_RECORDING)
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
    forget_written(false);
    start_capture(0);
    mt_guard = saved;
}

// ---- fatal signals: save the capture, then die as the program would have

static const int fatal_signals[] = {SIGSEGV, SIGBUS, SIGABRT, SIGFPE, SIGILL};

static void on_fatal_signal(int sig) {
    // Not when the crash is inside the tracer itself (its locks may be held) or in a child
    // that shares our memory without being the traced process.
    mt_core_undefer(); // the child's end is in its capture
    if (!mt_guard && atomic_load(&mt_state) == MT_STATE_RECORDING &&
        getpid() == mt_core_traced_pid()) {
        int saved = errno;
        mt_guard = 1;
        atomic_store(&mt_state, MT_STATE_STOPPED);
        mt_exit_watch_stop();
        mt_writer_save_before_death(sig, 1000);
        errno = saved;
    }
    // SA_RESETHAND restored the default action: this raise ends the process (with a core
    // dump where the default action makes one), as without the tracer.
    raise(sig);
}

bool mt_core_is_fatal_handler(void (*handler)(int)) {
    return handler == on_fatal_signal;
}

// Only where the program left the default action: a program's own handler is never
// replaced, and one installed later simply replaces ours. The program sees the default
// action there still (the sigaction and signal hooks).
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

// ---- init and shutdown

// Everything but the capture itself, once per process (at load, or at the first attach).
static void init_modules(void) {
    static _Atomic int initialised;
    if (atomic_exchange(&initialised, 1))
        return;
    mt_core_on_failure(mt_writer_fail); // before a copied child can be seen
    mt_core_on_mark(mt_writer_mark);
    mt_core_on_deferred_start(start_deferred);
    mt_core_mark_traced();
    if (gettid() == mt_core_traced_pid()) // not an attach's thread
        mt_exit_watch_note_main();
    mt_config_load();
    mt_sampling_init();
    mt_clock_init();
    mt_core_threads_init();
    mt_seq_init();
    mt_trie_init();
    mt_clock_zero();
    mt_maps_init();
    mt_unwind_init(mt_cfg.unwind);
    mt_python_frames_init();
    pthread_atfork(fork_prepare, fork_parent, fork_child);
}

void mt_core_init(void) {
    static _Atomic int initialised;
    if (atomic_exchange(&initialised, 1))
        return;
    int saved = errno; // 0 as main starts (ISO C); the start-up's failed calls leave theirs
    mt_bootstrap_resolve();
    mt_guard = 1;
    mt_say_note_stderr(); // not for an attach: its stderr is never written
    mt_output_note_root();
    init_modules();
    mt_python_heap_init(); // not for an attach: it wraps them its own way (mt_python_heap_attach)
    mt_recording_init();   // not for an attach: the program's signals stay as they are
    mt_writer_set_finisher(mt_core_shutdown); // how MEMTRACE_LEAK_SIGNAL ends the capture
    start_capture(0);
    if (atomic_load(&mt_state) == MT_STATE_RECORDING)
        install_fatal_handlers();
    mt_guard = 0;
    errno = saved;
}

// No fatal-signal handlers here: the program's signal dispositions stay as they are.
int mt_core_attach(const char* output, const char* report) {
    if (atomic_load(&mt_state) == MT_STATE_RECORDING)
        return -EALREADY;
    mt_bootstrap_resolve();
    bool again = mt_core_traced_pid() != 0;
    init_modules();
    if (again) { // this attach's settings, read anew (memtrace_attach gave them)
        forget_written(false);
        mt_config_load();
        mt_sampling_init();
        mt_sampling_forget(); // the blocks sampled before may have been freed since
        mt_unwind_init(mt_cfg.unwind);
    }
    mt_python_heap_attach(); // before the capture, which says whether it has a python heap
    snprintf(mt_cfg.pattern, sizeof mt_cfg.pattern, "%s", output);
    mt_cfg.pattern_has_pid = strstr(mt_cfg.pattern, "%p") != NULL;
    mt_cfg.start_dir[0] = 0;
    snprintf(mt_cfg.report, sizeof mt_cfg.report, "%s", report);
    atomic_store(&mt_core_attached, 1);
    int rc = start_capture(0);
    return atomic_load(&mt_state) == MT_STATE_RECORDING ? 0 : rc ? rc : -EIO;
}

void mt_core_shutdown(void) {
    // A vfork child shares our memory and must not touch the parent's capture.
    if (getpid() != mt_core_traced_pid())
        return;
    // A child that ends with nothing recorded is still a process of the tree.
    mt_core_undefer();
    int expected = MT_STATE_RECORDING;
    if (!atomic_compare_exchange_strong(&mt_state, &expected, MT_STATE_STOPPED))
        return;
    int saved = mt_guard;
    mt_guard = 1;
    sigset_t old_mask; // held until the capture is finished: the watcher is gone
    mt_write_signals_end_hold(&old_mask);
    mt_exit_watch_stop(); // the capture is finished here
    mt_thread* self = mt_core_this_thread();
    // Let hooks already past their state check finish pushing (bounded wait).
    for (int spin = 0; spin < 1000; spin++) {
        bool busy = false;
        for (mt_thread* t = mt_core_threads(); t; t = t->next)
            busy |= t != self && atomic_load(&t->in_hook);
        if (!busy)
            break;
        struct timespec ts = {0, 100000};
        nanosleep(&ts, NULL);
    }
    mt_core_buffers_release_waiters(); // producers waiting for a buffer see the state
    if (self && atomic_load(&self->nested_n))
        mt_core_drain_nested(self);
    mt_writer_stop();
    mt_write_signals_end_release(&old_mask); // a signal sent meanwhile acts now
    mt_guard = saved;
}
