// SPDX-License-Identifier: MIT
// A traced program with known temporary allocations, for tests/reports/e2e_temporaries.py,
// which compares memreport stats' count with heaptrack's on this program. heaptrack's rule
// (docs/reports.md): a free is temporary when the event just before it, over all threads,
// is an allocation of the same size from the same stack. Expected temporaries by function:
//   temp_loop       1000  malloc then free, 1000 times
//   kept               1  1000 blocks, then 1000 frees: the first free follows an
//                         allocation of the same size and stack (another block)
//   realloc_chain   3000  malloc, realloc, realloc, free: each free (realloc's implicit
//                         ones included) follows the allocation of that block
//   cross_thread       1  main allocates, the worker frees it next (the rule is global)
//   interleaved        0  the worker allocates, main allocates, the worker frees
// The threads take turns through semaphores, so the order of events is fixed.
// heaptrack itself loads libstdc++, whose allocations the test leaves out of its count.
#include <pthread.h>
#include <semaphore.h>
#include <stdlib.h>

#define N 1000

void* volatile sink;
static sem_t to_worker, to_main;
static void* shared;

__attribute__((noinline)) void temp_loop(void) {
    for (int i = 0; i < N; i++) {
        void* p = malloc(64 + (size_t)(i % 8));
        sink = p;
        free(p);
    }
}

__attribute__((noinline)) void kept(void) {
    static void* keep[N];
    for (int i = 0; i < N; i++)
        keep[i] = malloc(48);
    for (int i = 0; i < N; i++)
        free(keep[i]);
}

__attribute__((noinline)) void realloc_chain(void) {
    for (int i = 0; i < N; i++) {
        void* p = malloc(16);
        p = realloc(p, 4096);
        p = realloc(p, 64);
        sink = p;
        free(p);
    }
}

__attribute__((noinline)) void cross_thread(void) {
    shared = malloc(100);
}

__attribute__((noinline)) void interleaved(void) {
    shared = malloc(200);
}

__attribute__((noinline)) void main_between(void) {
    sink = malloc(300);
}

static void* worker(void* arg) {
    (void)arg;
    sem_wait(&to_worker);
    free(shared); // cross_thread's block
    interleaved();
    sem_post(&to_main);
    sem_wait(&to_worker);
    free(shared); // interleaved's block, after main_between's allocation
    sem_post(&to_main);
    return NULL;
}

int main(void) {
    sem_init(&to_worker, 0, 0);
    sem_init(&to_main, 0, 0);
    pthread_t t;
    pthread_create(&t, NULL, worker, NULL);
    temp_loop();
    kept();
    realloc_chain();
    cross_thread();
    sem_post(&to_worker);
    sem_wait(&to_main);
    main_between();
    sem_post(&to_worker);
    sem_wait(&to_main);
    pthread_join(t, NULL);
    free(sink);
    return 0;
}
