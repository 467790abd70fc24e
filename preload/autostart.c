// SPDX-License-Identifier: MIT
// Tracing starts at the first heap call of the process (or when the library is loaded, if
// that comes first) and the capture is finished after every library's destructor has run.
// Only in the shared library: a unit test links the core without this file and starts it
// itself (mt_core_init), after setting MEMTRACE_OUTPUT.
#include "core.h"

#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

static const char in_this_library;

// Preloaded (LD_PRELOAD under any file name, or /etc/ld.so.preload), this library's malloc
// is the one the program's calls resolve to. dlopen'ed into a running process by memtrace
// --pid, it is not: there the library waits for gdb to call memtrace_attach (attach.c).
// A program linked without PIE that takes malloc's address has a PLT slot of its own as
// malloc's address (Debian's python3.11): pvalloc, which no program takes the address of,
// is asked too.
static bool preloaded(void) {
    Dl_info self, found;
    if (!dladdr(&in_this_library, &self)) {
        const char* preload = getenv("LD_PRELOAD");
        return preload && strstr(preload, "libmemtrace");
    }
    static const char* const names[] = {"malloc", "pvalloc"};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        void* f = dlsym(RTLD_DEFAULT, names[i]);
        if (f && dladdr(f, &found) && found.dli_fbase == self.dli_fbase)
            return true;
    }
    return false;
}

// Whether the start was decided, by the first heap call or by the constructor, whichever
// came first; and whether it started a capture.
static _Atomic int decided, started_here;

static void start_once(void) {
    if (atomic_exchange(&decided, 1))
        return;
    mt_guard++; // dlsym's own heap calls pass through
    bool yes = preloaded();
    mt_guard--;
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
