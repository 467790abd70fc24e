// SPDX-License-Identifier: MIT
// unshare and setns. The kernel lets only a process of one thread enter a new user namespace
// (unshare(CLONE_NEWUSER): `unshare -U`, bwrap, rootless containers) or another user or
// mount namespace (setns: nsenter); a second thread makes the call fail with EINVAL. The
// writer thread must not be that second thread: where it is the only other one, the call is
// made while it does not exist (writer.h). Same arguments, same result and errno.
#include "core.h"
#include "writer.h"

#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

static int call_alone(long nr, long a, long b) {
    mt_writer_away away;
    mt_writer_step_aside(&away);
    long rc = syscall(nr, a, b);
    mt_writer_come_back(&away);
    return (int)rc;
}

MT_EXPORT int unshare(int flags) {
    // The kernel adds CLONE_THREAD to CLONE_NEWUSER; these three need one thread.
    if (flags & (CLONE_NEWUSER | CLONE_THREAD | CLONE_SIGHAND | CLONE_VM))
        return call_alone(SYS_unshare, flags, 0);
    return (int)syscall(SYS_unshare, flags);
}

MT_EXPORT int setns(int fd, int nstype) {
    // 0: whatever namespace fd names; a pidfd's nstype is a set of CLONE_NEW* flags.
    if (nstype == 0 || (nstype & (CLONE_NEWUSER | CLONE_NEWNS)))
        return call_alone(SYS_setns, fd, nstype);
    return (int)syscall(SYS_setns, fd, nstype);
}
