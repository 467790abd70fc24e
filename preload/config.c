// SPDX-License-Identifier: MIT
// MEMTRACE_* settings. Runs at initialisation only, before any hook records; never again.
#include "config.h"

#include "output.h"

#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

mt_config mt_cfg;

static int env_int(const char* name, int fallback, int lo, int hi) {
    const char* v = getenv(name);
    if (!v || !*v)
        return fallback;
    char* end;
    long n = strtol(v, &end, 10);
    if (*end || n < lo || n > hi)
        return fallback;
    return (int)n;
}

// MEMTRACE_SIGNAL: USR1 / USR2 (SIG prefix optional), or a number: theirs, a real-time
// signal's or 0 (none); -1 when unset or anything else. A fault signal (SEGV: the handler
// would return to the faulting instruction forever) or one with a meaning of its own (CHLD,
// PIPE, TERM...) would change what the program does.
static int env_signal(const char* name) {
    const char* v = getenv(name);
    if (!v || !*v)
        return -1;
    if (!strncmp(v, "SIG", 3))
        v += 3;
    if (!strcmp(v, "USR1"))
        return SIGUSR1;
    if (!strcmp(v, "USR2"))
        return SIGUSR2;
    int sig = env_int(name, -1, 0, SIGRTMAX);
    bool ok = sig == 0 || sig == SIGUSR1 || sig == SIGUSR2 || sig >= SIGRTMIN;
    return ok ? sig : -1;
}

void mt_config_load(void) {
    const char* out = getenv("MEMTRACE_OUTPUT");
    if (out && *out)
        snprintf(mt_cfg.pattern, sizeof mt_cfg.pattern, "%s", out);
    else {
        char prog[80];
        mt_output_program_part(prog, sizeof prog);
        snprintf(mt_cfg.pattern, sizeof mt_cfg.pattern, "memtrace.%s.%%p.db", prog);
    }
    mt_cfg.pattern_has_pid = strstr(mt_cfg.pattern, "%p") != NULL;
    // Relative to where the program started: the program may chdir before the capture file
    // is created (or before a forked child creates its own).
    if (mt_cfg.pattern[0] != '/' && !getcwd(mt_cfg.start_dir, sizeof mt_cfg.start_dir))
        mt_cfg.start_dir[0] = 0;
    const char* report = getenv("MEMTRACE_REPORT");
    snprintf(mt_cfg.report, sizeof mt_cfg.report, "%s", report ? report : "");
    const char* uw = getenv("MEMTRACE_UNWIND");
    mt_cfg.unwind = MT_UNWIND_AUTO;
    if (uw && !strcmp(uw, "fp"))
        mt_cfg.unwind = MT_UNWIND_FP;
    else if (uw && !strcmp(uw, "libunwind"))
        mt_cfg.unwind = MT_UNWIND_LIBUNWIND;
    mt_cfg.depth = env_int("MEMTRACE_DEPTH", 256, 1, 1024);
    mt_cfg.sample_ms = env_int("MEMTRACE_SAMPLE_MS", 10, 1, 60000);
    mt_cfg.commit_ms = env_int("MEMTRACE_COMMIT_MS", 10, 1, 60000);
    mt_cfg.follow_fork = env_int("MEMTRACE_FOLLOW_FORK", 1, 0, 1);
    mt_cfg.symbolize = env_int("MEMTRACE_SYMBOLIZE", 1, 0, 1);
    mt_cfg.symbolize_ms = env_int("MEMTRACE_SYMBOLIZE_MS", 500, 0, 3600000);
    const char* start = getenv("MEMTRACE_START");
    mt_cfg.start_stopped = start && !strcmp(start, "stopped");
    mt_cfg.toggle_signal = env_signal("MEMTRACE_SIGNAL");
    mt_cfg.delay_ms = env_int("MEMTRACE_DELAY_MS", 0, 0, 2000000000);
    mt_cfg.max_mb = env_int("MEMTRACE_MAX_MB", 0, 0, 1 << 30);
    mt_cfg.mmap = env_int("MEMTRACE_MMAP", 0, 0, 1);
    mt_cfg.sample_bytes = env_int("MEMTRACE_SAMPLE_BYTES", 0, 0, 1 << 30);
    // A sampled run (a long one, as a rule) commits every 100 ms unless told otherwise: a
    // commit costs about as much as the sampled program's hooks spend in 10 ms.
    if (mt_cfg.sample_bytes && !getenv("MEMTRACE_COMMIT_MS"))
        mt_cfg.commit_ms = 100;
    const char* seed = getenv("MEMTRACE_SAMPLE_SEED");
    char* end;
    if (seed && *seed) {
        mt_cfg.sample_seed = strtoull(seed, &end, 10);
        mt_cfg.sample_seeded = !*end;
    }
}

const char* mt_config_unwind_name(int unwind) {
    return unwind == MT_UNWIND_FP ? "fp" : unwind == MT_UNWIND_LIBUNWIND ? "libunwind" : "auto";
}

void mt_config_output_path(char* buf, size_t len, pid_t pid, int child) {
    size_t o = 0;
    if (mt_cfg.start_dir[0] && mt_cfg.pattern[0] != '/')
        o = (size_t)snprintf(buf, len, "%s/", mt_cfg.start_dir);
    if (o >= len)
        o = len - 1;
    const char* p = mt_cfg.pattern;
    for (; *p && o + 1 < len; p++) {
        if (p[0] == '%' && p[1] == 'p') {
            o += (size_t)snprintf(buf + o, len - o, "%d", (int)pid);
            if (o >= len)
                o = len - 1;
            p++;
        } else {
            buf[o++] = *p;
        }
    }
    buf[o] = 0;
    if (child && !mt_cfg.pattern_has_pid) {
        size_t n = strlen(buf);
        if (n > 3 && !strcmp(buf + n - 3, ".db"))
            buf[n - 3] = 0;
        size_t m = strlen(buf);
        snprintf(buf + m, len - m, ".%d.db", (int)pid);
    }
}
