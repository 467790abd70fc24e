// SPDX-License-Identifier: MIT
// A library attach_prog dlopens after the attach: its heap calls go through its own GOT,
// which the tracer must patch when it is loaded.
#include <stdlib.h>

// Exported whatever the build's default visibility.
__attribute__((visibility("default"))) void* attach_lib_alloc(size_t n);
__attribute__((visibility("default"))) void attach_lib_free(void* p);

void* attach_lib_alloc(size_t n) {
    return malloc(n);
}

void attach_lib_free(void* p) {
    free(p);
}
