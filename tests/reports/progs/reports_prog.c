// SPDX-License-Identifier: MIT
// A traced program with known truth for the report e2e test (tests/reports/e2e_test.py):
// leak_here leaks 3 x 1000 B; a thread named "rp-worker" leaks 5 x 2000 B in worker_leak;
// peak_phase holds 10 x 10000 B at the peak, then frees them; temp_loop makes 20
// temporary 32 B allocations (each freed right after it is made).
#include <pthread.h>
#include <stdlib.h>

static void* volatile sink;

__attribute__((noinline)) static void leak_here(void) {
    for (int i = 0; i < 3; i++)
        sink = malloc(1000);
}

__attribute__((noinline)) static void worker_leak(void) {
    for (int i = 0; i < 5; i++)
        sink = malloc(2000);
}

static void* worker(void* arg) {
    (void)arg;
    pthread_setname_np(pthread_self(), "rp-worker");
    worker_leak();
    return NULL;
}

__attribute__((noinline)) static void peak_phase(void) {
    void* p[10];
    for (int i = 0; i < 10; i++)
        p[i] = malloc(10000);
    sink = p[9];
    for (int i = 0; i < 10; i++)
        free(p[i]);
}

__attribute__((noinline)) static void temp_loop(void) {
    for (int i = 0; i < 20; i++) {
        void* p = malloc(32);
        sink = p;
        free(p);
    }
}

int main(void) {
    leak_here();
    pthread_t t;
    if (pthread_create(&t, NULL, worker, NULL) != 0 || pthread_join(t, NULL) != 0)
        return 1;
    temp_loop();
    peak_phase();
    return 0;
}
