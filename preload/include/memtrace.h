// SPDX-License-Identifier: MIT
// memtrace's public API: annotations a program may add to its own code.
// Usable without linking libmemtrace: every call goes through a weak symbol and does
// nothing unless the program runs under the tracer (LD_PRELOAD=libmemtrace.so or memtrace).
// All functions are thread-safe; none allocates from the traced heap.
#ifndef MEMTRACE_H
#define MEMTRACE_H

#include <stddef.h>

#define MEMTRACE_VERSION_MAJOR 0
#define MEMTRACE_VERSION_MINOR 1
#define MEMTRACE_VERSION_PATCH 0

#ifdef __cplusplus
extern "C" {
#endif

// Implemented by libmemtrace.so; weak so a program runs the same without it.
void memtrace_impl_mark(const char* name, int what) __attribute__((weak));
void memtrace_impl_report(int is_alloc, const void* addr, size_t size) __attribute__((weak));
void memtrace_impl_heap_name(const char* name) __attribute__((weak));

enum {
    MEMTRACE_MARK_POINT = 0,
    MEMTRACE_RANGE_BEGIN = 1,
    MEMTRACE_RANGE_END = 2,
    MEMTRACE_PAUSE = 3,
    MEMTRACE_RESUME = 4
};

// A named point in time, drawn as a dotted line in plots. The name is copied.
static inline void memtrace_mark(const char* name) {
    if (memtrace_impl_mark)
        memtrace_impl_mark(name, MEMTRACE_MARK_POINT);
}

// A named range of time (shaded band in plots); ranges with the same name pair up per thread.
static inline void memtrace_range_begin(const char* name) {
    if (memtrace_impl_mark)
        memtrace_impl_mark(name, MEMTRACE_RANGE_BEGIN);
}

static inline void memtrace_range_end(const char* name) {
    if (memtrace_impl_mark)
        memtrace_impl_mark(name, MEMTRACE_RANGE_END);
}

// Stop / restart recording this thread's heap calls (e.g. around a known-noisy phase).
static inline void memtrace_pause(void) {
    if (memtrace_impl_mark)
        memtrace_impl_mark(NULL, MEMTRACE_PAUSE);
}

static inline void memtrace_resume(void) {
    if (memtrace_impl_mark)
        memtrace_impl_mark(NULL, MEMTRACE_RESUME);
}

// Blocks of a program's own pool allocator, recorded like malloc/free (with a stack) in a
// heap of their own, "pool": a block reported inside a malloc'ed arena ends nothing, and is
// ended only by memtrace_report_free. Reports count the program's heaps together (the
// arena and its blocks, as heaptrack counts its annotations), and each alone with --heap.
// Macros, not functions: the block's stack starts at the line that calls them.
#define memtrace_report_alloc(addr, size)                                                          \
    (memtrace_impl_report ? memtrace_impl_report(1, (addr), (size)) : (void)0)
#define memtrace_report_free(addr)                                                                 \
    (memtrace_impl_report ? memtrace_impl_report(0, (addr), 0) : (void)0)

// Names the heap of the reported blocks ("pool" unless named), as reports show it
// (memreport ... --heap NAME). The name is copied; the last one given is kept. A name of
// more than 63 bytes, or that of another heap (libc, python, mmap, npu), is ignored.
static inline void memtrace_report_heap_name(const char* name) {
    if (memtrace_impl_heap_name)
        memtrace_impl_heap_name(name);
}

#ifdef __cplusplus
}
#endif

#endif
