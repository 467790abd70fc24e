// SPDX-License-Identifier: MIT
// The set*id family. The kernel keeps credentials per thread; glibc makes every thread of the
// process take the new ids and aborts the process when a thread fails where the caller
// succeeded. The writer thread is such a thread: a program that keeps a capability across
// its setuid (PR_SET_KEEPCAPS, then capset on its own thread: setpriv, daemons keeping
// CAP_NET_BIND_SERVICE) has it on its own thread only, and its setgid failed on the
// writer's: SIGABRT. Where the writer is the caller's only other thread, the call is made
// while it does not exist (writer.h); the next writer thread takes the caller's credentials.
// Same arguments, same result and errno. Not initgroups: its group lookup may take long (NSS
// over the network) with the writer away and signals blocked; it sets the groups inside libc.
#include "core.h"
#include "writer.h"

#include <dlfcn.h>
#include <errno.h>
#include <grp.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

// The function the program would have called (libc's), found once. dlsym allocates at most
// its error message: untraced, as the tracer's own.
static void* next(void** slot, const char* name) {
    void* fn = __atomic_load_n(slot, __ATOMIC_ACQUIRE);
    if (!fn) {
        mt_guard++;
        fn = dlsym(RTLD_NEXT, name);
        mt_guard--;
        __atomic_store_n(slot, fn, __ATOMIC_RELEASE);
    }
    return fn;
}

// One hook: NAME(PARAMS) calls libc's NAME(ARGS) with the writer thread away.
#define ALONE(name, params, types, args)                                                           \
    MT_EXPORT int name params {                                                                    \
        static void* fn;                                                                           \
        int(*real) types;                                                                          \
        void* found = next(&fn, #name);                                                            \
        if (!found) {                                                                              \
            errno = ENOSYS;                                                                        \
            return -1;                                                                             \
        }                                                                                          \
        memcpy(&real, &found, sizeof real);                                                        \
        mt_core_undefer(); /* made as the user it was made for */                                  \
        mt_writer_away away;                                                                       \
        mt_writer_step_aside(&away);                                                               \
        int rc = real args;                                                                        \
        mt_writer_come_back(&away);                                                                \
        return rc;                                                                                 \
    }

ALONE(setuid, (uid_t uid), (uid_t), (uid))
ALONE(setgid, (gid_t gid), (gid_t), (gid))
ALONE(seteuid, (uid_t uid), (uid_t), (uid))
ALONE(setegid, (gid_t gid), (gid_t), (gid))
ALONE(setreuid, (uid_t r, uid_t e), (uid_t, uid_t), (r, e))
ALONE(setregid, (gid_t r, gid_t e), (gid_t, gid_t), (r, e))
ALONE(setresuid, (uid_t r, uid_t e, uid_t s), (uid_t, uid_t, uid_t), (r, e, s))
ALONE(setresgid, (gid_t r, gid_t e, gid_t s), (gid_t, gid_t, gid_t), (r, e, s))
ALONE(setgroups, (size_t n, const gid_t* list), (size_t, const gid_t*), (n, list))
