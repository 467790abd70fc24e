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

MT_EXPORT int memtrace_attach(const char* output, const char* report, const char* settings) {
    if (!output || output[0] != '/' || strlen(output) >= 4096 || !report ||
        strlen(report) >= sizeof report_path || !settings || !settings_acceptable(settings))
        return -EINVAL;
    if (atomic_load(&mt_state) == MT_STATE_RECORDING)
        return -EALREADY;
    int saved = mt_guard;
    mt_guard = 1;
    snprintf(report_path, sizeof report_path, "%s", report);
    // The launcher's settings, and none of the process's environment (config.c).
    if (mt_config_use_attach_settings(settings) != 0) {
        mt_guard = saved;
        return -EINVAL;
    }
    // The slots first, the capture second: starting the capture initialises libunwind,
    // which opens a pipe of its own. Through the patched slot it goes to our pipe2 and is
    // moved among the tracer's high descriptors; before the patch it took the process's
    // lowest free ones and kept them after the detach. Until the capture starts the hooks
    // only pass calls through, as before a MEMTRACE_SIGNAL start.
    mt_bootstrap_resolve();
    int rc = mt_inject_patch_all();
    if (rc == 0 && (rc = mt_core_attach(output, report)) != 0)
        mt_inject_restore_all();
    mt_guard = saved;
    return rc;
}

MT_EXPORT int memtrace_detach(void) {
    int saved = mt_guard;
    mt_guard = 1;
    // The hooks first: calls made from here on go straight to libc; the capture then ends
    // with whatever the hooks already recorded.
    mt_inject_restore_all();
    int was_recording = atomic_load(&mt_state) == MT_STATE_RECORDING;
    mt_core_shutdown();
    if (was_recording)
        report_detached();
    mt_guard = saved;
    return was_recording ? 0 : -ENOENT;
}
