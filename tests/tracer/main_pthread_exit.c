// SPDX-License-Identifier: MIT
// main ends with pthread_exit while a worker goes on: the process must end when the worker
// does, with status 0, as untraced (glibc exits when the last thread ends; the tracer's
// writer thread must not count as one). The worker makes 1000 malloc(300) and frees them.
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static void* worker(void* arg) {
    (void)arg;
    struct timespec pause = {0, 50 * 1000 * 1000}; // main has ended by then
    nanosleep(&pause, NULL);
    for (int i = 0; i < 1000; i++) {
        void* volatile p = malloc(300);
        free(p);
    }
    puts("worker done");
    fflush(stdout);
    return NULL;
}

int main(void) {
    pthread_t t;
    if (pthread_create(&t, NULL, worker, NULL) != 0)
        return 2;
    pthread_exit(NULL);
}
