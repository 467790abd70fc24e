// SPDX-License-Identifier: MIT
// e2e: one program, every exit path (argv[1]): return, exit (code 3), abort and segv
// (after a pause, so the tracer has committed everything), abort_now (no pause), kill
// (prints "ready" and waits for the driver's SIGKILL), thread_exit (a thread calls
// exit(5) once three others have made 1000 malloc/free pairs, while they go on; truth is a
// lower bound). Known work comes first.
#include "truth.h"

#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <time.h>

static void* volatile sink;
static long churned; // heap call pairs the churn threads made (atomic)

static void pause_ms(long ms) {
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

static int64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void* churn(void* arg) {
    (void)arg;
    // The baseline creates the same threads (their set-up allocations are measured) but
    // they do not churn, so the baseline stays deterministic.
    while (t_baseline())
        pause();
    for (;;) {
        // A local, not `sink`: three threads writing one global is a data race.
        void* volatile p = malloc(64);
        free(p);
        __atomic_add_fetch(&churned, 1, __ATOMIC_RELAXED);
    }
    return NULL;
}

static void* exiter(void* arg) {
    (void)arg;
    // Exits while the others churn, once they have churned: a count, not a time (a loaded
    // machine may not run them at all within a fixed pause). The baseline does not churn.
    while (!t_baseline() && __atomic_load_n(&churned, __ATOMIC_RELAXED) < 1000)
        pause_ms(1);
    exit(5);
    return NULL;
}

int main(int argc, char** argv) {
    const char* mode = argc > 1 ? argv[1] : "return";
    if (!t_baseline()) {
        sink = T_malloc(1000);
        sink = T_malloc(2000);
        sink = T_calloc(3, 1000);
        for (int i = 0; i < 20; i++) {
            void* p = T_malloc(100 + (size_t)i);
            T_free(p, 100 + (size_t)i);
        }
    }
    // The truth is written before the exit path: after it nothing more is known.
    if (strcmp(mode, "thread_exit") == 0)
        truth.threads = 1; // at least: the churn threads are counted by the driver
    if (t_write(""))
        return 12;
    if (strcmp(mode, "return") == 0)
        return 0;
    if (strcmp(mode, "exit") == 0)
        exit(3);
    if (strcmp(mode, "abort") == 0 || strcmp(mode, "segv") == 0) {
        pause_ms(400);
        if (mode[0] == 'a')
            abort();
        // A real fault on an unmapped page (not NULL, which the compiler may turn into a trap).
        *(volatile int*)(uintptr_t)16 = 1;
        return 13;
    }
    if (strcmp(mode, "abort_now") == 0)
        abort();
    if (strcmp(mode, "timed") == 0) {
        // Two allocations 300 ms apart, each bracketed by CLOCK_MONOTONIC: the capture's
        // time between them must fall in what the program itself saw.
        int64_t a = now_ns();
        sink = malloc(11111);
        int64_t b = now_ns();
        pause_ms(300);
        int64_t c = now_ns();
        sink = malloc(22222);
        int64_t d = now_ns();
        printf("between %lld %lld\n", (long long)(c - b), (long long)(d - a));
        return 0;
    }
    if (strcmp(mode, "kill") == 0) {
        (void)!write(1, "ready\n", 6);
        for (;;)
            pause();
    }
    if (strcmp(mode, "thread_exit") == 0) {
        pthread_t t;
        for (int i = 0; i < 3; i++)
            pthread_create(&t, NULL, churn, NULL);
        pthread_create(&t, NULL, exiter, NULL);
        for (;;)
            pause();
    }
    return 14;
}
