// SPDX-License-Identifier: MIT
// Stack capture. `libunwind` and `auto` use libunwind's cached DWARF walk (unw_backtrace):
// Debian's libc and libstdc++ are built without frame pointers, so a bare frame-pointer
// walk silently skips their callers. `fp` is the bare frame-pointer walk, exact only for
// code built with -fno-omit-frame-pointer. Called inside hooks with the guard set.
#define UNW_LOCAL_ONLY
#include "unwind.h"

#include <libunwind.h>
#include <string.h>

#include "config.h"
#include "maps.h"

#define MAX_WALK 1100

static int unwind_mode;
static uintptr_t self_lo, self_hi;

void mt_unwind_init(int mode) {
    unwind_mode = mode;
    mt_maps_self_range(&self_lo, &self_hi);
    unw_set_caching_policy(unw_local_addr_space, UNW_CACHE_PER_THREAD);
}

static int walk_fp(uintptr_t* out, int max, uintptr_t stack_hi) {
    uintptr_t* fp = __builtin_frame_address(0);
    int n = 0;
    while (n < max) {
        if (((uintptr_t)fp & 7) || (stack_hi && (uintptr_t)fp >= stack_hi))
            break;
        uintptr_t pc = fp[1];
        if (!pc)
            break;
        out[n++] = pc;
        uintptr_t* next = (uintptr_t*)fp[0];
        // Frames grow towards higher addresses; anything else is the end of the chain.
        if (next <= fp || (uintptr_t)next - (uintptr_t)fp > (64u << 20))
            break;
        fp = next;
    }
    return n;
}

int mt_unwind(uintptr_t* pcs, int max, bool* truncated, uintptr_t stack_hi) {
    uintptr_t raw[MAX_WALK];
    int want = max + 16 < MAX_WALK ? max + 16 : MAX_WALK;
    int n = unwind_mode == MT_UNWIND_FP ? walk_fp(raw, want, stack_hi)
                                        : unw_backtrace((void**)raw, want);
    // Drop the tracer's own frames on the leaf side (unwinder, core, the hook itself).
    int skip = 0;
    while (skip < n && raw[skip] >= self_lo && raw[skip] < self_hi)
        skip++;
    n -= skip;
    *truncated = n > max;
    if (n > max)
        n = max;
    memcpy(pcs, raw + skip, (size_t)n * sizeof *pcs);
    return n;
}
