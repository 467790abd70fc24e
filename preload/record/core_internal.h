// SPDX-License-Identifier: MIT
// What the core's three files share, and nothing else includes: core.c (the event path:
// per-thread records, the record functions, the signal-handler side queue),
// core_buffers.c (the queues of buffers between the threads and the writer) and
// core_lifecycle.c (start, stop, fork, exec, fatal signals).
#ifndef MT_CORE_INTERNAL_H
#define MT_CORE_INTERNAL_H

#include "core.h"

// ---- core.c

// This thread's record, or NULL before its first hook.
mt_thread* mt_core_this_thread(void);
void mt_core_forget_counts(void);
// Creates the key whose destructor hands an exiting thread's buffer to the writer.
void mt_core_threads_init(void);
// Pushes the side queue's events of t (core.h) into t's buffer.
void mt_core_drain_nested(mt_thread* t);
// This process is the traced one from now on (at initialisation, in fork's child): a child
// made from it without fork() (clone() without CLONE_VM, clone3, a raw fork system call) is
// a copy whose buffers no writer drains, and stops recording at its first buffer.
void mt_core_mark_traced(void);
// The traced process (mt_core_mark_traced), 0 before.
pid_t mt_core_traced_pid(void);
// What the event path asks of the floors above, which it cannot call: fail the capture
// (report once, stop tracing), queue a user mark (memtrace.h) for the writer. Registered
// before the first capture starts.
void mt_core_on_failure(void (*fail)(const char* what, const char* why));
void mt_core_on_mark(void (*mark)(const char* name, int what, int64_t ts, uint32_t tid));

// ---- core_buffers.c

// A buffer to fill: from the pool, or newly mapped; waits while too many full buffers wait
// for the writer. NULL when no memory can be mapped.
mt_buffer* mt_core_buffer_get(void);
// Queues a full (or a dead thread's last) buffer for the writer.
void mt_core_buffer_hand_over(mt_buffer* b);
// fork: the queue lock must not be held by another thread when the child starts.
void mt_core_buffers_fork_lock(void);
void mt_core_buffers_fork_unlock(void);
// Fork child, after the unlock: starts the condition variables afresh (they may hold the
// state of the parent's waiters, which do not exist here).
void mt_core_buffers_fork_child(void);
// Fork child starting its own capture: forgets the parent's queued buffers.
void mt_core_buffers_drop_queued(void);

#endif
