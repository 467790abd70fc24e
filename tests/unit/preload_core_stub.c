// SPDX-License-Identifier: MIT
// What the preload base modules (clock, maps, trie) use of the core, for their unit tests:
// the recursion guard and the capture's nanosecond clock. Those tests link the base modules
// alone; the core with its writer thread and SQLite is test_core's.
#include "core.h"

#include <time.h>

__thread int mt_guard __attribute__((tls_model("initial-exec")));

int64_t mt_core_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}
