// SPDX-License-Identifier: MIT
// Resolution of the real allocator and the bootstrap arena. abort() only if the real
// allocator cannot be found: nothing else can serve the program then.
#include "bootstrap.h"

#include <dlfcn.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

mt_real_fns mt_real;
__thread int mt_guard __attribute__((tls_model("initial-exec")));

// dlsym's own calloc (its error buffer) and little else: 16 KiB is generous.
#define ARENA_SIZE (16 * 1024)
static _Alignas(64) unsigned char arena[ARENA_SIZE];
static _Atomic size_t arena_used;

void* mt_bootstrap_alloc(size_t size) {
    // Each block: 16-byte header holding the size, then 16-aligned data.
    size_t need = (size + 15) / 16 * 16 + 16;
    size_t off = atomic_fetch_add(&arena_used, need);
    if (off + need > ARENA_SIZE)
        return NULL;
    unsigned char* p = arena + off;
    memcpy(p, &size, sizeof size);
    return p + 16;
}

bool mt_bootstrap_owns(const void* p) {
    return (const unsigned char*)p >= arena && (const unsigned char*)p < arena + ARENA_SIZE;
}

size_t mt_bootstrap_size(const void* p) {
    size_t n;
    memcpy(&n, (const unsigned char*)p - 16, sizeof n);
    return n;
}

static void* must(const char* name) {
    void* f = dlsym(RTLD_NEXT, name);
    if (!f) {
        static const char msg[] = "memtrace: cannot resolve the real allocator; aborting\n";
        (void)!write(2, msg, sizeof msg - 1);
        abort();
    }
    return f;
}

void mt_bootstrap_resolve(void) {
    static _Atomic int resolving;
    if (mt_bootstrap_ready() || atomic_exchange(&resolving, 1))
        return;
    mt_real_fns r;
    memset(&r, 0, sizeof r);
    // dlsym returns void*; ISO C has no cast to function pointers, memcpy is the portable way.
#define RESOLVE(field, name, required)                                                             \
    do {                                                                                           \
        void* f_ = (required) ? must(name) : dlsym(RTLD_NEXT, name);                               \
        memcpy(&r.field, &f_, sizeof f_);                                                          \
    } while (0)
    RESOLVE(malloc, "malloc", 1);
    RESOLVE(calloc, "calloc", 1);
    RESOLVE(realloc, "realloc", 1);
    RESOLVE(posix_memalign, "posix_memalign", 1);
    RESOLVE(aligned_alloc, "aligned_alloc", 1);
    RESOLVE(memalign, "memalign", 1);
    RESOLVE(valloc, "valloc", 1);
    RESOLVE(pvalloc, "pvalloc", 1);
    RESOLVE(malloc_usable_size, "malloc_usable_size", 1);
    RESOLVE(free_sized, "free_sized", 0);
    RESOLVE(free_aligned_sized, "free_aligned_sized", 0);
    RESOLVE(dlopen, "dlopen", 1);
    RESOLVE(dlclose, "dlclose", 1);
    RESOLVE(exit_, "_exit", 1);
    RESOLVE(sigprocmask, "sigprocmask", 1);
    RESOLVE(sigaction, "sigaction", 1);
    RESOLVE(signal, "signal", 1);
    RESOLVE(pipe2, "pipe2", 1);
    RESOLVE(execve, "execve", 1);
    RESOLVE(execvpe, "execvpe", 1);
    RESOLVE(fexecve, "fexecve", 1);
    RESOLVE(mmap, "mmap", 1);
    RESOLVE(munmap, "munmap", 1);
    RESOLVE(mremap, "mremap", 1);
    void (*real_free)(void*);
    {
        void* f_ = must("free");
        memcpy(&real_free, &f_, sizeof f_);
    }
#undef RESOLVE
    mt_real = r;
    // Publish free last: mt_bootstrap_ready() tests it.
    atomic_thread_fence(memory_order_release);
    mt_real.free = real_free;
}
