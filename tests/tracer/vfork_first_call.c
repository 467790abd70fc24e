// SPDX-License-Identifier: MIT
// Thread A makes its first heap call in a vfork child (so its record is made there, with the
// child's pid), then keeps allocating for 300 ms in a thread-specific data destructor that
// runs after the tracer's own, while threads B start one after another. A's record must not
// be reused by a B while A still runs: every B's 10000 malloc(222) and every one of A's
// malloc(111) are recorded. Prints how many malloc(111) A made.
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define B_THREADS 10
#define B_CALLS 10000

static pthread_key_t late_key;
static long a_calls;

static long ms_since(const struct timespec* t0) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (t.tv_sec - t0->tv_sec) * 1000 + (t.tv_nsec - t0->tv_nsec) / 1000000;
}

static void late(void* v) {
    (void)v;
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    while (ms_since(&t0) < 300) {
        void* volatile p = malloc(111);
        free(p);
        a_calls++;
    }
}

static void* thread_a(void* arg) {
    (void)arg;
    pid_t child = vfork();
    if (child == 0) {
        void* volatile p = malloc(7); // the first heap call of this thread
        (void)p;
        _exit(0);
    }
    waitpid(child, NULL, 0);
    pthread_setspecific(late_key, (void*)1);
    return NULL;
}

static void* thread_b(void* arg) {
    (void)arg;
    for (int i = 0; i < B_CALLS; i++) {
        void* volatile p = malloc(222);
        free(p);
    }
    return NULL;
}

int main(void) {
    pthread_key_create(&late_key, late);
    pthread_t a;
    if (pthread_create(&a, NULL, thread_a, NULL) != 0)
        return 2;
    struct timespec pause = {0, 50 * 1000 * 1000}; // A is in its destructor by then
    nanosleep(&pause, NULL);
    for (int k = 0; k < B_THREADS; k++) {
        pthread_t b;
        if (pthread_create(&b, NULL, thread_b, NULL) != 0)
            return 2;
        pthread_join(b, NULL);
        pause.tv_nsec = 10 * 1000 * 1000;
        nanosleep(&pause, NULL);
    }
    pthread_join(a, NULL);
    printf("a_calls %ld\n", a_calls);
    return 0;
}
