// SPDX-License-Identifier: MIT
// Generates a synthetic NPU compiler memory-usage log in the current format
// (docs/npu-memory-usage-log.md §1.1-1.3): functions part1..part<F-1> and main, each a
// linear-scan allocator simulation printing A x k, B, C, [D], E, G per step and batches of
// H lines, no timestamps, like that page's ~1M-step benchmark log (999,982 steps, 41
// functions, 6.8 M lines, 489 MB).
// --trap makes every step a fragmentation-driven global increase (the quadratic trap, §4).
// Usage: gen_npu_log [--steps N] [--funcs F] [--seed S] [--trap] > log.txt
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static uint64_t rnd(void) {
    uint64_t x = rng_state;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return rng_state = x;
}

static uint64_t rnd_size(void) {
    // 256 B .. 8 MiB, log-uniform-ish, 64-byte aligned.
    int shift = 8 + (int)(rnd() % 16);
    return ((rnd() % (1ull << shift)) + 64) & ~63ull;
}

#define PFX "[TRACE] [memory-usage-info]   "

int main(int argc, char** argv) {
    long steps = 1000000, funcs = 41;
    int trap = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--steps") && i + 1 < argc)
            steps = atol(argv[++i]);
        else if (!strcmp(argv[i], "--funcs") && i + 1 < argc)
            funcs = atol(argv[++i]);
        else if (!strcmp(argv[i], "--seed") && i + 1 < argc)
            rng_state ^= strtoull(argv[++i], NULL, 10) * 0xbf58476d1ce4e5b9ull;
        else if (!strcmp(argv[i], "--trap"))
            trap = 1;
        else {
            fprintf(stderr, "usage: gen_npu_log [--steps N] [--funcs F] [--seed S] [--trap]\n");
            return 1;
        }
    }
    if (funcs < 1 || steps < funcs)
        return 1;
    static char buf[1 << 16];
    setvbuf(stdout, buf, _IOFBF, sizeof buf);
    uint64_t* live = malloc(sizeof *live * 4096);
    uint64_t trap_max = 0;
    for (long f = 0; f < funcs; f++) {
        char name[32];
        if (f + 1 < funcs)
            snprintf(name, sizeof name, "part%ld", f + 1);
        else
            snprintf(name, sizeof name, "main");
        printf("[DEBUG] [vpux-compiler] Start Pass StaticAllocation on Operation "
               "loc(fused<{name = \"main\", type = \"Func\"}>[\"main\", \"%s\"])\n",
               name);
        long n = steps / funcs + (f < steps % funcs);
        uint64_t used = 0, max = 0;
        size_t nlive = 0;
        for (long s = 0; s < n; s++) {
            // Free a batch before the step when the live set is large (cycle-ordered frees).
            if (nlive > 8 && rnd() % 2 == 0) {
                size_t k = 1 + rnd() % 4;
                while (k-- && nlive) {
                    size_t j = rnd() % nlive;
                    printf(PFX "%s: Free buffer of size %" PRIu64 " B\n", name, live[j]);
                    used -= live[j];
                    live[j] = live[--nlive];
                }
            }
            int k = rnd() % 4 == 0 ? 2 : 1;
            uint64_t req = 0;
            for (int i = 0; i < k; i++) {
                uint64_t sz = rnd_size();
                printf(PFX "%s: Buffer size to allocate      %" PRIu64 " B\n", name, sz);
                req += sz;
                if (nlive < 4096)
                    live[nlive++] = sz;
                else
                    used -= sz; // forget it: keeps the simulation bounded
            }
            uint64_t free_before = max - used;
            printf(PFX "%s: DDR free memory before alloc %" PRIu64 " B\n", name, free_before);
            uint64_t prev = max;
            int frag = 0;
            used += req;
            if (trap) {
                trap_max += 64;
                max = used > trap_max ? used : trap_max;
                trap_max = max;
                frag = 1;
            } else if (req <= free_before) {
                if (rnd() % 100 == 0) { // fits, but the hole is in the wrong place
                    max += req / 2;
                    frag = 1;
                }
            } else {
                max += req - free_before;
            }
            if (used > max)
                max = used;
            printf(PFX "%s: Max allocated size %" PRIu64 " B\n", name, max);
            if (frag && max > prev)
                printf(PFX "%s: Increased allocation size to %" PRIu64 " B due to fragmentation!\n",
                       name, max);
            printf(PFX "%s: DDR used memory    %" PRIu64 " %.2f%%\n", name, used,
                   max ? 100.0 * (double)used / (double)max : 0.0);
            printf(PFX "%s: DDR free memory    %" PRIu64 " %.2f%%\n", name, max - used,
                   max ? 100.0 * (double)(max - used) / (double)max : 0.0);
        }
        for (size_t j = 0; j < nlive; j++)
            printf(PFX "%s: Free buffer of size %" PRIu64 " B\n", name, live[j]);
        printf("[DEBUG] [vpux-compiler] End Pass StaticAllocation on Operation "
               "loc(fused<{name = \"main\", type = \"Func\"}>[\"main\", \"%s\"])\n",
               name);
    }
    free(live);
    return fflush(stdout) == 0 ? 0 : 1;
}
