// SPDX-License-Identifier: MIT
// Linked statically: the dynamic loader never runs, so LD_PRELOAD cannot trace it, and the
// launcher must say so (tests/tracer/check_trust.py).
#include <stdio.h>
#include <stdlib.h>

int main(void) {
    void* p = malloc(10);
    puts("static program ran");
    free(p);
    return 0;
}
