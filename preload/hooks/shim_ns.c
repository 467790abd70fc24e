// SPDX-License-Identifier: MIT
// unshare, setns, chroot and prctl. A forked child's deferred capture is made first: in the
// new namespace or root its path may name another file, or none, and a seccomp filter (set
// after PR_SET_NO_NEW_PRIVS, as libseccomp does, or with PR_SET_SECCOMP) may refuse the
// calls that make it. The kernel lets only a process of one thread enter a new user
// namespace (unshare(CLONE_NEWUSER): `unshare -U`, bwrap, rootless containers) or another
// user or mount namespace (setns: nsenter); a second thread makes the call fail with EINVAL.
// The writer thread must not be that second thread: where it is the only other one, the call
// is made while it does not exist (writer.h). A seccomp filter lists the calls the program
// needs, not those of the tracer's writer, and may kill the process at any other (OpenSSH's
// privilege-separated child, bwrap): the capture is finished before one is set, as before an
// exec, and the program goes on untraced (recording again if the filter was refused). Same
// arguments, same result and errno.
#include "core.h"
#include "writer.h"

#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <sys/prctl.h>
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
    mt_core_undefer();
    // The kernel adds CLONE_THREAD to CLONE_NEWUSER; these three need one thread.
    if (flags & (CLONE_NEWUSER | CLONE_THREAD | CLONE_SIGHAND | CLONE_VM))
        return call_alone(SYS_unshare, flags, 0);
    return (int)syscall(SYS_unshare, flags);
}

MT_EXPORT int setns(int fd, int nstype) {
    mt_core_undefer();
    // 0: whatever namespace fd names; a pidfd's nstype is a set of CLONE_NEW* flags.
    if (nstype == 0 || (nstype & (CLONE_NEWUSER | CLONE_NEWNS)))
        return call_alone(SYS_setns, fd, nstype);
    return (int)syscall(SYS_setns, fd, nstype);
}

MT_EXPORT int chroot(const char* path) {
    mt_core_undefer();
    return (int)syscall(SYS_chroot, path);
}

// glibc's prctl reads four more arguments whatever the option, and makes the system call.
MT_EXPORT int prctl(int option, ...) {
    va_list ap;
    va_start(ap, option);
    unsigned long a2 = va_arg(ap, unsigned long), a3 = va_arg(ap, unsigned long);
    unsigned long a4 = va_arg(ap, unsigned long), a5 = va_arg(ap, unsigned long);
    va_end(ap);
    if (option == PR_SET_NO_NEW_PRIVS || option == PR_SET_SECCOMP)
        mt_core_undefer();
    if (option != PR_SET_SECCOMP)
        return (int)syscall(SYS_prctl, option, a2, a3, a4, a5);
    mt_core_before_exec();
    int rc = (int)syscall(SYS_prctl, option, a2, a3, a4, a5);
    if (rc != 0) {
        int saved = errno;
        mt_core_after_failed_exec();
        errno = saved;
    }
    return rc;
}
