// SPDX-License-Identifier: MIT
// e2e truth: realloc chains. realloc(NULL, n), growth (in place and moving, past the mmap
// threshold), shrinking, a failed realloc (the block stays), realloc(p, 0) (frees, returns
// NULL), reallocarray including overflow and zero. One chain is leaked.
#include "truth.h"

int main(void) {
    if (!t_baseline()) {
        char* p = T_realloc(NULL, 0, 100);
        if (!p)
            t_fail(10, "realloc(NULL)");
        memset(p, 'x', 100);
        static const size_t steps[] = {1000, 100000, 200000, 300000, 50, 10, 4000};
        size_t size = 100;
        for (size_t i = 0; i < sizeof steps / sizeof *steps; i++) {
            p = T_realloc(p, size, steps[i]);
            if (!p || p[0] != 'x')
                t_fail(11, "realloc step");
            size = steps[i];
        }
        errno = 0;
        char* q = T_realloc(p, size, t_huge);
        if (q || errno != ENOMEM || p[0] != 'x')
            t_fail(12, "failed realloc");
        q = T_realloc(p, size, 0);
        if (q)
            t_fail(13, "realloc(p, 0) returned a block");

        // A chain growing by 16 bytes 300 times, leaked at the end.
        char* c = NULL;
        size = 0;
        for (int i = 1; i <= 300; i++) {
            c = T_realloc(c, size, (size_t)i * 16);
            size = (size_t)i * 16;
        }

        int* a = T_reallocarray(NULL, 0, 10, 10);
        a = T_reallocarray(a, 100, 20, 30);
        errno = 0;
        if (T_reallocarray(a, 600, t_huge, 4) || errno != ENOMEM)
            t_fail(14, "reallocarray overflow");
        if (T_reallocarray(a, 600, 0, 5))
            t_fail(15, "reallocarray(p, 0, n) returned a block");
        if (truth.nlive != 1 || truth.live != 4800)
            t_fail(16, "model");
        (void)c;
    }
    return t_write("") ? 20 : 0;
}
