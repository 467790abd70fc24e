// SPDX-License-Identifier: MIT
// Allocates 100 bytes and frees them; linked with early_lib.c, whose constructor and
// destructor allocate before and after it. Prints nothing (no stdio buffer).
#include <stdlib.h>

int early_lib_ready(void);
extern void* volatile early_sink;

int main(void) {
    early_sink = malloc(100);
    free(early_sink);
    return early_lib_ready() ? 0 : 1;
}
