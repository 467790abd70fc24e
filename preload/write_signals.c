// SPDX-License-Identifier: MIT
// SIGXFSZ and SIGPIPE held around the tracer's writes on a program's thread: see
// write_signals.h.
#include "write_signals.h"

#include <pthread.h>
#include <time.h>

static const int raised_by_write[] = {SIGXFSZ, SIGPIPE};
#define RAISED_COUNT (sizeof raised_by_write / sizeof *raised_by_write)

void mt_write_signals_hold(mt_write_signals* h) {
    sigset_t held;
    sigemptyset(&held);
    for (size_t i = 0; i < RAISED_COUNT; i++)
        sigaddset(&held, raised_by_write[i]);
    pthread_sigmask(SIG_BLOCK, &held, &h->old_mask);
    if (sigpending(&h->pending_before) != 0)
        sigemptyset(&h->pending_before);
}

void mt_write_signals_end_hold(sigset_t* old) {
    static const int sent[] = {SIGHUP,  SIGINT,    SIGQUIT, SIGTERM, SIGUSR1, SIGUSR2,
                               SIGALRM, SIGVTALRM, SIGPROF, SIGIO,   SIGPWR};
    sigset_t held;
    sigemptyset(&held);
    for (size_t i = 0; i < sizeof sent / sizeof *sent; i++)
        sigaddset(&held, sent[i]);
    pthread_sigmask(SIG_BLOCK, &held, old);
}

void mt_write_signals_end_release(const sigset_t* old) {
    pthread_sigmask(SIG_SETMASK, old, NULL);
}

void mt_write_signals_release(const mt_write_signals* h) {
    sigset_t pending;
    for (size_t i = 0; i < RAISED_COUNT; i++) {
        int sig = raised_by_write[i];
        if (!sigismember(&h->pending_before, sig) && sigpending(&pending) == 0 &&
            sigismember(&pending, sig)) {
            sigset_t one;
            sigemptyset(&one);
            sigaddset(&one, sig);
            struct timespec now = {0, 0};
            sigtimedwait(&one, NULL, &now);
        }
    }
    pthread_sigmask(SIG_SETMASK, &h->old_mask, NULL);
}
