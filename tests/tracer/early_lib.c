// SPDX-License-Identifier: MIT
// A library whose constructor and destructor allocate: both run outside libmemtrace.so's
// own (initialised before it, finalised after it). check_early.py knows every call.
#include <stdlib.h>

static void* kept;
__attribute__((visibility("default"))) void* volatile early_sink; // the compiler may not drop a
                                                                  // malloc whose block goes nowhere

__attribute__((constructor)) static void early_init(void) {
    kept = malloc(12345); // never freed
}

__attribute__((destructor)) static void late_fini(void) {
    early_sink = malloc(777);
    free(early_sink);
    early_sink = malloc(888);
    free(early_sink);
}

__attribute__((visibility("default"))) int early_lib_ready(void) {
    return kept != NULL;
}
