// SPDX-License-Identifier: MIT
// Tracing starts at the first heap call of the process (or when the library is loaded, if
// that comes first) and the capture is finished after every library's destructor has run.
// Only in the shared library: a unit test links the core without this file and starts it
// itself (mt_core_init), after setting MEMTRACE_OUTPUT.
#include "core.h"

#include <link.h>
#include <string.h>

static const char in_this_library;

// Whether addr lies in one of the module's loaded segments.
static bool holds(const struct dl_phdr_info* m, uintptr_t addr) {
    for (int i = 0; i < m->dlpi_phnum; i++) {
        const ElfW(Phdr)* ph = &m->dlpi_phdr[i];
        uintptr_t lo = m->dlpi_addr + ph->p_vaddr;
        if (ph->p_type == PT_LOAD && addr >= lo && addr - lo < ph->p_memsz)
            return true;
    }
    return false;
}

static bool ends_with(const char* s, const char* tail) {
    size_t n = strlen(s), t = strlen(tail);
    return n >= t && !strcmp(s + n - t, tail);
}

// 1: this library comes before libc in the load order; -1: after it.
static int before_libc(struct dl_phdr_info* m, size_t size, void* unused) {
    (void)size;
    (void)unused;
    if (holds(m, (uintptr_t)&in_this_library))
        return 1;
    return m->dlpi_name && ends_with(m->dlpi_name, "/libc.so.6") ? -1 : 0;
}

// Preloaded (LD_PRELOAD under any file name, or /etc/ld.so.preload), this library is
// loaded before libc, so the program's heap calls resolve to its hooks; dlopen'ed into a
// running process by memtrace --pid, it comes after: there the library waits for gdb to call
// memtrace_attach (attach.c). Read from the loader's list: no lookup that allocates (a
// dlsym's dlerror state, freed later by the program, would be a block it never saw made).
static bool preloaded(void) {
    return dl_iterate_phdr(before_libc, NULL) == 1;
}

// Whether the start was decided, by the first heap call or by the constructor, whichever
// came first; and whether it started a capture.
static _Atomic int decided, started_here;

static void start_once(void) {
    if (atomic_exchange(&decided, 1))
        return;
    bool yes = preloaded();
    if (yes) {
        atomic_store(&started_here, 1);
        mt_core_init();
    }
}

// Libraries initialised before this one (libstdc++'s emergency pool, a library's
// constructor) allocate before our constructor runs: the capture starts at their first call.
bool mt_core_start_early(void) {
    if (atomic_load_explicit(&decided, memory_order_relaxed))
        return false;
    start_once();
    return atomic_load(&mt_state) == MT_STATE_RECORDING;
}

__attribute__((constructor)) static void start_at_load(void) {
    start_once();
}

static void finish_last(void* unused) {
    (void)unused;
    mt_core_shutdown();
}

int __cxa_atexit(void (*fn)(void*), void* arg, void* dso_handle);

// Preloaded, this destructor runs before those of the libraries initialised before us:
// registered now, from inside exit's run of the destructors, finish_last runs once they
// all have. Registered for no library (atexit() would name ours, and our own unload would
// run it at once); so only a preloaded library, never unloaded, defers: attached, the
// capture ends here.
__attribute__((destructor)) static void finish_at_exit(void) {
    if (!atomic_load(&started_here) || __cxa_atexit(finish_last, NULL, NULL) != 0)
        mt_core_shutdown();
}
