// SPDX-License-Identifier: MIT
// e2e truth: a signal handler that allocates, interrupting the program's own heap calls
// thousands of times (SIGALRM every 100 us). Every allocation and free of the handler must be
// recorded, including those made while a hook of the tracer was running on this thread.
// The main loop and the handler use different sizes (64 and 48 B: separate tcache bins, so
// the handler never waits for a lock the interrupted call holds). The handler leaks every
// 8th block; a final 1 MiB block, after the timer stops, makes the peak order-independent.
// Then threads whose first heap call comes under a timer of their own: the tracer makes a
// thread's record in that call, and a handler's call meanwhile must be recorded too.
#include "truth.h"

#include <pthread.h>
#include <signal.h>
#include <sys/time.h>
#include <time.h>

static void* volatile sink;
static volatile sig_atomic_t alarms;
static __thread volatile sig_atomic_t my_alarms;
static int64_t threads_with_events = 1; // the main thread

static void on_alarm(int sig) {
    (void)sig;
    int saved = errno;
    void* p = T_malloc(48);
    my_alarms++;
    if (++alarms % 8)
        T_free(p, 48);
    else
        sink = p;
    errno = saved;
}

__attribute__((noinline)) static void churn(int depth) {
    if (depth > 0) {
        churn(depth - 1);
        return;
    }
    void* p = T_malloc(64);
    T_free(p, 64);
}

enum { FIRST_CALL_THREADS = 100 };

static void* first_call_under_signals(void* unused) {
    (void)unused;
    if (t_baseline())
        return NULL;
    // A timer whose signals come to this thread only, every 20 us.
    struct sigevent to_me;
    memset(&to_me, 0, sizeof to_me);
    to_me.sigev_notify = SIGEV_THREAD_ID;
    to_me.sigev_signo = SIGALRM;
    to_me._sigev_un._tid = gettid(); // sigev_notify_thread_id, not named by glibc 2.36
    timer_t timer;
    if (timer_create(CLOCK_MONOTONIC, &to_me, &timer) != 0)
        t_fail(13, "timer_create");
    struct itimerspec every = {{0, 20000}, {0, 20000}}, off = {{0, 0}, {0, 0}};
    timer_settime(timer, 0, &every, NULL);
    // free(NULL): the thread's first heap call, in which the tracer makes its record, while
    // no allocator lock is held (a handler's malloc inside a real malloc could wait forever).
    // Nothing else runs under the timer: a handler's malloc interrupting a malloc of this
    // thread, whose cache is still empty, would wait for the arena lock forever.
    T_free(NULL, 0);
    timer_settime(timer, 0, &off, NULL);
    timer_delete(timer);
    if (my_alarms) // the capture counts the threads that made heap events
        T_ADD(threads_with_events, 1);
    return NULL;
}

int main(void) {
    if (!t_baseline()) {
        // The first call sets up the allocator's per-thread cache under its arena lock: a
        // handler interrupting that would wait for the lock forever, traced or not.
        T_free(T_malloc(64), 64);
        T_free(T_malloc(48), 48);
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_alarm;
        sa.sa_flags = SA_RESTART;
        sigemptyset(&sa.sa_mask);
        sigaction(SIGALRM, &sa, NULL);
        struct itimerval every = {{0, 100}, {0, 100}}, off = {{0, 0}, {0, 0}};
        setitimer(ITIMER_REAL, &every, NULL);
        for (int i = 0; i < 300000 || alarms < 1000; i++)
            churn(i % 16);
        setitimer(ITIMER_REAL, &off, NULL);
    }
    for (int i = 0; i < FIRST_CALL_THREADS; i++) {
        pthread_t t;
        if (pthread_create(&t, NULL, first_call_under_signals, NULL) != 0)
            t_fail(14, "pthread_create");
        pthread_join(t, NULL);
    }
    if (!t_baseline()) {
        void* big = T_malloc(1 << 20);
        T_free(big, 1 << 20);
        t_extra("alarms", alarms);
        truth.threads = threads_with_events;
    }
    return t_write("") ? 12 : 0;
}
