// SPDX-License-Identifier: MIT
// The event order's counter (preload/record/seq.c): every seq taken is taken once, by the
// thread alone without a locked instruction and by every thread once another one takes
// seqs, also at the moment the second thread arrives while the first takes seqs without a
// pause, with more threads than cores and a signal handler taking seqs in every thread.
// Each round runs in a fork's child, where the counter starts alone again.
#include "seq.h"

#include "../check.h"

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#define THREADS 4 // with the main thread, more than the machine's 2 cores
#define PER_THREAD 200000
#define PER_SIGNAL 4096
#define ROUNDS 24

static uint64_t taken[THREADS + 1][PER_THREAD];
static uint64_t by_signal[PER_SIGNAL];
static _Atomic int n_signal;
static _Atomic int go;

static void on_alarm(int sig) {
    (void)sig;
    int i = atomic_fetch_add(&n_signal, 1);
    if (i < PER_SIGNAL)
        by_signal[i] = mt_seq_take();
}

static void* take_all(void* arg) {
    uint64_t* out = arg;
    while (!atomic_load(&go))
        ;
    for (int i = 0; i < PER_THREAD; i++)
        out[i] = mt_seq_take();
    return NULL;
}

static int by_value(const void* a, const void* b) {
    uint64_t x = *(const uint64_t*)a, y = *(const uint64_t*)b;
    return (x > y) - (x < y);
}

// One round, in a child: the main thread alone, then threads joining while it takes seqs.
// Returns how many of the seqs were wrong (duplicated, missing or 0), printed.
static int round_in_child(void) {
    int wrong = 0;
    uint64_t first = mt_seq_take();
    if (atomic_load(&mt_seq_owner) != &mt_seq_here) {
        fprintf(stderr, "the thread alone does not take seqs the fast way\n");
        wrong++;
    }
    uint64_t base = first - 1; // the seqs taken before the fork
    struct itimerval every = {{0, 50}, {0, 50}};
    signal(SIGALRM, on_alarm);
    setitimer(ITIMER_REAL, &every, NULL);
    pthread_t th[THREADS];
    for (int t = 0; t < THREADS; t++)
        pthread_create(&th[t], NULL, take_all, taken[t + 1]);
    taken[0][0] = first;
    for (int i = 1; i < PER_THREAD; i++) {
        if (i == PER_THREAD / 8)
            atomic_store(&go, 1); // the others start while this thread takes seqs
        taken[0][i] = mt_seq_take();
    }
    for (int t = 0; t < THREADS; t++)
        pthread_join(th[t], NULL);
    setitimer(ITIMER_REAL, &(struct itimerval){0}, NULL);
    int ns = atomic_load(&n_signal) < PER_SIGNAL ? atomic_load(&n_signal) : PER_SIGNAL;
    size_t n = (size_t)(THREADS + 1) * PER_THREAD + (size_t)ns;
    uint64_t* all = malloc(n * sizeof *all);
    memcpy(all, taken, sizeof taken);
    memcpy(all + (THREADS + 1) * PER_THREAD, by_signal, (size_t)ns * sizeof *by_signal);
    qsort(all, n, sizeof *all, by_value);
    for (size_t i = 0; i < n; i++)
        if (all[i] != base + 1 + i) {
            if (wrong < 5)
                fprintf(stderr, "seq %zu of %zu is %llu, not %llu\n", i, n,
                        (unsigned long long)all[i], (unsigned long long)(base + 1 + i));
            wrong++;
        }
    if (mt_seq_now() != base + n) {
        fprintf(stderr, "last seq %llu, not %llu\n", (unsigned long long)mt_seq_now(),
                (unsigned long long)(base + n));
        wrong++;
    }
    if (atomic_load(&mt_seq_owner) == &mt_seq_here) {
        fprintf(stderr, "still taken the fast way with other threads\n");
        wrong++;
    }
    free(all);
    return wrong;
}

static void* take_some(void* arg) {
    uint64_t* out = arg;
    for (int i = 0; i < 1000; i++)
        out[i] = mt_seq_take();
    return NULL;
}

// A thread takes the counter alone and ends; the next one may get its thread-local storage
// (glibc reuses it), and with it the place of the one alone: it must take seqs all the same.
static int reuse_in_child(void) {
    int wrong = 0;
    for (int t = 0; t < 4; t++) {
        pthread_t th;
        pthread_create(&th, NULL, take_some, taken[t]);
        pthread_join(th, NULL);
        for (int i = 0; i < 1000; i++)
            if (taken[t][i] != (uint64_t)(t * 1000 + i + 1) && wrong++ < 5)
                fprintf(stderr, "thread %d's seq %d is %llu\n", t, i,
                        (unsigned long long)taken[t][i]);
    }
    return wrong;
}

// Runs round in a fork's child, rounds times: each child's counter starts as the fork left it.
static void in_children(int rounds, int (*round)(void)) {
    for (int r = 0; r < rounds; r++) {
        pid_t pid = fork();
        if (pid == 0) {
            mt_seq_fork_child();
            _exit(round() ? 1 : 0);
        }
        int status = 0;
        waitpid(pid, &status, 0);
        CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    }
}

int main(void) {
    mt_seq_init();
    in_children(4, reuse_in_child);
    // Alone, in this process: consecutive seqs, the fast way where the kernel offers it.
    for (uint64_t i = 1; i <= 1000; i++)
        CHECK_EQ_I64(mt_seq_take(), i);
    if (atomic_load(&mt_seq_owner) != &mt_seq_here) {
        printf("SKIP: no rseq or membarrier here: every seq takes the locked way\n");
        return 77;
    }
    in_children(ROUNDS, round_in_child);
    // The fork children's seqs were their own: this process still counts alone from 1000.
    CHECK_EQ_I64(mt_seq_take(), 1001);
    printf("%d checks, %d failed\n", check_count, check_failures);
    return check_failures != 0;
}
