// SPDX-License-Identifier: MIT
// 200 threads alive at once, each allocating before and after a barrier: every thread holds
// a partly filled event buffer at the same time, and none may wait for another's.
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#define N 200 // more threads than the tracer keeps full buffers pending
static pthread_barrier_t bar;
void* volatile sink;
static void* run(void* a) {
    (void)a;
    sink = malloc(64);
    free(sink);
    pthread_barrier_wait(&bar);
    sink = malloc(16);
    free(sink);
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
