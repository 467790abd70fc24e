// SPDX-License-Identifier: MIT
// Prints the symbolizer's name for each mangled name read from stdin, one a line (the Rust
// demangling test compares them with c++filt's).
#include "symbolize_frame.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(void) {
    char line[65536];
    while (fgets(line, sizeof line, stdin)) {
        line[strcspn(line, "\n")] = 0;
        char* d = mt_symbolize_frame_demangle(line);
        printf("%s\n", d ? d : line);
        free(d);
    }
    return 0;
}
