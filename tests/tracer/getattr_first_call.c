// SPDX-License-Identifier: MIT
// The first heap call of the initial thread, and of a new thread, is made inside
// pthread_getattr_np, which holds the thread's own lock while it calls fopen and realloc:
// what Rust's runtime does at the start of main and of every thread. Traced, the program hung
// in the tracer's first hook of the thread, which called pthread_getattr_np again and waited
// for that lock. Then each thread leaks a block of its own size from a function of its own
// (4001 bytes in leak_in_main, 4002 in leak_in_thread). Prints what it found, no address.
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

static void* kept[2];

static int stack_known(void) {
    pthread_attr_t attr;
    void* addr = NULL;
    size_t size = 0;
    if (pthread_getattr_np(pthread_self(), &attr) != 0)
        return 0;
    int ok = pthread_attr_getstack(&attr, &addr, &size) == 0 && addr && size;
    pthread_attr_destroy(&attr);
    return ok;
}

static __attribute__((noinline)) void leak_in_main(void) {
    kept[0] = malloc(4001);
}

static __attribute__((noinline)) void leak_in_thread(void) {
    kept[1] = malloc(4002);
}

static void* thread_main(void* arg) {
    int* known = arg;
    *known = stack_known();
    leak_in_thread();
    return NULL;
}

int main(void) {
    int main_known = stack_known(); // before any other heap call of this thread
    int thread_known = 0;
    pthread_t t;
    if (pthread_create(&t, NULL, thread_main, &thread_known) != 0)
        return 2;
    pthread_join(t, NULL);
    leak_in_main();
    printf("main stack %s\nthread stack %s\n", main_known ? "known" : "unknown",
           thread_known ? "known" : "unknown");
    return kept[0] && kept[1] ? 0 : 3;
}
