// SPDX-License-Identifier: MIT
// The `auto` unwinder's caches (preload/record/unwind.c: rules learnt per return address, the
// previous walk, the recent walks kept per thread) against libunwind's own walk: on every one
// of many random stacks (repeated, interleaved, some too deep to keep) the cached walk must
// give exactly libunwind's frames, also while a signal handler takes frame-pointer walks in
// the middle of them. The walks' bound (mt_unwind_stack_top, found without
// pthread_getattr_np) against pthread_getattr_np's on the initial thread, new threads and a
// forked thread.
#define UNW_LOCAL_ONLY
#include "bootstrap.h"
#include "config.h"
#include "core.h"
#include "maps.h"
#include "trie.h"
#include "unwind.h"
#include "unwind_cache_lib.h"

#include "../check.h"

#include <libunwind.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#define DEPTH 64 // MEMTRACE_DEPTH's default

typedef struct walk_check {
    unsigned walks, mismatches, truncated;
    unsigned with_sps, bad_sps; // walks that gave stack pointers; of those, out of order
} walk_check;

static uintptr_t self_lo, self_hi;
static __thread uintptr_t scratch[MT_UNWIND_MAX_FRAMES], sp_scratch[MT_UNWIND_MAX_FRAMES];
static __thread uintptr_t thread_stack_hi; // of the thread walking (read by the handler)
static volatile sig_atomic_t handler_walks;

// libunwind's walk (a cursor stepped frame by frame, no cache of ours), the tracer's own
// frames dropped, outermost first (as mt_unwind gives).
static int reference_walk(uintptr_t* out, int max) {
    uintptr_t pcs[MT_UNWIND_MAX_FRAMES];
    unw_context_t ctx;
    unw_cursor_t cur;
    int n = 0;
    if (unw_getcontext(&ctx) == 0 && unw_init_local(&cur, &ctx) == 0) {
        do {
            unw_word_t ip;
            unw_get_reg(&cur, UNW_REG_IP, &ip);
            if (!ip)
                break;
            pcs[n++] = ip;
        } while (n < MT_UNWIND_MAX_FRAMES && unw_step(&cur) > 0);
    }
    int skip = 0;
    while (skip < n && pcs[skip] >= self_lo && pcs[skip] < self_hi)
        skip++;
    n -= skip;
    if (n > max)
        n = max;
    for (int i = 0; i < n; i++)
        out[i] = pcs[skip + n - 1 - i];
    return n;
}

static __attribute__((noinline)) void check_walk(void* ctx) {
    walk_check* c = ctx;
    if (!thread_stack_hi)
        thread_stack_hi = mt_unwind_stack_top(); // as a thread's first hook takes it
    mt_stack st;
    mt_unwind(&st, scratch, sp_scratch, DEPTH, thread_stack_hi);
    uintptr_t got[DEPTH], want[DEPTH];
    int n = st.n;
    // Stack pointers, where known, grow from the leaf to the outermost frame.
    for (int i = 0; st.sps && i + 1 < n; i++)
        if (st.sps[i] <= st.sps[i + 1] || st.sps[i] > thread_stack_hi)
            c->bad_sps++;
    c->with_sps += st.sps != NULL;
    memcpy(got, st.pcs, (size_t)n * sizeof *got);
    if (!st.hash_later)
        CHECK_EQ_I64(st.hash.h1, mt_stackhash_of(got, n).h1);
    int m = reference_walk(want, DEPTH);
    c->walks++;
    c->truncated += st.truncated;
    if (n != m || memcmp(got, want, (size_t)n * sizeof *got) != 0) {
        if (c->mismatches++ < 3)
            fprintf(stderr, "walk %u: auto gave %d frames, libunwind %d\n", c->walks, n, m);
    }
}

// A heap call in a signal handler that interrupted a hook is walked with frame pointers only
// and no per-thread state: whatever walk it interrupts must still come out exact.
static void on_alarm(int sig) {
    (void)sig;
    uintptr_t pcs[MT_NESTED_FRAMES];
    if (thread_stack_hi && mt_unwind_fp_only(pcs, MT_NESTED_FRAMES, thread_stack_hi) > 0)
        handler_walks++;
}

// pthread_getattr_np's top of the calling thread's stack.
static uintptr_t getattr_top(void) {
    pthread_attr_t attr;
    void* addr;
    size_t size;
    uintptr_t top = 0;
    if (pthread_getattr_np(pthread_self(), &attr) == 0) {
        if (pthread_attr_getstack(&attr, &addr, &size) == 0)
            top = (uintptr_t)addr + size;
        pthread_attr_destroy(&attr);
    }
    return top;
}

// The walks' bound without pthread_getattr_np (mt_unwind_stack_top) against its answer: the
// same on the initial thread; on a new one (its stack made by glibc or given to it) the
// thread's descriptor, which glibc puts at the top of the stack, under it: every frame of
// the thread lies below the descriptor.
static void* stack_tops(void* arg) {
    uintptr_t* tops = arg;
    tops[0] = mt_unwind_stack_top();
    tops[1] = getattr_top();
    tops[2] = (uintptr_t)__builtin_frame_address(0);
    return NULL;
}

// A thread that forks is the child's initial thread, on its stack still: the same holds.
static void* forked_stack_top(void* arg) {
    (void)arg;
    pid_t child = fork();
    if (child == 0) {
        uintptr_t top = getattr_top(), got = mt_unwind_stack_top();
        _exit(got < top && top - got < 16384 && got > (uintptr_t)__builtin_frame_address(0));
    }
    int status = 0;
    waitpid(child, &status, 0);
    return (void*)(uintptr_t)(WIFEXITED(status) && WEXITSTATUS(status) == 1);
}

static void check_stack_top(const pthread_attr_t* attr, const char* what) {
    uintptr_t tops[3] = {0, 0, 0};
    pthread_t t;
    CHECK(pthread_create(&t, attr, stack_tops, tops) == 0);
    pthread_join(t, NULL);
    printf("%s: stack top %#lx, descriptor %#lx\n", what, (unsigned long)tops[1],
           (unsigned long)tops[0]);
    CHECK(tops[0] < tops[1] && tops[1] - tops[0] < 16384);
    CHECK(tops[0] > tops[2]); // a frame of the thread's lies below it
}

// Runs `iterations` random stacks of `paths` on a thread that starts in the library (so its
// stacks hold no frame of this executable but the check's own), each checked against
// libunwind, with SIGALRM interrupting it every 100 us.
static walk_check run(unsigned iterations, unsigned paths, uint64_t seed) {
    walk_check c = {0};
    uc_job job = {
        .cb = check_walk, .ctx = &c, .iterations = iterations, .paths = paths, .seed = seed};
    sigset_t alarm;
    sigemptyset(&alarm);
    sigaddset(&alarm, SIGALRM);
    struct itimerval every = {{0, 100}, {0, 100}}, off = {{0, 0}, {0, 0}};
    pthread_t t;
    CHECK(pthread_create(&t, NULL, uc_run, &job) == 0);
    pthread_sigmask(SIG_BLOCK, &alarm, NULL); // the walking thread takes the signals
    setitimer(ITIMER_REAL, &every, NULL);
    pthread_join(t, NULL);
    setitimer(ITIMER_REAL, &off, NULL);
    pthread_sigmask(SIG_UNBLOCK, &alarm, NULL);
    CHECK_EQ_I64(c.walks, job.calls);
    return c;
}

int main(void) {
    mt_bootstrap_resolve();
    mt_trie_init();
    mt_maps_init();
    mt_unwind_init(MT_UNWIND_AUTO);
    mt_maps_self_range(&self_lo, &self_hi);
    uintptr_t main_top = getattr_top();
    printf("initial thread: stack top %#lx\n", (unsigned long)main_top);
    CHECK(main_top != 0);
    CHECK_EQ_I64(mt_unwind_stack_top(), main_top);
    check_stack_top(NULL, "new thread");
    static char given[1 << 20] __attribute__((aligned(4096)));
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstack(&attr, given, sizeof given);
    check_stack_top(&attr, "new thread on a stack of its own");
    pthread_attr_destroy(&attr);
    pthread_t t;
    void* forked_ok = NULL;
    CHECK(pthread_create(&t, NULL, forked_stack_top, NULL) == 0);
    pthread_join(t, &forked_ok);
    CHECK(forked_ok != NULL);

    struct sigaction sa = {.sa_handler = on_alarm, .sa_flags = SA_RESTART};
    sigaction(SIGALRM, &sa, NULL);

    // Random stacks: 400 paths (more than the walks kept per thread), 2-61 frames of the
    // library under its thread's start, some beyond the depth limit, each walked 1-3 times in
    // a row.
    walk_check c = run(40000, 400, 7);
    CHECK(c.walks > 40000);
    CHECK_EQ_I64(c.mismatches, 0);
    CHECK(c.truncated > 0 && c.truncated < c.walks);
    CHECK_EQ_I64(c.with_sps, c.walks);
    CHECK_EQ_I64(c.bad_sps, 0);
    printf("random stacks: %u walks, %u cut by the depth limit, %u mismatches, %d walks in the "
           "signal handler\n",
           c.walks, c.truncated, c.mismatches, (int)handler_walks);

    printf("%d checks, %d failed\n", check_count, check_failures);
    return check_failures ? 1 : 0;
}
