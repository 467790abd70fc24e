// SPDX-License-Identifier: MIT
// The tracer's own writes on a program's thread (the capture's end at exit, exec or _exit;
// the line added to the launcher's list of captures) may cross the file size limit
// (RLIMIT_FSIZE, `ulimit -f`). Such a write fails with EFBIG and also raises SIGXFSZ at the
// thread, which kills the program by default. Between mt_xfsz_hold and mt_xfsz_release the
// signal is held, and dropped if the tracer's writes raised it; one the program already had
// pending stays pending. Never allocates.
#ifndef MT_XFSZ_H
#define MT_XFSZ_H

#include <signal.h>
#include <stdbool.h>

typedef struct mt_xfsz {
    sigset_t old_mask;
    bool pending_before;
} mt_xfsz;

void mt_xfsz_hold(mt_xfsz* h);
void mt_xfsz_release(const mt_xfsz* h);

#endif
