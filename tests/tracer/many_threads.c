// SPDX-License-Identifier: MIT
// 200 threads alive at once, each allocating before and after a barrier: every thread holds
// a partly filled event buffer at the same time, and none may wait for another's.
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#define N 200 // more threads than the tracer keeps full buffers pending
static pthread_barrier_t bar;
static void* run(void* a) {
    (void)a;
    // A local pointer: a global shared by all threads let two of them free the same block
    // (a double free that glibc aborted on, about 1 run in 1000 under load).
    void* volatile p = malloc(64);
    free(p);
    pthread_barrier_wait(&bar);
    p = malloc(16);
    free(p);
    return NULL;
}
int main(void) {
    pthread_barrier_init(&bar, NULL, N);
    pthread_t t[N];
    for (int i = 0; i < N; i++)
        pthread_create(&t[i], NULL, run, NULL);
    for (int i = 0; i < N; i++)
        pthread_join(t[i], NULL);
    puts("many threads ok");
    return 0;
}
