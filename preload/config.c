// SPDX-License-Identifier: MIT
// MEMTRACE_* settings. Runs at initialisation only, before any hook records; never again
// (an attach loads the settings memtrace --pid passed, before its capture starts). Every
// value is read through setting(): the environment for a program started under LD_PRELOAD,
// only the launcher's "KEY=VALUE" lines for an attached process, whose own environment
// must not choose how it is recorded.
#include "config.h"

#include "say.h"
#include "settings.h"

#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

mt_config mt_cfg;

// memtrace_attach's settings, one "KEY=VALUE" per line, the line ends turned into NULs.
static char attach_settings[4096];
static size_t attach_len;
static bool attached;

int mt_config_use_attach_settings(const char* lines) {
    size_t n = strlen(lines);
    if (n >= sizeof attach_settings)
        return -EINVAL;
    memcpy(attach_settings, lines, n + 1);
    for (size_t i = 0; i < n; i++)
        if (attach_settings[i] == '\n')
            attach_settings[i] = 0;
    attach_len = n;
    attached = true;
    return 0;
}

// The value of setting `name`, or NULL when it is not given.
static const char* setting(const char* name) {
    if (!attached)
        return getenv(name);
    size_t k = strlen(name);
    for (size_t i = 0; i < attach_len; i += strlen(attach_settings + i) + 1)
        if (!strncmp(attach_settings + i, name, k) && attach_settings[i + k] == '=')
            return attach_settings + i + k + 1;
    return NULL;
}

static int env_int(const char* name, int fallback) {
    return mt_settings_int(name, setting(name), fallback);
}

// MEMTRACE_SIGNAL: USR1 / USR2 (SIG prefix optional), or a number: theirs, a real-time
// signal's or 0 (none); -1 when unset or anything else. A fault signal (SEGV: the handler
// would return to the faulting instruction forever) or one with a meaning of its own (CHLD,
// PIPE, TERM...) would change what the program does.
static int env_signal(const char* name) {
    const char* v = setting(name);
    if (!v || !*v)
        return -1;
    if (!strncmp(v, "SIG", 3))
        v += 3;
    if (!strcmp(v, "USR1"))
        return SIGUSR1;
    if (!strcmp(v, "USR2"))
        return SIGUSR2;
    char* end;
    long n = strtol(v, &end, 10);
    int sig = *end || n < 0 || n > SIGRTMAX ? -1 : (int)n;
    bool ok = sig == 0 || sig == SIGUSR1 || sig == SIGUSR2 || sig >= SIGRTMIN;
    return ok ? sig : -1;
}

// A value given that the tracer cannot take is said once on stderr, and the default used:
// the program runs as it would anyway (the launcher refuses such a value before running
// anything; a program started under LD_PRELOAD alone learns it here).
static void warn_refused_values(void) {
    const mt_setting* s;
    for (int i = 0; (s = mt_settings_at(i)); i++) {
        const char* v = setting(s->name);
        if (!v || mt_settings_valid(s, v))
            continue;
        char line[256], shown[64];
        size_t o = 0;
        for (const unsigned char* c = (const unsigned char*)v; *c && o + 5 < sizeof shown; c++)
            o += (size_t)snprintf(shown + o, sizeof shown - o,
                                  *c < 0x20 || *c >= 0x7f ? "\\x%02x" : "%c", *c);
        shown[o] = 0;
        int n = snprintf(line, sizeof line,
                         "memtrace: %s=%s: not a value it takes (see memtrace --help); the default "
                         "is used\n",
                         s->name, shown);
        if (n > 0)
            mt_say(line, (size_t)n < sizeof line ? (size_t)n : sizeof line - 1);
    }
}

void mt_config_program_part(char* out, size_t len) {
    const char* name = program_invocation_short_name;
    size_t n = 0;
    for (; name && name[n] && n < 64 && n + 1 < len; n++) {
        char c = name[n];
        bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                  c == '.' || c == '_' || c == '+' || c == '-';
        out[n] = ok ? c : '_';
    }
    out[n] = 0;
    if (!n || out[0] == '.')
        snprintf(out, len, "process");
}

void mt_config_load(void) {
    warn_refused_values();
    const char* out = setting("MEMTRACE_OUTPUT");
    if (out && *out)
        snprintf(mt_cfg.pattern, sizeof mt_cfg.pattern, "%s", out);
    else {
        char prog[80];
        mt_config_program_part(prog, sizeof prog);
        snprintf(mt_cfg.pattern, sizeof mt_cfg.pattern, "memtrace.%s.%%p.db", prog);
    }
    mt_cfg.pattern_has_pid = strstr(mt_cfg.pattern, "%p") != NULL;
    // Relative to where the program started: the program may chdir before the capture file
    // is created (or before a forked child creates its own).
    if (mt_cfg.pattern[0] != '/' && !getcwd(mt_cfg.start_dir, sizeof mt_cfg.start_dir))
        mt_cfg.start_dir[0] = 0;
    const char* report = setting("MEMTRACE_REPORT");
    snprintf(mt_cfg.report, sizeof mt_cfg.report, "%s", report ? report : "");
    const char* uw = setting("MEMTRACE_UNWIND");
    mt_cfg.unwind = MT_UNWIND_AUTO;
    if (uw && !strcmp(uw, "fp"))
        mt_cfg.unwind = MT_UNWIND_FP;
    else if (uw && !strcmp(uw, "libunwind"))
        mt_cfg.unwind = MT_UNWIND_LIBUNWIND;
    mt_cfg.depth = env_int("MEMTRACE_DEPTH", 256);
    mt_cfg.sample_ms = env_int("MEMTRACE_SAMPLE_MS", 10);
    mt_cfg.follow_fork = env_int("MEMTRACE_FOLLOW_FORK", 1);
    mt_cfg.symbolize = env_int("MEMTRACE_SYMBOLIZE", 1);
    mt_cfg.symbolize_ms = env_int("MEMTRACE_SYMBOLIZE_MS", 500);
    const char* start = setting("MEMTRACE_START");
    mt_cfg.start_stopped = start && !strcmp(start, "stopped");
    mt_cfg.toggle_signal = env_signal("MEMTRACE_SIGNAL");
    mt_cfg.delay_ms = env_int("MEMTRACE_DELAY_MS", 0);
    mt_cfg.max_mb = env_int("MEMTRACE_MAX_MB", 0);
    mt_cfg.mmap = env_int("MEMTRACE_MMAP", 0);
    mt_cfg.python = env_int("MEMTRACE_PYTHON", 1);
    // Nanoseconds were most of a capture (docs/capture-format.md, codec 4); no report needs
    // them, and a microsecond is still finer than the calls' own cost.
    mt_cfg.time_ns = env_int("MEMTRACE_TIME_NS", 1000);
    mt_cfg.python_malloc = env_int("MEMTRACE_PYTHONMALLOC", 0);
    mt_cfg.sample_bytes = env_int("MEMTRACE_SAMPLE_BYTES", 0);
    // A sampled run (a long one, as a rule) commits every 100 ms unless told otherwise (an
    // invalid value too): a commit costs about as much as its hooks spend in 10 ms.
    mt_cfg.commit_ms = env_int("MEMTRACE_COMMIT_MS", mt_cfg.sample_bytes ? 100 : 10);
    mt_cfg.leaks = env_int("MEMTRACE_LEAKS", 1);
    mt_cfg.exit_watch = env_int("MEMTRACE_EXIT_WATCH", 1);
    mt_cfg.leak_scan_timeout_ms = env_int("MEMTRACE_LEAK_SCAN_MS", 120000);
    mt_cfg.leak_signal = env_signal("MEMTRACE_LEAK_SIGNAL");
    const char* seed = setting("MEMTRACE_SAMPLE_SEED");
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
