// SPDX-License-Identifier: MIT
// Uses memtrace.h without linking libmemtrace: must run normally untraced, and record its
// marks, ranges and pool allocations when traced.
#include "memtrace.h"

#include <stdlib.h>
#include <unistd.h>

static char pool[4096];
void* volatile sink; // keeps the compiler from eliding malloc/free pairs

int main(void) {
    memtrace_mark("start");
    memtrace_range_begin("work");
    void* p = malloc(100);
    sink = p;
    memtrace_report_alloc(pool + 64, 512); // a block of the program's own pool
    // Sizes no address space holds (a bug of the program's): counted, not recorded.
    memtrace_report_alloc(pool + 1024, (size_t)1 << 63);
    memtrace_report_alloc(pool + 2048, ((size_t)1 << 56) + 1);
    memtrace_pause();
    void* hidden = malloc(7); // not recorded
    sink = hidden;
    memtrace_resume();
    free(hidden);
    memtrace_report_free(pool + 64);
    free(p);
    memtrace_range_end("work");
    memtrace_mark("end");
    // write(2), not stdio: stdio's buffer would be one more allocation to account for.
    (void)!write(1, "annotations ok\n", 15);
    return 0;
}
