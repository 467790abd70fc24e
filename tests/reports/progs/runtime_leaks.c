// SPDX-License-Identifier: MIT
// A traced program whose leaks are known, plus what the C runtime keeps for itself, for
// tests/reports/e2e_runtime.py: leak_here leaks 3 x 1000 B and worker_leak (in a thread)
// 1 x 2000 B; printf to a pipe makes libc allocate stdout's buffer, and pthread_create
// makes the dynamic loader allocate the thread's DTV (kept with the cached stack after
// the join). Neither is the program's leak.
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

static void* volatile sink;

__attribute__((noinline)) static void leak_here(void) {
    for (int i = 0; i < 3; i++)
        sink = malloc(1000);
}

__attribute__((noinline)) static void worker_leak(void) {
    sink = malloc(2000);
}

static void* worker(void* arg) {
    (void)arg;
    worker_leak();
    return NULL;
}

int main(void) {
    printf("leaking %d blocks\n", 4);
    leak_here();
    pthread_t t;
    if (pthread_create(&t, NULL, worker, NULL) != 0 || pthread_join(t, NULL) != 0)
        return 1;
    return 0;
}
