// SPDX-License-Identifier: MIT
// e2e truth: a fixed peak of 600000 bytes held by three known sites (hold_a 300000 by
// malloc, hold_b 200000 by calloc, hold_c 100000 by malloc), reached once, between churn
// before and smaller allocations after. Leaks nothing. Writes its truth to $TRUTH_FILE.
#include "truth.h"

static void* volatile sink;

__attribute__((noinline)) static void* hold_a(void) {
    return T_malloc(300000);
}

__attribute__((noinline)) static void* hold_b(void) {
    return T_calloc(2000, 100);
}

__attribute__((noinline)) static void* hold_c(void) {
    return T_malloc(100000);
}

int main(void) {
    if (!t_baseline()) {
        for (int i = 0; i < 100; i++) {
            void* p = T_malloc(1000 + (size_t)i);
            sink = p;
            T_free(p, 1000 + (size_t)i);
        }
        void* a = hold_a();
        void* b = hold_b();
        void* c = hold_c();
        if (!a || !b || !c)
            t_fail(10, "peak allocations failed");
        T_free(b, 200000);
        T_free(a, 300000);
        T_free(c, 100000);
        for (int i = 0; i < 10; i++) {
            void* p = T_malloc(50000);
            sink = p;
            T_free(p, 50000);
        }
        if (truth.peak != 600000)
            t_fail(11, "model peak");
    }
    return t_write("") ? 12 : 0;
}
