// SPDX-License-Identifier: MIT
// Tracing starts when libmemtrace.so is loaded and the capture is finished when the program
// exits. Only in the shared library: a unit test links the core without this file and starts
// it itself (mt_core_init), after setting MEMTRACE_OUTPUT.
#include "core.h"

#include <stdlib.h>
#include <string.h>

// dlopen'ed into a running process by memtrace --pid, the library waits for gdb to call
// memtrace_attach (attach.c): a capture starts only under LD_PRELOAD.
static bool preloaded(void) {
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
