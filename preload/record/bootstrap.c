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
#define RESOLVE_NONE(name)
#define RESOLVE_REQUIRED(name) RESOLVE(name, #name, 1);
#define RESOLVE_OPTIONAL(name) RESOLVE(name, #name, 0);
#define MT_HEAP_HOOK(CALL, name, real, attach) RESOLVE_##real(name)
#define MT_HOOK(name, real, attach) RESOLVE_##real(name)
#include "hooks.def"
#undef RESOLVE
#undef RESOLVE_NONE
#undef RESOLVE_REQUIRED
#undef RESOLVE_OPTIONAL
    void (*real_free)(void*) = r.free;
    r.free = NULL;
    mt_real = r;
    // Publish free last: mt_bootstrap_ready() tests it.
    atomic_thread_fence(memory_order_release);
    mt_real.free = real_free;
}
