// SPDX-License-Identifier: MIT
// e2e truth: leaks at known sites (leak_small 10 x 100 B, leak_mid 5 x calloc(10, 100),
// leak_big 1 x 12345 B, leak_grown: malloc(10) grown by realloc to 5000 B), among freed
// churn. Also the target that e2e_fork execs. Writes its truth to $TRUTH_FILE.
#include "truth.h"

static void* volatile sink;

__attribute__((noinline)) static void leak_small(void) {
    for (int i = 0; i < 10; i++)
        sink = T_malloc(100);
}

__attribute__((noinline)) static void leak_mid(void) {
    for (int i = 0; i < 5; i++)
        sink = T_calloc(10, 100);
}

__attribute__((noinline)) static void leak_big(void) {
    sink = T_malloc(12345);
}

__attribute__((noinline)) static void leak_grown(void) {
    void* p = T_malloc(10);
    sink = T_realloc(p, 10, 5000);
}

int main(void) {
    if (!t_baseline()) {
        for (int i = 0; i < 50; i++) {
            void* p = T_malloc(64);
            leak_small();
            T_free(p, 64);
        }
        leak_mid();
        leak_big();
        leak_grown();
        if (truth.nlive != 50 * 10 + 5 + 1 + 1 || truth.live != 50 * 1000 + 5000 + 12345 + 5000)
            t_fail(10, "model leaks");
    }
    return t_write("") ? 12 : 0;
}
