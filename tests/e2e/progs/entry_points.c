// SPDX-License-Identifier: MIT
// e2e truth: every allocator entry point with an exact count and size: malloc (and
// malloc(0)), calloc (and overflow: NULL, no event), realloc, reallocarray, free (and
// free(NULL)), posix_memalign, aligned_alloc, memalign, valloc, pvalloc, each also failing
// once (huge size or bad alignment). Checks return values; errno goes into the truth,
// which the driver compares with an untraced run.
#include "truth.h"

#include <malloc.h>
#include <stdio.h>

static void* T_memalign(size_t align, size_t size) {
    void* p = memalign(align, size);
    t_call(T_MEMALIGN);
    if (p)
        t_alloc(size);
    return p;
}

static void* T_valloc(size_t size) {
    void* p = valloc(size);
    t_call(T_VALLOC);
    if (p)
        t_alloc(size);
    return p;
}

static void* T_pvalloc(size_t size) {
    void* p = pvalloc(size);
    t_call(T_PVALLOC);
    if (p)
        t_alloc(size);
    return p;
}

static void expect_enomem(void* p, const char* what) {
    if (p || errno != ENOMEM)
        t_fail(20, what);
    errno = 0;
}

int main(void) {
    if (t_baseline())
        return t_write("") ? 30 : 0;
    long page = sysconf(_SC_PAGESIZE);

    // Successful calls; errno is left alone by every one of them.
    errno = 1234;
    char* m = T_malloc(24);
    char* z = T_malloc(0); // glibc returns a unique block
    char* c = T_calloc(3, 40);
    char* c0 = T_calloc(0, 10);
    void* pm = NULL;
    int rc = T_posix_memalign(&pm, 64, 1000);
    char* aa = T_aligned_alloc(128, 256);
    char* ma = T_memalign(256, 300);
    char* va = T_valloc(5000);
    char* pv = T_pvalloc(100);
    char* r = T_realloc(NULL, 0, 40);
    r = T_realloc(r, 40, 80);
    char* ra = T_reallocarray(NULL, 0, 7, 9);
    if (errno != 1234)
        t_fail(21, "errno changed by a successful call");
    if (!m || !z || !c || !c0 || rc != 0 || !pm || !aa || !ma || !va || !pv || !r || !ra)
        t_fail(22, "a call failed");
    if ((uintptr_t)pm % 64 || (uintptr_t)aa % 128 || (uintptr_t)ma % 256 ||
        (uintptr_t)va % (uintptr_t)page || (uintptr_t)pv % (uintptr_t)page)
        t_fail(23, "alignment");
    for (int i = 0; i < 120; i++)
        if (c[i])
            t_fail(24, "calloc not zeroed");
    if (malloc_usable_size(m) < 24) // passes through, no event, not counted
        t_fail(25, "malloc_usable_size");

    // Failed calls: counted, no events.
    errno = 0;
    expect_enomem(T_malloc(t_huge), "malloc(huge)");
    expect_enomem(T_calloc(t_huge, 4), "calloc overflow");
    expect_enomem(T_calloc(SIZE_MAX / 8, 16), "calloc overflow 2");
    expect_enomem(T_realloc(NULL, 0, t_huge), "realloc(NULL, huge)");
    expect_enomem(T_reallocarray(NULL, 0, t_huge, 16), "reallocarray overflow");
    expect_enomem(T_aligned_alloc(64, t_huge), "aligned_alloc(huge)");
    expect_enomem(T_memalign(64, t_huge), "memalign(huge)");
    expect_enomem(T_valloc(t_huge), "valloc(huge)");
    expect_enomem(T_pvalloc(t_huge), "pvalloc(huge)");
    void* none = (void*)&page;
    if (T_posix_memalign(&none, 64, t_huge) != ENOMEM || none != (void*)&page)
        t_fail(26, "posix_memalign(huge)");
    if (T_posix_memalign(&none, 24, 16) != EINVAL || none != (void*)&page)
        t_fail(27, "posix_memalign(bad alignment)");
    // glibc's posix_memalign leaves ENOMEM in errno on failure; traced or not, the same.
    t_extra("errno_after_posix_memalign", errno);

    // free(NULL) three times: calls, no events.
    T_free(NULL, 0);
    T_free(NULL, 0);
    T_free(NULL, 0);

    // Free all but two (m: 24 B, pv: 100 B stay leaked).
    T_free(z, 0);
    T_free(c, 120);
    T_free(c0, 0);
    T_free(pm, 1000);
    T_free(aa, 256);
    T_free(ma, 300);
    T_free(va, 5000);
    T_free(r, 80);
    T_free(ra, 63);
    if (truth.nlive != 2 || truth.live != 124)
        t_fail(29, "model");
    return t_write("") ? 30 : 0;
}
