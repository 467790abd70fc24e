// SPDX-License-Identifier: MIT
// Python frames in native stacks: the calling thread's CPython (3.11 to 3.13) frames, read
// straight from the interpreter's memory in the hook and placed among the native frames of
// the evaluation loops that run them (docs/tracer.md, Python programs). Each becomes a frame
// of the `[python]` pseudo-mapping whose pc names a (function, file, line).
#ifndef MT_PYTHON_FRAMES_H
#define MT_PYTHON_FRAMES_H

#include "core.h"
#include "unwind.h"

#include <stdbool.h>
#include <stdint.h>

// Pcs of Python frames: MT_PY_PC_BASE + the id of a (function, file, line). The range lies
// in x86-64's non-canonical hole, where no code is, and is positive as an SQLite integer.
#define MT_PY_PC_BASE 0x5059000000000000ull
#define MT_PY_PC_END (MT_PY_PC_BASE + (1ull << 32))

// Set once a CPython whose frames can be read was found (mt_python_frames_init).
extern bool mt_python_frames_on;

// Looks for CPython in the process (its exported symbols) and checks its layout; says on
// stderr, once, why frames are off when a Python that should have them does not.
void mt_python_frames_init(void);
// Adds the calling thread's Python frames to st, a native stack from mt_unwind: each run of
// frames after the native frame whose stack frame holds its evaluation loop; the leaf-most
// `max` frames are kept. st then points into this thread's buffers, valid until its next
// call. No allocation from the traced heap; a lock only when a code object is first named.
void mt_python_frames_add(mt_stack* st, int max, uintptr_t stack_hi);
void mt_python_frames_thread_exit(void);

// Interpreter shutdown: the finalizing thread frees the thread states and frame memory of
// the threads still running with the GIL released, whose walks read them. The free and
// munmap hooks call this first: while the runtime is finalizing, it waits for those walks
// (new ones see the flag and read nothing). munmap is a system call: it also fences.
void mt_python_frames_wait_walks(bool fence);
static inline void mt_python_frames_before_release(bool fence) {
    if (MT_UNLIKELY(mt_python_frames_on))
        mt_python_frames_wait_walks(fence);
}

// CPython's allocators are wrapped (python_heap.c): from now on each code object freed is
// seen, and a frame found again unchanged by a walk need not be checked again while none is.
void mt_python_frames_watch_frees(void);
void mt_python_frames_freeing(const void* p);
// A block CPython's allocators are about to free (python_heap.c's wrapper), not NULL.
static inline void mt_python_frames_before_py_free(const void* p) {
    if (MT_UNLIKELY(mt_python_frames_on))
        mt_python_frames_freeing(p);
}

// Writer side: the names of a Python frame's pc; false for any other pc.
bool mt_python_frames_name(uintptr_t pc, const char** function, const char** file, int* line);
// What the capture says about Python (meta `python`), NULL for a program that is not one.
const char* mt_python_frames_status(void);
// Walks that found no Python frame where the thread state said there were some, or read a
// frame that failed its check (meta `python_walks_failed`).
uint64_t mt_python_frames_failed(void);

#endif
