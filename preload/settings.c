// SPDX-License-Identifier: MIT
// The MEMTRACE_* settings table (settings.h): one row per setting, the one place that says
// its name, accepted values, default, what it does (`memtrace --help`, the man page, the
// table of docs/tracing.md) and what an attach does with it. Called at initialisation and by
// the launcher; never from a hook.
#include "settings.h"

#include <stdlib.h>
#include <string.h>

#define RUNS_AT_START "recording starts at the attach and stops at --detach"
// Read by common/'s symbolizer from the process's own environment, never passed.
#define READ_BY_ITSELF "read from the process's own environment"

static const mt_setting settings[] = {
    {.name = "MEMTRACE_OUTPUT",
     .kind = MT_SETTING_TEXT,
     .attach = MT_ATTACH_OWN,
     .why = "used as -o",
     .def = "memtrace.<program>.<pid>.db",
     .help = "capture path, as -o"},
    {.name = "MEMTRACE_UNWIND",
     .kind = MT_SETTING_WORD,
     .words = "auto|fp|libunwind",
     .attach = MT_ATTACH_PASS,
     .def = "auto",
     .help = "auto, fp (frame pointers only) or libunwind"},
    {.name = "MEMTRACE_DEPTH",
     .kind = MT_SETTING_INT,
     .lo = 1,
     .hi = 1024,
     .attach = MT_ATTACH_PASS,
     .def = "256",
     .help = "stack depth limit; deeper stacks lose their outer frames"},
    {.name = "MEMTRACE_SAMPLE_MS",
     .kind = MT_SETTING_INT,
     .lo = 1,
     .hi = 60000,
     .attach = MT_ATTACH_PASS,
     .def = "10",
     .help = "RSS/VSZ sampling period in ms"},
    {.name = "MEMTRACE_COMMIT_MS",
     .kind = MT_SETTING_INT,
     .lo = 1,
     .hi = 60000,
     .attach = MT_ATTACH_PASS,
     .def = "10 (100 when sampling)",
     .help = "commit period in ms: the most a SIGKILL loses"},
    {.name = "MEMTRACE_FOLLOW_FORK",
     .kind = MT_SETTING_INT,
     .lo = 0,
     .hi = 1,
     .attach = MT_ATTACH_PASS,
     .def = "1",
     .help = "1: a forked child writes <name>.<childpid>.db; 0: untraced"},
    {.name = "MEMTRACE_SYMBOLIZE",
     .kind = MT_SETTING_INT,
     .lo = 0,
     .hi = 1,
     .attach = MT_ATTACH_PASS,
     .def = "1",
     .help = "resolve frame names at exit (0: leave it to memreport)"},
    {.name = "MEMTRACE_SYMBOLIZE_MS",
     .kind = MT_SETTING_INT,
     .lo = 0,
     .hi = 3600000,
     .attach = MT_ATTACH_PASS,
     .def = "500",
     .help = "budget in ms for reading DWARF at exit; frames it does not cover are named by "
             "memreport on first open"},
    {.name = "MEMTRACE_SYMBOL_CACHE",
     .kind = MT_SETTING_TEXT,
     .attach = MT_ATTACH_OWN,
     .why = READ_BY_ITSELF,
     .def = "~/.cache/memtrace/symbols.db",
     .help = "symbol cache file (0: none); also read by memreport"},
    {.name = "MEMTRACE_DEBUGINFO_PATH",
     .kind = MT_SETTING_TEXT,
     .attach = MT_ATTACH_OWN,
     .why = READ_BY_ITSELF,
     .def = ":.debug:/usr/lib/debug",
     .help = "where separate debug files are looked for (libdwfl syntax); also read by memreport"},
    {.name = "MEMTRACE_MMAP",
     .kind = MT_SETTING_INT,
     .lo = 0,
     .hi = 1,
     .attach = MT_ATTACH_PASS,
     .def = "0",
     .help = "1: record the program's anonymous mmap/munmap/mremap as heap 'mmap' (memreport "
             "--heap mmap)"},
    {.name = "MEMTRACE_PYTHON",
     .kind = MT_SETTING_INT,
     .lo = 0,
     .hi = 1,
     .attach = MT_ATTACH_PASS,
     .def = "1",
     .help = "0: no Python frames in a CPython program's stacks"},
    {.name = "MEMTRACE_PYTHONMALLOC",
     .kind = MT_SETTING_INT,
     .lo = 0,
     .hi = 1,
     .attach = MT_ATTACH_REFUSE,
     .why = "a running interpreter's allocators cannot change",
     .def = "0",
     .help = "1: CPython's allocators are not wrapped (no heap 'python') and the launcher "
             "runs the program with PYTHONMALLOC=malloc: objects are malloc events; slower "
             "(docs/python.md) (memtrace --python-malloc)"},
    {.name = "MEMTRACE_TIME_NS",
     .kind = MT_SETTING_INT,
     .lo = 1,
     .hi = 1000000,
     .attach = MT_ATTACH_PASS,
     .def = "1000",
     .help = "resolution of event times in ns (1: every ns; at most 1000000); ns from a program's "
             "first mark on"},
    {.name = "MEMTRACE_START",
     .kind = MT_SETTING_TEXT,
     .attach = MT_ATTACH_REFUSE,
     .why = RUNS_AT_START,
     .def = "started",
     .help = "stopped: record nothing until the toggle signal"},
    {.name = "MEMTRACE_SIGNAL",
     .kind = MT_SETTING_TEXT,
     .attach = MT_ATTACH_REFUSE,
     .why = "an attach leaves the process's signal handlers as they are; stop with --detach",
     .def = "USR2",
     .help = "the signal that toggles recording (USR1, USR2 or a real-time signal's number; 0: "
             "none; any other is ignored), installed only when set or when started stopped; a "
             "handler the program installs for it replaces it"},
    {.name = "MEMTRACE_DELAY_MS",
     .kind = MT_SETTING_INT,
     .lo = 0,
     .hi = 2000000000,
     .attach = MT_ATTACH_REFUSE,
     .why = RUNS_AT_START,
     .def = "0",
     .help = "start stopped, record from this many ms on (as --delay)"},
    {.name = "MEMTRACE_MAX_MB",
     .kind = MT_SETTING_INT,
     .lo = 0,
     .hi = 1 << 30,
     .attach = MT_ATTACH_PASS,
     .def = "0",
     .help = "stop recording events (calls still counted) when the capture reaches this many MiB; "
             "0: no limit"},
    {.name = "MEMTRACE_SAMPLE_BYTES",
     .kind = MT_SETTING_INT,
     .lo = 0,
     .hi = 1 << 30,
     .attach = MT_ATTACH_PASS,
     .def = "0",
     .help = "record a sample of the allocations, one per this many bytes on average (Poisson, as "
             "tcmalloc; at most 1073741824); reports scale them up; 0: record every one"},
    {.name = "MEMTRACE_SAMPLE_SEED",
     .kind = MT_SETTING_U64,
     .attach = MT_ATTACH_PASS,
     .def = "random",
     .help = "a number: the same allocations are sampled every run"},
    {.name = "MEMTRACE_LEAKS",
     .kind = MT_SETTING_INT,
     .lo = 0,
     .hi = 1,
     .attach = MT_ATTACH_PASS,
     .def = "1",
     .help = "0: no leak scan at the end (blocks left unclassified)"},
    {.name = "MEMTRACE_EXIT_WATCH",
     .kind = MT_SETTING_INT,
     .lo = 0,
     .hi = 1,
     .attach = MT_ATTACH_REFUSE,
     .why = "an attached process has no exit watcher; --detach finishes its capture",
     .def = "1",
     .help = "0: no exit watcher (docs/tracer.md); a process that ends by SIGKILL or a raw "
             "exit_group leaves its capture truncated, with what was committed"},
    {.name = "MEMTRACE_LEAK_SIGNAL",
     .kind = MT_SETTING_TEXT,
     .attach = MT_ATTACH_REFUSE,
     .why = "an attached process gets no leak scan; --detach finishes its capture",
     .def = "0",
     .help = "a signal (USR1, USR2 or a real-time signal's number; 0: none) that finishes the "
             "capture with a leak scan, as memtrace --detach does; the program goes on "
             "untraced"},
    {.name = "MEMTRACE_LEAK_SCAN_MS",
     .kind = MT_SETTING_INT,
     .lo = 1,
     .hi = 3600000,
     .attach = MT_ATTACH_PASS,
     .def = "120000",
     .help = "the most the leak scan may take, in ms; then it stops, blocks unclassified"},
    {.name = "MEMTRACE_REPORT",
     .kind = MT_SETTING_TEXT,
     .attach = MT_ATTACH_OWN,
     .why = "the launcher's own"},
};
#define COUNT (int)(sizeof settings / sizeof *settings)

const mt_setting* mt_settings_find(const char* name) {
    for (int i = 0; i < COUNT; i++)
        if (!strcmp(settings[i].name, name))
            return &settings[i];
    return NULL;
}

const mt_setting* mt_settings_at(int i) {
    return i >= 0 && i < COUNT ? &settings[i] : NULL;
}

static bool is_word(const char* words, const char* value) {
    size_t n = strlen(value);
    for (const char* w = words; *w;) {
        size_t k = strcspn(w, "|");
        if (k == n && !strncmp(w, value, n))
            return true;
        w += k + (w[k] == '|');
    }
    return false;
}

bool mt_settings_valid(const mt_setting* s, const char* value) {
    if (!value || !*value)
        return true;
    char* end;
    switch (s->kind) {
    case MT_SETTING_INT: {
        long n = strtol(value, &end, 10);
        return !*end && n >= s->lo && n <= s->hi;
    }
    case MT_SETTING_WORD:
        return is_word(s->words, value);
    case MT_SETTING_U64:
        strtoull(value, &end, 10);
        return !*end;
    default:
        return true;
    }
}

int mt_settings_int(const char* name, const char* value, int fallback) {
    const mt_setting* s = mt_settings_find(name);
    if (!s || s->kind != MT_SETTING_INT || !value || !*value || !mt_settings_valid(s, value))
        return fallback;
    return (int)strtol(value, NULL, 10);
}
