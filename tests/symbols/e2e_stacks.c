// SPDX-License-Identifier: MIT
// e2e subject for the symbol tests: one program, one case per argument, each allocating
// from known call chains with a unique size so the driver (check_stacks.py) can find the
// stack and compare its function names exactly. Built twice: with frame pointers and with
// -fomit-frame-pointer; both must give the same chains.
#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))
#define ALWAYS_INLINE static inline __attribute__((always_inline))
// Keeps the pointer alive and the call from becoming a tail jump.
#define KEEP(p) __asm__ volatile("" ::"r"(p) : "memory")

static void* volatile sink[64];
static int nsink;

static void hold(void* p) {
    sink[nsink++ % 64] = p;
}

// ---- chain: plain calls (size 1001), through an inlined helper (1002)

static NOINLINE void chain_c(void) {
    void* p = malloc(1001);
    KEEP(p);
    hold(p);
}
static NOINLINE void chain_b(void) {
    chain_c();
    KEEP(0);
}
static NOINLINE void chain_a(void) {
    chain_b();
    KEEP(0);
}

ALWAYS_INLINE void* inlined_alloc(void) {
    void* p = malloc(1002);
    KEEP(p);
    return p;
}
static NOINLINE void inline_host(void) {
    hold(inlined_alloc());
    KEEP(0);
}

// ---- recursion deeper than MEMTRACE_DEPTH (size 1003)

static NOINLINE void recurse(int n) {
    if (n == 0) {
        void* p = malloc(1003);
        KEEP(p);
        hold(p);
    } else {
        recurse(n - 1);
    }
    KEEP(0);
}

// ---- a signal handler that allocates (size 1004)

static void on_signal(int sig) {
    (void)sig;
    void* p = malloc(1004);
    KEEP(p);
    hold(p);
}
static volatile sig_atomic_t usr2_seen;
static void on_usr2(int sig) {
    (void)sig;
    usr2_seen = 1;
}
static NOINLINE void raise_signal(void) {
    kill(getpid(), SIGUSR1);
    KEEP(0);
}

// ---- threads (sizes 1005, 1006)

static NOINLINE void* worker_one(void* arg) {
    void* p = malloc(1005);
    KEEP(p);
    hold(p);
    return arg;
}
static NOINLINE void* worker_two(void* arg) {
    void* p = malloc(1006);
    KEEP(p);
    hold(p);
    return arg;
}

// ---- dlopen/dlclose of two libraries loaded at the same address (sizes 1007, 1008)

static NOINLINE int run_library(const char* path, const char* fn) {
    void* h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        fprintf(stderr, "dlopen %s: %s\n", path, dlerror());
        return 1;
    }
    void* sym = dlsym(h, fn);
    void* (*f)(void);
    memcpy(&f, &sym, sizeof sym);
    hold(f());
    printf("%s %p\n", fn, sym); // the driver checks both were at the same address
    dlclose(h);
    return 0;
}

int main(int argc, char** argv) {
    if (argc < 2)
        return 2;
    const char* c = argv[1];
    if (!strcmp(c, "chain")) {
        chain_a();
        inline_host();
    } else if (!strcmp(c, "recursion")) {
        recurse(argc > 2 ? atoi(argv[2]) : 100);
    } else if (!strcmp(c, "signal")) {
        // The program's own sigprocmask works as without the tracer (which intercepts it):
        // blocked, a signal waits; unblocked, it is delivered.
        signal(SIGUSR2, on_usr2);
        sigset_t usr2, pending;
        sigemptyset(&usr2);
        sigaddset(&usr2, SIGUSR2);
        if (sigprocmask(SIG_BLOCK, &usr2, NULL) != 0)
            return 3;
        raise(SIGUSR2);
        if (sigpending(&pending) != 0 || !sigismember(&pending, SIGUSR2) || usr2_seen)
            return 4;
        if (sigprocmask(SIG_UNBLOCK, &usr2, NULL) != 0 || !usr2_seen)
            return 5;
        signal(SIGUSR1, on_signal);
        raise_signal();
    } else if (!strcmp(c, "threads")) {
        pthread_t a, b;
        pthread_create(&a, NULL, worker_one, NULL);
        pthread_join(a, NULL);
        pthread_create(&b, NULL, worker_two, NULL);
        pthread_join(b, NULL);
    } else if (!strcmp(c, "dlopen") && argc == 4) {
        if (run_library(argv[2], "dl_one_alloc") || run_library(argv[3], "dl_two_alloc"))
            return 1;
    } else {
        return 2;
    }
    return 0;
}
