// SPDX-License-Identifier: MIT
// e2e truth: a signal handler that allocates, interrupting the program's own heap calls
// thousands of times (SIGALRM every 100 us). Every allocation and free of the handler must be
// recorded, including those made while a hook of the tracer was running on this thread.
// The main loop and the handler use different sizes (64 and 48 B: separate tcache bins, so
// the handler never waits for a lock the interrupted call holds). The handler leaks every
// 8th block; a final 1 MiB block, after the timer stops, makes the peak order-independent.
#include "truth.h"

#include <signal.h>
#include <sys/time.h>

static void* volatile sink;
static volatile sig_atomic_t alarms;

static void on_alarm(int sig) {
    (void)sig;
    int saved = errno;
    void* p = T_malloc(48);
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
        void* big = T_malloc(1 << 20);
        T_free(big, 1 << 20);
        t_extra("alarms", alarms);
    }
    return t_write("") ? 12 : 0;
}
