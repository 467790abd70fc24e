// SPDX-License-Identifier: MIT
// The writer thread's heap: what the tracer allocates in the writer thread (SQLite, zstd, the
// capture writer, glibc's own calls there) and everything SQLite allocates on any thread.
// glibc gives a thread that allocates an arena of its own, 64 MiB of address space (128 MiB
// for a moment), which a program under ulimit -v would lose: this heap takes pages from
// mmap as it needs them instead. Size classes on 1 MiB chunks, never returned; blocks over
// 64 KiB mapped each on its own. Thread-safe (one lock, a leaf: held by nothing else it
// calls); never calls malloc.
#ifndef MT_WRITER_HEAP_H
#define MT_WRITER_HEAP_H

#include <stdbool.h>
#include <stddef.h>

// Set in the writer thread: the shim sends its heap calls here. A block of this heap may be
// freed on any thread, always with the guard set (the tracer's own frees): the shim asks
// mt_writer_heap_owns there.
extern __thread bool mt_writer_heap_thread __attribute__((tls_model("initial-exec")));

// As malloc, calloc, realloc, memalign (any power-of-two alignment) and free: NULL and
// errno ENOMEM when no pages can be mapped.
void* mt_writer_heap_malloc(size_t size);
void* mt_writer_heap_calloc(size_t n, size_t size);
void* mt_writer_heap_realloc(void* p, size_t size);
void* mt_writer_heap_memalign(size_t align, size_t size);
void mt_writer_heap_free(void* p);
// The usable size of a block of this heap.
size_t mt_writer_heap_size(const void* p);
// The size a request of `size` bytes gets (SQLite's xRoundup).
size_t mt_writer_heap_roundup(size_t size);
// Whether p is a block of this heap. Lock-free; a few compares per mapping.
bool mt_writer_heap_owns(const void* p);

// After the program ended unseen, on its exit watcher (exit_watch.h): a lock that a thread
// died holding is made anew, and the free lists and the chunk being cut are dropped (their
// memory left unused): the heap goes on from new chunks.
void mt_writer_heap_take_over(void);

// Around fork (core_lifecycle.c): taken last, after every lock that may be held while
// allocating here.
void mt_writer_heap_fork_lock(void);
void mt_writer_heap_fork_unlock(void);

#endif
