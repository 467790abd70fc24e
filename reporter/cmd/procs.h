// SPDX-License-Identifier: MIT
// The commands' side of several captures (a process tree, capture_set.h): what summary and
// flamegraph do when given a directory or more than one capture. Their own files hand over
// here once their options are parsed (mr_capture_set_wanted says when).
#ifndef MR_PROCS_H
#define MR_PROCS_H

#include "capture_set.h"
#include "flamegraph_page.h"
#include "opts.h"
#include "procs_timeline.h"
#include "profile.h"

#include <stdbool.h>

// The help lines of a command that takes a process tree's captures.
#define MR_HELP_PROCS                                                                              \
    "Several captures, or a directory of them (memtrace -o DIR/), are read as the processes\n"     \
    "of one run, each placed under its parent.\n"

// Opens the captures a command was given (and, with `symbols`, loads their symbols): the
// door every report over several processes goes through. Returns an exit code (a capture
// named twice: a usage error with the hint of `help`); on failure nothing is left open.
int mr_procs_open(mr_capture_set* s, char* const* paths, int n, const char* help, bool symbols);
// The moment the processes held the most together (mr_procs_timeline_moment_find), or the reason it
// could not be found on stderr. Returns an exit code.
int mr_procs_joint_peak(const mr_capture_set* s, mr_procs_moment* m);

// The model's profile of each process for q (on each process's default heap; with
// MR_AT_PEAK each at its own peak; with `at`, each at its time of that moment instead):
// (*v)[i] for s->procs[i], and their totals in *sum (procs_views.h). Returns an exit code;
// on failure nothing is left to free.
int mr_procs_profiles(const mr_capture_set* s, const mr_query* q, const mr_procs_moment* at,
                      mr_profile** v, mr_profile* sum);
void mr_procs_profiles_free(mr_profile* v, size_t n);

// A report over several processes, given their captures (s, with symbols), each one's
// profile (profs[i] for s->procs[i]), their totals, and the moment they were taken at when
// that is the processes' joint peak (else NULL). Returns an exit code.
typedef int (*mr_procs_report_fn)(void* ud, const mr_capture_set* s, const mr_profile* profs,
                                  const mr_profile* sum, const mr_procs_moment* joint);
// Opens the captures (mr_procs_open, with symbols), builds their profiles for q
// (mr_procs_profiles; with joint_peak and MR_AT_PEAK, at the moment the processes together
// held the most), calls fn with them and frees it all. Returns fn's exit code, or that of
// what failed before it.
int mr_procs_report(char* const* paths, int n, const char* help, const mr_query* q, bool joint_peak,
                    mr_procs_report_fn fn, void* ud);

// memreport summary CAPTURE... | DIR: each process and the total. Returns an exit code
// (a capture named twice: a usage error with the hint of `help`).
int mr_procs_summary(const mr_opts* o, char* const* paths, int n, const char* help);

// The options of memreport flamegraph that apply to several processes.
typedef struct mr_procs_flame_args {
    const char* output; // NULL: memreport-flamegraph-NAME.html, NAME the first input's
    bool force, all_frames, inverted;
    const char* orientation;
    mr_flamegraph_mode mode; // peak (each process's own) or leaks
    double min_width;
} mr_procs_flame_args;

// memreport flamegraph CAPTURE... | DIR: one page, each process a root frame of its own
// stacks. Returns an exit code.
int mr_procs_flamegraph(const mr_procs_flame_args* a, char* const* paths, int n, const char* help);

#endif
