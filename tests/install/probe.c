// SPDX-License-Identifier: MIT
// Traced by the installed memtrace in the install tests: built against the installed
// memtrace.h, it marks a phase, leaks 4242 bytes from make_leak and frees one block.
#include "memtrace.h"

#include <stdio.h>
#include <stdlib.h>

__attribute__((noinline)) static void* make_leak(void) {
    return malloc(4242);
}

int main(void) {
    memtrace_mark("installed");
    void* volatile leaked = make_leak();
    (void)leaked;
    free(malloc(100));
    puts("probe ok");
    return 0;
}
