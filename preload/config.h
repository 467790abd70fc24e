// SPDX-License-Identifier: MIT
// MEMTRACE_* settings, read once at initialisation (getenv is not allowed in hooks).
#ifndef MT_CONFIG_H
#define MT_CONFIG_H

#include <stddef.h>
#include <sys/types.h>

enum { MT_UNWIND_AUTO, MT_UNWIND_FP, MT_UNWIND_LIBUNWIND };

typedef struct mt_config {
    char pattern[4096]; // output path pattern: %p = pid
    int pattern_has_pid;
    char start_dir[4096]; // the cwd at start, for a relative pattern ("" if unknown)
    char report[4096];    // MEMTRACE_REPORT: where the launcher wants to hear of captures
    int unwind;
    int depth;
    int sample_ms;
    int commit_ms; // commit period: the most a SIGKILL can lose
    int follow_fork;
    int symbolize;
    int symbolize_ms;  // naming at exit reads DWARF only within this budget (the rest: memreport)
    int start_stopped; // MEMTRACE_START=stopped: no event until the toggle signal (recording.h)
    int toggle_signal; // MEMTRACE_SIGNAL: -1 unset, 0 none, else the signal that toggles
    int delay_ms;      // MEMTRACE_DELAY_MS: start stopped, start after this long (0: no delay)
    int max_mb;        // MEMTRACE_MAX_MB: events stop when the capture reaches it (0: no limit)
    int mmap;          // MEMTRACE_MMAP=1: anonymous mappings recorded as heap "mmap" (mmap_track.c)
    int python;        // MEMTRACE_PYTHON=0: CPython programs keep native stacks only
    int time_ns;       // MEMTRACE_TIME_NS: times are recorded in multiples of this many ns
    int python_malloc; // MEMTRACE_PYTHONMALLOC=1: CPython's allocators not wrapped (python_heap.c)
    int sample_bytes;  // MEMTRACE_SAMPLE_BYTES: mean bytes between samples (0: every event)
    int sample_seeded; // MEMTRACE_SAMPLE_SEED given: threads' draws repeat from run to run
    unsigned long long sample_seed;
    int leaks;      // MEMTRACE_LEAKS=0: no live set in the writer, no leak scan at the end
    int exit_watch; // MEMTRACE_EXIT_WATCH=0: no exit watcher (exit_watch.c)
    int leak_scan_timeout_ms; // the scanning copy is killed after this long
    int leak_signal;          // MEMTRACE_LEAK_SIGNAL: finishes the capture (>0), else none
} mt_config;

extern mt_config mt_cfg;

void mt_config_load(void);
// From now on mt_config_load reads only these settings ("KEY=VALUE" lines, as memtrace --pid
// passes them), never the environment. 0, or -EINVAL when they are too long.
int mt_config_use_attach_settings(const char* lines);
// The capture path for process `pid`, absolute when the start directory is known. A forked child
// (child != 0) whose pattern has no %p gets "<name>.<pid>.db" beside the parent's file.
void mt_config_output_path(char* buf, size_t len, pid_t pid, int child);
const char* mt_config_unwind_name(int unwind);
// The program's name as a file name part: [A-Za-z0-9._+-] kept, anything else '_' (a
// program may have set its argv[0] to a title with spaces and colons, or to escape
// sequences that the launcher would print with the name); "process" when empty or hidden.
void mt_config_program_part(char* out, size_t len);

#endif
