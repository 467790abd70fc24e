// SPDX-License-Identifier: MIT
// The real allocator, resolved with dlsym(RTLD_NEXT); and the static arena that serves the
// allocations dlsym itself makes while we resolve (free() must recognise and drop those).
#ifndef MT_BOOTSTRAP_H
#define MT_BOOTSTRAP_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/mman.h>
#include <sys/types.h>

typedef struct mt_real_fns {
    void* (*malloc)(size_t);
    void* (*calloc)(size_t, size_t);
    void* (*realloc)(void*, size_t);
    void (*free)(void*);
    int (*posix_memalign)(void**, size_t, size_t);
    void* (*aligned_alloc)(size_t, size_t);
    void* (*memalign)(size_t, size_t);
    void* (*valloc)(size_t);
    void* (*pvalloc)(size_t);
    size_t (*malloc_usable_size)(void*);
    void (*free_sized)(void*, size_t);
    void (*free_aligned_sized)(void*, size_t, size_t);
    void* (*dlopen)(const char*, int);
    int (*dlclose)(void*);
    void (*_exit)(int) __attribute__((noreturn));
    int (*sigprocmask)(int, const sigset_t*, sigset_t*);
    int (*sigaction)(int, const struct sigaction*, struct sigaction*);
    void (*(*signal)(int, void (*)(int)))(int);
    int (*pipe2)(int[2], int);
    int (*execve)(const char*, char* const[], char* const[]);
    int (*execvpe)(const char*, char* const[], char* const[]);
    int (*fexecve)(int, char* const[], char* const[]);
    void* (*mmap)(void*, size_t, int, int, int, off_t);
    int (*munmap)(void*, size_t);
    void* (*mremap)(void*, size_t, size_t, int, ...);
} mt_real_fns;

extern mt_real_fns mt_real;

// Non-zero: the thread is inside the tracer, whose own heap calls pass through untraced.
// MT_GUARD_HOOK: inside a hook that is recording; a heap call seen then comes from a signal
// handler of the program, and is recorded through the side queue (core.h's
// mt_core_on_nested).
extern __thread int mt_guard __attribute__((tls_model("initial-exec")));
#define MT_GUARD_HOOK 2

// Resolves every real function once (idempotent, thread-safe enough for start-up: the
// first caller resolves, concurrent early callers are served from the arena).
void mt_bootstrap_resolve(void);
static inline bool mt_bootstrap_ready(void) {
    return mt_real.free != NULL;
}
void* mt_bootstrap_alloc(size_t size);
bool mt_bootstrap_owns(const void* p);
size_t mt_bootstrap_size(const void* p);

// Marks pages the tracer mapped for itself: the leak scan reads the process's anonymous
// memory as roots, and the tracer's tables hold every block's address (docs/leaks.md). A
// core dump leaves them out too. Returns p as given (MAP_FAILED stays MAP_FAILED).
static inline void* mt_own_pages(void* p, size_t len) {
    if (p != MAP_FAILED)
        madvise(p, len, MADV_DONTDUMP);
    return p;
}

#endif
