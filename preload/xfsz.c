// SPDX-License-Identifier: MIT
// SIGXFSZ held around the tracer's writes on a program's thread: see xfsz.h.
#include "xfsz.h"

#include <pthread.h>
#include <time.h>

static void only_xfsz(sigset_t* set) {
    sigemptyset(set);
    sigaddset(set, SIGXFSZ);
}

void mt_xfsz_hold(mt_xfsz* h) {
    sigset_t xfsz, pending;
    only_xfsz(&xfsz);
    pthread_sigmask(SIG_BLOCK, &xfsz, &h->old_mask);
    h->pending_before = sigpending(&pending) == 0 && sigismember(&pending, SIGXFSZ);
}

void mt_xfsz_release(const mt_xfsz* h) {
    sigset_t xfsz, pending;
    only_xfsz(&xfsz);
    if (!h->pending_before && sigpending(&pending) == 0 && sigismember(&pending, SIGXFSZ)) {
        struct timespec now = {0, 0};
        sigtimedwait(&xfsz, NULL, &now);
    }
    pthread_sigmask(SIG_SETMASK, &h->old_mask, NULL);
}
