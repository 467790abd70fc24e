// SPDX-License-Identifier: MIT
// Records marks and named ranges (memtrace.h) around allocations of known sizes, each from
// a function of its own, for ranges_test.py: the truth of --at NAME and --range NAME.
//   start | load: table 1000, scratch 4000 (freed) | loaded
//   step: step_buffer 100 | tick | step: step_buffer 200 | tick | 900s
//   late_buffer 50000 (freed: the run's peak) | done
#include "memtrace.h"

#include <stdlib.h>
#include <unistd.h>

void* volatile sink; // keeps the compiler from eliding malloc/free pairs

__attribute__((noinline)) static void* load_table(size_t n) {
    return malloc(n);
}

__attribute__((noinline)) static void* load_scratch(size_t n) {
    return malloc(n);
}

__attribute__((noinline)) static void* step_buffer(size_t n) {
    return malloc(n);
}

__attribute__((noinline)) static void* late_buffer(size_t n) {
    return malloc(n);
}

int main(void) {
    memtrace_mark("start");
    memtrace_range_begin("load");
    void* table = load_table(1000);
    sink = table;
    void* scratch = load_scratch(4000);
    sink = scratch;
    free(scratch);
    memtrace_range_end("load");
    memtrace_mark("loaded");
    void* steps[2];
    for (size_t i = 0; i < 2; i++) { // a range entered twice, a mark recorded twice
        memtrace_range_begin("step");
        steps[i] = step_buffer(100 * (i + 1));
        sink = steps[i];
        memtrace_range_end("step");
        memtrace_mark("tick");
    }
    memtrace_mark("900s"); // a name that reads as a time: mark:900s
    void* late = late_buffer(50000);
    sink = late;
    free(late);
    memtrace_mark("done");
    free(steps[0]);
    free(steps[1]);
    free(table);
    // write(2), not stdio: stdio's buffer would be one more allocation.
    (void)!write(1, "ranges ok\n", 10);
    return 0;
}
