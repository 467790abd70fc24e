// SPDX-License-Identifier: MIT
// The interposed libc symbols and nothing else: each one calls the real function and
// reports to the core. Record a free before the real free and an allocation after the real
// allocation returns (docs/capture-format.md, Events), so another thread's reuse of an
// address pairs right.
// Built with -fno-builtin-malloc and relatives so the compiler cannot rewrite these calls.
#include "bootstrap.h"
#include "config.h"
#include "core.h"
#include "fdguard.h"
#include "inject.h"
#include "maps.h"
#include "mmap_track.h"
#include "python_frames.h"
#include "python_heap.h"
#include "sampling.h"
#include "unwind.h"
#include "write_signals.h"
#include "writer_heap.h"

#include "memtrace/schema.h"

#include <dlfcn.h>
#include <errno.h>
#include <malloc.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

static inline void ensure_real(void) {
    if (MT_UNLIKELY(!mt_bootstrap_ready()))
        mt_bootstrap_resolve();
}

// Recorded when tracing; or, when a signal handler's call interrupted a hook of this
// thread, through the side queue (core.h).
// Sampling: most calls are only counted (mt_core_unsampled_*), without a whole hook.
#define RECORD_ALLOC(kind, call, p, size)                                                          \
    do {                                                                                           \
        if (mt_recording()) {                                                                      \
            if (MT_LIKELY(!mt_sampling) || !mt_core_unsampled_alloc(call, p, size))                \
                mt_core_on_alloc(kind, call, p, size);                                             \
        } else if (mt_interrupting_hook())                                                         \
            mt_core_on_nested(kind, call, p, size, 0, true);                                       \
    } while (0)

#define RECORD_FREE(kind, call, p, size)                                                           \
    do {                                                                                           \
        if (mt_recording()) {                                                                      \
            if (MT_LIKELY(!mt_sampling) || !mt_core_unsampled_free(call, p))                       \
                mt_core_on_free(kind, call, p, size);                                              \
        } else if (mt_interrupting_hook())                                                         \
            mt_core_on_nested(kind, call, p, size, 0, false);                                      \
    } while (0)

// The writer thread's heap calls go to a heap of its own (writer_heap.h), not to a glibc
// arena of 64 MiB. Its blocks are freed or resized elsewhere only by the tracer, i.e. with
// the guard set: only then is a block looked up.
static inline bool in_writer_thread(void) {
    return MT_UNLIKELY(mt_writer_heap_thread);
}

static inline bool writer_heap_block(const void* p) {
    return MT_UNLIKELY(mt_guard) && p && mt_writer_heap_owns(p);
}

MT_EXPORT void* malloc(size_t size) {
    if (in_writer_thread())
        return mt_writer_heap_malloc(size);
    ensure_real();
    if (MT_UNLIKELY(!mt_bootstrap_ready()))
        return mt_bootstrap_alloc(size);
    void* p = mt_real.malloc(size);
    if (MT_UNLIKELY(atomic_load_explicit(&mt_python_waiting, memory_order_relaxed)))
        mt_python_heap_poll(); // CPython's allocators are wrapped once it has set them up
    RECORD_ALLOC(MT_KIND_MALLOC, MT_CALL_MALLOC, p, size);
    return p;
}

MT_EXPORT void* calloc(size_t n, size_t size) {
    if (in_writer_thread())
        return mt_writer_heap_calloc(n, size);
    ensure_real();
    if (MT_UNLIKELY(!mt_bootstrap_ready())) {
        size_t total;
        if (__builtin_mul_overflow(n, size, &total))
            return NULL;
        return mt_bootstrap_alloc(total); // static memory is zeroed
    }
    void* p = mt_real.calloc(n, size);
    size_t total;
    // On overflow calloc returns NULL: the call is counted, no event.
    if (__builtin_mul_overflow(n, size, &total))
        total = 0;
    RECORD_ALLOC(MT_KIND_CALLOC, MT_CALL_CALLOC, p, total);
    return p;
}

MT_EXPORT void free(void* p) {
    if (MT_UNLIKELY(mt_bootstrap_owns(p)))
        return;
    ensure_real();
    // Still resolving (dlsym's error path frees what the loader allocated): leak it.
    if (MT_UNLIKELY(!mt_bootstrap_ready()))
        return;
    if (writer_heap_block(p)) {
        mt_writer_heap_free(p);
        return;
    }
    RECORD_FREE(MT_KIND_FREE, MT_CALL_FREE, p, 0);
    mt_python_frames_before_release(false);
    mt_real.free(p);
}

// realloc from the arena (only ever during bootstrap): copy into a real block.
static void* realloc_from_arena(void* old, size_t size) {
    void* p = malloc(size);
    if (p) {
        size_t n = mt_bootstrap_size(old);
        memcpy(p, old, n < size ? n : size);
    }
    return p;
}

MT_EXPORT void* realloc(void* old, size_t size) {
    if (MT_UNLIKELY(mt_bootstrap_owns(old)))
        return realloc_from_arena(old, size);
    if (writer_heap_block(old) || (!old && in_writer_thread()))
        return mt_writer_heap_realloc(old, size);
    ensure_real();
    if (!mt_recording() && !mt_interrupting_hook())
        return mt_real.realloc(old, size);
    // Sampling: the old block leaves the set before the real call may free it (0: not sampled).
    uint64_t free_seq = old && mt_sampling_keep_free(old) ? mt_seq_take() : 0;
    void* p = mt_real.realloc(old, size);
    mt_core_on_realloc(MT_KIND_REALLOC, MT_KIND_REALLOC_FREE, MT_CALL_REALLOC, free_seq, old, p,
                       size);
    return p;
}

// glibc's reallocarray calls realloc through the PLT, i.e. our realloc: calling it would
// record the call twice. Do what it does (overflow check, then realloc) on the real realloc.
MT_EXPORT void* reallocarray(void* old, size_t n, size_t size) {
    size_t total;
    if (__builtin_mul_overflow(n, size, &total)) {
        if (mt_recording())
            mt_core_count_call(MT_CALL_REALLOCARRAY);
        else if (mt_interrupting_hook())
            mt_core_on_nested(MT_KIND_REALLOCARRAY, MT_CALL_REALLOCARRAY, NULL, 0, 0, false);
        errno = ENOMEM;
        return NULL;
    }
    if (MT_UNLIKELY(mt_bootstrap_owns(old)))
        return realloc_from_arena(old, total);
    if (writer_heap_block(old) || (!old && in_writer_thread()))
        return mt_writer_heap_realloc(old, total);
    ensure_real();
    if (!mt_recording() && !mt_interrupting_hook())
        return mt_real.realloc(old, total);
    // Sampling: the old block leaves the set before the real call may free it (0: not sampled).
    uint64_t free_seq = old && mt_sampling_keep_free(old) ? mt_seq_take() : 0;
    void* p = mt_real.realloc(old, total);
    mt_core_on_realloc(MT_KIND_REALLOCARRAY, MT_KIND_REALLOCARRAY_FREE, MT_CALL_REALLOCARRAY,
                       free_seq, old, p, total);
    return p;
}

MT_EXPORT int posix_memalign(void** out, size_t align, size_t size) {
    if (in_writer_thread()) {
        if (align % sizeof(void*) || (align & (align - 1)))
            return EINVAL;
        void* p = mt_writer_heap_memalign(align, size);
        if (!p)
            return ENOMEM;
        *out = p;
        return 0;
    }
    ensure_real();
    int rc = mt_real.posix_memalign(out, align, size);
    RECORD_ALLOC(MT_KIND_POSIX_MEMALIGN, MT_CALL_POSIX_MEMALIGN, rc == 0 ? *out : NULL, size);
    return rc;
}

MT_EXPORT void* aligned_alloc(size_t align, size_t size) {
    if (in_writer_thread())
        return mt_writer_heap_memalign(align, size);
    ensure_real();
    void* p = mt_real.aligned_alloc(align, size);
    RECORD_ALLOC(MT_KIND_ALIGNED_ALLOC, MT_CALL_ALIGNED_ALLOC, p, size);
    return p;
}

MT_EXPORT void* memalign(size_t align, size_t size) {
    if (in_writer_thread())
        return mt_writer_heap_memalign(align, size);
    ensure_real();
    void* p = mt_real.memalign(align, size);
    RECORD_ALLOC(MT_KIND_MEMALIGN, MT_CALL_MEMALIGN, p, size);
    return p;
}

MT_EXPORT void* valloc(size_t size) {
    if (in_writer_thread())
        return mt_writer_heap_memalign((size_t)sysconf(_SC_PAGESIZE), size);
    ensure_real();
    void* p = mt_real.valloc(size);
    RECORD_ALLOC(MT_KIND_VALLOC, MT_CALL_VALLOC, p, size);
    return p;
}

MT_EXPORT void* pvalloc(size_t size) {
    if (in_writer_thread()) {
        size_t page = (size_t)sysconf(_SC_PAGESIZE);
        return mt_writer_heap_memalign(page, (size + page - 1) & ~(page - 1));
    }
    ensure_real();
    void* p = mt_real.pvalloc(size);
    RECORD_ALLOC(MT_KIND_PVALLOC, MT_CALL_PVALLOC, p, size);
    return p;
}

MT_EXPORT size_t malloc_usable_size(void* p) {
    if (MT_UNLIKELY(mt_bootstrap_owns(p)))
        return mt_bootstrap_size(p);
    if (writer_heap_block(p))
        return mt_writer_heap_size(p);
    ensure_real();
    return mt_real.malloc_usable_size(p);
}

#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 41))
// glibc 2.41 added the C23 sized frees; older libcs do not have them and neither do we.
MT_EXPORT void free_sized(void* p, size_t size) {
    if (MT_UNLIKELY(mt_bootstrap_owns(p)))
        return;
    if (writer_heap_block(p)) {
        mt_writer_heap_free(p);
        return;
    }
    ensure_real();
    RECORD_FREE(MT_KIND_FREE_SIZED, MT_CALL_FREE_SIZED, p, size);
    mt_real.free_sized(p, size);
}

MT_EXPORT void free_aligned_sized(void* p, size_t align, size_t size) {
    if (MT_UNLIKELY(mt_bootstrap_owns(p)))
        return;
    if (writer_heap_block(p)) {
        mt_writer_heap_free(p);
        return;
    }
    ensure_real();
    RECORD_FREE(MT_KIND_FREE_ALIGNED_SIZED, MT_CALL_FREE_ALIGNED_SIZED, p, size);
    mt_real.free_aligned_sized(p, align, size);
}
#endif

// ---- mappings (MEMTRACE_MMAP=1: mmap_track.c); otherwise straight to the real function.
// glibc's own mmap calls (malloc's large blocks, thread stacks, the loader) do not come
// through here: they call its internal __mmap, so big mallocs are never counted twice.

static inline bool tracing_mappings(void) {
    return MT_UNLIKELY(mt_cfg.mmap) && mt_recording();
}

MT_EXPORT void* mmap(void* addr, size_t len, int prot, int flags, int fd, off_t off) {
    if (MT_LIKELY(!tracing_mappings()))
        return mt_mmap_track_real(addr, len, prot, flags, fd, off);
    return mt_mmap_track_traced(addr, len, prot, flags, fd, off);
}

MT_EXPORT void* mmap64(void* addr, size_t len, int prot, int flags, int fd, off_t off) {
    return mmap(addr, len, prot, flags, fd, off);
}

MT_EXPORT int munmap(void* addr, size_t len) {
    ensure_real();
    if (MT_UNLIKELY(!mt_real.munmap)) // called while the real functions are being resolved
        return (int)syscall(SYS_munmap, addr, len);
    mt_python_frames_before_release(true);
    if (MT_LIKELY(!tracing_mappings()))
        return mt_real.munmap(addr, len);
    return mt_mmap_track_munmap_traced(addr, len);
}

MT_EXPORT void* mremap(void* old, size_t old_len, size_t new_len, int flags, ...) {
    void* new_addr = NULL;
    if (flags & (MREMAP_FIXED | MREMAP_DONTUNMAP)) {
        va_list ap;
        va_start(ap, flags);
        new_addr = va_arg(ap, void*);
        va_end(ap);
    }
    ensure_real();
    if (MT_UNLIKELY(!mt_real.mremap))
        return (void*)syscall(SYS_mremap, old, old_len, new_len, flags, new_addr);
    if (MT_LIKELY(!tracing_mappings()))
        return mt_real.mremap(old, old_len, new_len, flags, new_addr);
    return mt_mmap_track_mremap_traced(old, old_len, new_len, flags, new_addr);
}

// ---- module maps follow dlopen/dlclose

// libdw loads its debuginfod client (libcurl, gnutls, krb5: some 30 libraries) the first time
// a module has no local debug file. Inside a traced program that is ~10 ms at every exit,
// other libraries' constructors run in the program, and with DEBUGINFOD_URLS set (Debian's
// login shells set it) a network download per binary: the tracer's own calls get none.
static bool tracer_must_not_load(const char* file) {
    return mt_guard && file && strstr(file, "libdebuginfod");
}

MT_EXPORT void* dlopen(const char* file, int mode) {
    ensure_real();
    if (MT_UNLIKELY(tracer_must_not_load(file)))
        return NULL;
    void* h = mt_real.dlopen(file, mode);
    if (h && (mode & RTLD_DEEPBIND)) {
        // Its heap calls would bind to libc's functions and go unseen (a library making 3000
        // mallocs was recorded with none of them): its slots are pointed at our hooks. The
        // guard keeps the loader's allocations meanwhile out of the capture. A lookup that
        // failed (a name the module's scope lacks) left an error, which the program's next
        // dl call would free (an unmatched free) and its dlerror() report: the first
        // dlerror() takes it, the second frees it, as the program's successful dlopen left.
        int saved_guard = mt_guard, saved_errno = errno;
        mt_guard = 1;
        mt_inject_patch_deepbind(h);
        dlerror();
        dlerror();
        mt_guard = saved_guard;
        errno = saved_errno;
    }
    if (h && mt_core_tracing())
        mt_maps_refresh(false);
    return h;
}

MT_EXPORT int dlclose(void* handle) {
    ensure_real();
    int rc = mt_real.dlclose(handle);
    if (rc == 0 && mt_core_tracing()) {
        mt_maps_refresh(true);
        mt_unwind_forget(); // a module loaded later may reuse the freed code addresses
    }
    return rc;
}

// libunwind blocks every signal around each of its dl_iterate_phdr calls: two system calls
// for each frame it has not seen, 20% of a traced python3's start-up. Its walks for the
// tracer need no such protection: a signal handler interrupting them runs with the guard
// set, so its heap calls are not traced and never re-enter libunwind through us.
MT_EXPORT int sigprocmask(int how, const sigset_t* set, sigset_t* old) {
    if (mt_unwind_masking_for_us((uintptr_t)__builtin_return_address(0)))
        return 0;
    ensure_real();
    return mt_real.sigprocmask(how, set, old);
}

// The tracer's fatal-signal handler stands where the program left the default action, and a
// program that asks sees the default action there: Rust's runtime installs its stack
// overflow handler (SIGSEGV, SIGBUS) only where it finds SIG_DFL. Traced, a Rust stack
// overflow died of SIGSEGV without its message instead of SIGABRT, and the runtime's start
// made 6 fewer allocations than untraced. A handler set replaces ours, as untraced.
MT_EXPORT int sigaction(int sig, const struct sigaction* act, struct sigaction* old) {
    ensure_real();
    int rc = mt_real.sigaction(sig, act, old);
    if (rc == 0 && old && !(old->sa_flags & SA_SIGINFO) &&
        mt_core_is_fatal_handler(old->sa_handler)) {
        memset(old, 0, sizeof *old);
        old->sa_handler = SIG_DFL;
    }
    return rc;
}

MT_EXPORT sighandler_t signal(int sig, sighandler_t handler) {
    ensure_real();
    sighandler_t old = mt_real.signal(sig, handler);
    return mt_core_is_fatal_handler(old) ? SIG_DFL : old;
}

// libunwind probes memory through a pipe (reading a byte, then writing one) that it
// reopens, closing the old descriptors, whenever a read fails. At low numbers the program
// could have closed those and opened its own files there: libunwind would read, write and
// close them. Its pipe lives among the tracer's high descriptors instead (fdguard.h).
MT_EXPORT int pipe2(int fds[2], int flags) {
    ensure_real();
    int rc = mt_real.pipe2(fds, flags);
    if (rc == 0 && mt_unwind_is_libunwind((uintptr_t)__builtin_return_address(0))) {
        fds[0] = mt_fdguard_move_high(fds[0]);
        fds[1] = mt_fdguard_move_high(fds[1]);
    }
    return rc;
}

// _exit skips destructors; finalize first so the capture of a forked child that ends
// with _exit is complete. A signal sent meanwhile is never delivered: untraced, the process
// was gone before it came, and ends with its own status.
MT_EXPORT void _exit(int status) {
    ensure_real();
    sigset_t old_mask;
    mt_write_signals_end_hold(&old_mask);
    mt_core_shutdown();
    mt_real._exit(status);
}

MT_EXPORT void _Exit(int status) {
    _exit(status);
}
