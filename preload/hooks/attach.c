// SPDX-License-Identifier: MIT
// The entry points gdb calls in a running process after dlopen'ing libmemtrace.so into it
// (memtrace --pid, memtrace --detach): start a capture and redirect the loaded modules' heap
// calls to the hooks, or put them back and finish the capture. The process goes on running
// unchanged; the library stays loaded (a dlclose could pull code from under a thread still
// inside a hook). Called by the debugger with the other threads running: thread-safe, and
// never from inside a hook.
#include "attach.h"

#include "bootstrap.h"
#include "config.h"
#include "core.h"
#include "inject.h"
#include "settings.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static char report_path[4096];

// Tells a waiting `memtrace --pid` that the capture is finished ("=pid detached").
static void report_detached(void) {
    if (!report_path[0])
        return;
    int fd = open(report_path, O_WRONLY | O_APPEND | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return;
    char line[64];
    int n = snprintf(line, sizeof line, "=%d detached\n", (int)getpid());
    (void)!write(fd, line, (size_t)n);
    close(fd);
}

// Whether every line of `lines` is "KEY=VALUE" with a setting an attach takes and a value it
// accepts: the launcher checked them, this is for any other caller.
static bool settings_acceptable(const char* lines) {
    char line[512];
    for (const char* p = lines; *p;) {
        size_t n = strcspn(p, "\n");
        if (n >= sizeof line)
            return false;
        memcpy(line, p, n);
        line[n] = 0;
        p += n + (p[n] == '\n');
        char* eq = strchr(line, '=');
        if (!n)
            continue;
        if (!eq)
            return false;
        *eq = 0;
        const mt_setting* s = mt_settings_find(line);
        if (!s || s->attach != MT_ATTACH_PASS || !mt_settings_valid(s, eq + 1))
            return false;
    }
    return true;
}

// gdb runs these calls on a thread of the program it stopped wherever it was, often in a
// sleep. Afterwards it puts the thread back into that call, which the kernel restarts through
// the thread's restart block; a nanosleep made meanwhile on the thread resets the block, and
// the program's sleep then failed with EINTR (sleep(15) returned after 3 s at a detach, which
// waits for the threads in hooks). So the work runs on a thread of the tracer's, with every
// signal blocked; the caller only waits for it in pthread_join, a futex wait the kernel
// restarts without the block.
typedef struct beside_call {
    int (*fn)(void* arg);
    void* arg;
    int rc;
} beside_call;

static void* beside_main(void* p) {
    beside_call* c = p;
    mt_guard = 1;
    c->rc = c->fn(c->arg);
    return NULL;
}

// Runs fn(arg) on a new thread and returns what it returned; on this thread if none can be made.
static int run_beside(int (*fn)(void*), void* arg) {
    int saved = mt_guard;
    mt_guard = 1; // pthread_create's heap calls are the tracer's
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    beside_call call = {fn, arg, 0};
    pthread_attr_t attr;
    bool sized = pthread_attr_init(&attr) == 0;
    if (sized)
        pthread_attr_setstacksize(&attr, 1 << 20); // SQLite and libunwind, not ulimit -s
    pthread_t t;
    int made = pthread_create(&t, sized ? &attr : NULL, beside_main, &call);
    if (sized)
        pthread_attr_destroy(&attr);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (made == 0)
        pthread_join(t, NULL);
    else
        call.rc = fn(arg);
    mt_guard = saved;
    return call.rc;
}

typedef struct attach_args {
    const char* output;
    const char* settings;
} attach_args;

static int attach_here(void* p) {
    const attach_args* a = p;
    // The launcher's settings, and none of the process's environment (config.c).
    if (mt_config_use_attach_settings(a->settings) != 0)
        return -EINVAL;
    // The slots first, the capture second: starting the capture initialises libunwind,
    // which opens a pipe of its own. Through the patched slot it goes to our pipe2 and is
    // moved among the tracer's high descriptors; before the patch it took the process's
    // lowest free ones and kept them after the detach. Until the capture starts the hooks
    // only pass calls through, as before a MEMTRACE_SIGNAL start.
    mt_bootstrap_resolve();
    int rc = mt_inject_patch_all();
    if (rc == 0 && (rc = mt_core_attach(a->output, report_path)) != 0)
        mt_inject_restore_all();
    return rc;
}

MT_EXPORT int memtrace_attach(const char* output, const char* report, const char* settings) {
    if (!output || output[0] != '/' || strlen(output) >= 4096 || !report ||
        strlen(report) >= sizeof report_path || !settings || !settings_acceptable(settings))
        return -EINVAL;
    if (atomic_load(&mt_state) == MT_STATE_RECORDING)
        return -EALREADY;
    snprintf(report_path, sizeof report_path, "%s", report);
    attach_args a = {output, settings};
    return run_beside(attach_here, &a);
}

static int detach_here(void* unused) {
    (void)unused;
    // The capture ends first, the hooks passing calls through once it has stopped; then the
    // patched slots go back to libc. The other way round, the tracer's own frees in ending
    // the capture (zstd's and SQLite's, of blocks from the writer thread's heap) went
    // straight to glibc's free, which aborted the program.
    int was_recording = atomic_load(&mt_state) == MT_STATE_RECORDING;
    mt_core_shutdown();
    mt_inject_restore_all();
    if (was_recording)
        report_detached();
    return was_recording ? 0 : -ENOENT;
}

MT_EXPORT int memtrace_detach(void) {
    return run_beside(detach_here, NULL);
}
