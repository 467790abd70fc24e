// SPDX-License-Identifier: MIT
// Linked without PIE and taking malloc's address, as Debian's /usr/bin/python3.11 does: the
// program's malloc is then a PLT slot of its own, and dlsym(RTLD_DEFAULT, "malloc") names
// that slot, not the library the calls reach (tests/tracer/check_trust.py, non_pie).
#include <stdlib.h>

void* (*volatile allocate)(size_t);

int main(void) {
    allocate = malloc; // in code: the address is the program's own PLT slot
    void* kept = allocate(4242);
    return kept ? 0 : 1;
}
