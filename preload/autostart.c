// SPDX-License-Identifier: MIT
// Tracing starts when libmemtrace.so is loaded and the capture is finished when the program
// exits. Only in the shared library: a unit test links the core without this file and starts
// it itself (mt_core_init), after setting MEMTRACE_OUTPUT.
#include "core.h"

__attribute__((constructor)) static void start_at_load(void) {
    mt_core_init();
}

__attribute__((destructor)) static void finish_at_exit(void) {
    mt_core_shutdown();
}
