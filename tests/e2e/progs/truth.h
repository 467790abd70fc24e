// SPDX-License-Identifier: MIT
// Known truth for the e2e programs: wrappers that make each allocator call and count what
// the tracer must record (events, bytes, live set, peak, calls per entry point), and a JSON
// writer for $TRUTH_FILE. Never allocates: no stdio, no snprintf, only write(2), so the
// bookkeeping cannot add heap events of its own. Header-only, usable from C and C++.
#ifndef E2E_TRUTH_H
#define E2E_TRUTH_H

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum {
    T_MALLOC,
    T_CALLOC,
    T_REALLOC,
    T_REALLOCARRAY,
    T_FREE,
    T_POSIX_MEMALIGN,
    T_ALIGNED_ALLOC,
    T_MEMALIGN,
    T_VALLOC,
    T_PVALLOC,
    T_NCALLS
};
static const char* const t_call_name[T_NCALLS] = {
    "malloc",         "calloc",        "realloc",  "reallocarray", "free",
    "posix_memalign", "aligned_alloc", "memalign", "valloc",       "pvalloc"};

// Updated with atomics so threaded programs can share it. `peak` is the maximum of `live`
// in the order these updates happen; threaded programs keep their concurrent phases well
// below a single-threaded peak so that order does not matter.
static struct {
    uint64_t allocations, frees, bytes, live, nlive, peak;
    uint64_t calls[T_NCALLS];
    int64_t threads;
    int64_t extra_val[8];
    const char* extra_key[8];
    int nextra;
} truth;

#define T_ADD(field, v) __atomic_add_fetch(&(field), (v), __ATOMIC_SEQ_CST)

static inline int t_baseline(void) {
    // The baseline run does the program's start-up, threads and exit, but none of its work.
    const char* b = getenv("E2E_BASELINE");
    return b && *b == '1';
}

static inline void t_call(int call) {
    T_ADD(truth.calls[call], 1);
}

static inline void t_alloc(uint64_t size) {
    T_ADD(truth.allocations, 1);
    T_ADD(truth.bytes, size);
    T_ADD(truth.nlive, 1);
    uint64_t live = T_ADD(truth.live, size);
    uint64_t peak = __atomic_load_n(&truth.peak, __ATOMIC_SEQ_CST);
    while (live > peak && !__atomic_compare_exchange_n(&truth.peak, &peak, live, 0,
                                                       __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)) {
    }
}

static inline void t_free(uint64_t size) {
    T_ADD(truth.frees, 1);
    __atomic_sub_fetch(&truth.live, size, __ATOMIC_SEQ_CST);
    __atomic_sub_fetch(&truth.nlive, 1, __ATOMIC_SEQ_CST);
}

static inline void t_extra(const char* key, int64_t v) {
    if (truth.nextra < 8) {
        truth.extra_key[truth.nextra] = key;
        truth.extra_val[truth.nextra++] = v;
    }
}

static inline void t_reset(void) {
    memset(&truth, 0, sizeof truth);
}

// ---- the allocator calls, each counted as the tracer must count it

static inline void* T_malloc(size_t n) {
    void* p = malloc(n);
    t_call(T_MALLOC);
    if (p)
        t_alloc(n);
    return p;
}

static inline void* T_calloc(size_t n, size_t size) {
    void* p = calloc(n, size);
    t_call(T_CALLOC);
    if (p)
        t_alloc((uint64_t)n * size);
    return p;
}

// realloc(NULL, n) is an allocation; realloc(p, 0) frees p and returns NULL (glibc); a
// failed realloc leaves p alone; otherwise the old block is freed and a new one allocated.
// `had_old` is taken before the call: the old pointer may not be looked at afterwards.
static inline void t_realloc_result(int had_old, uint64_t old_size, const void* p, uint64_t size) {
    if (had_old && (p || size == 0))
        t_free(old_size);
    if (p)
        t_alloc(size);
}

static inline void* T_realloc(void* old, size_t old_size, size_t n) {
    int had_old = old != NULL;
    void* p = realloc(old, n);
    t_call(T_REALLOC);
    t_realloc_result(had_old, old_size, p, n);
    return p;
}

static inline void* T_reallocarray(void* old, size_t old_size, size_t n, size_t size) {
    int had_old = old != NULL;
    void* p = reallocarray(old, n, size);
    t_call(T_REALLOCARRAY);
    t_realloc_result(had_old, old_size, p, (uint64_t)n * size);
    return p;
}

static inline void T_free(void* p, size_t size) {
    free(p);
    t_call(T_FREE);
    if (p)
        t_free(size);
}

static inline int T_posix_memalign(void** out, size_t align, size_t size) {
    int rc = posix_memalign(out, align, size);
    t_call(T_POSIX_MEMALIGN);
    if (rc == 0)
        t_alloc(size);
    return rc;
}

static inline void* T_aligned_alloc(size_t align, size_t size) {
    void* p = aligned_alloc(align, size);
    t_call(T_ALIGNED_ALLOC);
    if (p)
        t_alloc(size);
    return p;
}

// ---- the truth file

typedef struct t_buf {
    char s[4096];
    size_t n;
} t_buf;

static inline void t_puts(t_buf* b, const char* s) {
    while (*s && b->n < sizeof b->s - 1)
        b->s[b->n++] = *s++;
}

static inline void t_putu(t_buf* b, int64_t v) {
    char d[24];
    int n = 0;
    uint64_t u = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
    if (v < 0)
        t_puts(b, "-");
    do {
        d[n++] = (char)('0' + u % 10);
        u /= 10;
    } while (u);
    while (n > 0 && b->n < sizeof b->s - 1)
        b->s[b->n++] = d[--n];
}

static inline void t_field(t_buf* b, const char* key, int64_t v) {
    t_puts(b, "\"");
    t_puts(b, key);
    t_puts(b, "\": ");
    t_putu(b, v);
    t_puts(b, ", ");
}

// Writes the truth to $TRUTH_FILE (plus `suffix`, for children). Returns 0 or -1.
static inline int t_write(const char* suffix) {
    static t_buf b;
    const char* path = getenv("TRUTH_FILE");
    if (!path)
        return 0;
    char file[512];
    size_t n = strlen(path), m = strlen(suffix);
    if (n + m >= sizeof file)
        return -1;
    memcpy(file, path, n);
    memcpy(file + n, suffix, m + 1);
    b.n = 0;
    t_puts(&b, "{");
    t_field(&b, "allocations", (int64_t)truth.allocations);
    t_field(&b, "frees", (int64_t)truth.frees);
    t_field(&b, "bytes_allocated", (int64_t)truth.bytes);
    t_field(&b, "peak_bytes", (int64_t)truth.peak);
    t_field(&b, "leaked_bytes", (int64_t)truth.live);
    t_field(&b, "leaked_allocations", (int64_t)truth.nlive);
    t_field(&b, "threads", truth.threads ? truth.threads : 1);
    for (int i = 0; i < truth.nextra; i++)
        t_field(&b, truth.extra_key[i], truth.extra_val[i]);
    t_puts(&b, "\"calls\": {");
    for (int i = 0; i < T_NCALLS; i++) {
        t_field(&b, t_call_name[i], (int64_t)truth.calls[i]);
    }
    b.n -= 2; // the last ", "
    t_puts(&b, "}}\n");
    int fd = open(file, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
        return -1;
    int ok = write(fd, b.s, b.n) == (ssize_t)b.n;
    return close(fd) == 0 && ok ? 0 : -1;
}

// A failed self-check: the exit code tells the driver (and an untraced run) which one.
static inline void t_fail(int code, const char* what) {
    (void)!write(2, "e2e check failed: ", 18);
    (void)!write(2, what, strlen(what));
    (void)!write(2, "\n", 1);
    _exit(code);
}

// A size no allocator can satisfy (more than PTRDIFF_MAX); volatile so the compiler cannot
// reason about the call.
static volatile size_t t_huge = SIZE_MAX / 2 + 4097;

#endif
