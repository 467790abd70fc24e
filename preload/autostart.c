// SPDX-License-Identifier: MIT
// Tracing starts when libmemtrace.so is loaded and the capture is finished when the program
// exits. Only in the shared library: a unit test links the core without this file and starts
// it itself (mt_core_init), after setting MEMTRACE_OUTPUT.
#include "core.h"

#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

static const char in_this_library;

// Preloaded (LD_PRELOAD under any file name, or /etc/ld.so.preload), this library's malloc
// is the one the program's calls resolve to. dlopen'ed into a running process by memtrace
// --pid, it is not: there the library waits for gdb to call memtrace_attach (attach.c).
static bool preloaded(void) {
    Dl_info self, found;
    void* malloc_found = dlsym(RTLD_DEFAULT, "malloc");
    if (malloc_found && dladdr(&in_this_library, &self) && dladdr(malloc_found, &found))
        return self.dli_fbase == found.dli_fbase;
    const char* preload = getenv("LD_PRELOAD");
    return preload && strstr(preload, "libmemtrace");
}

__attribute__((constructor)) static void start_at_load(void) {
    if (preloaded())
        mt_core_init();
}

__attribute__((destructor)) static void finish_at_exit(void) {
    mt_core_shutdown();
}
