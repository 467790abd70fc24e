// SPDX-License-Identifier: MIT
// The command layer's shared plumbing: the options every subcommand shares, usage errors,
// times given on the command line, opening the input, where a report is written (a
// render/*_report.h writes it).
#ifndef MR_OPTIONS_H
#define MR_OPTIONS_H

#include "aggregates.h"
#include "extent.h"
#include "messages.h"
#include "profile.h"
#include "report.h"
#include "symbols.h"

#include "memtrace/capture.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

// Opens a capture; on failure prints the reason and returns the exit code (2 or 3).
int mr_open_capture(const char* path, mt_capture** out);

// The options every subcommand shares: -j/--json, -o/--output FILE, -f/--force, -h/--help.
typedef struct mr_opts {
    const char* output; // "-" = stdout
    bool force;
    bool json;
} mr_opts;
#define MR_OPTS_INIT                                                                               \
    { "-", false, false }
// Where a report renderer (render/*_report.h) writes, as these options say.
static inline mr_report_to mr_opts_report_to(const mr_opts* o) {
    return (mr_report_to){o->output, o->force, o->json};
}
enum { MR_OPT_NEXT = -1 };
// getopt_long's value for --full-names, which the commands that show function names list
// in their tables: C++ names as demangled, not shortened (cxx_names.h).
enum { MR_OPT_FULL_NAMES = 0x100 };
// For a getopt_long result c: records a shared option and returns MR_OPT_NEXT; prints help
// for -h (returns 0), or the usage hint after getopt's message for an unknown option or a
// missing value (returns the usage exit code).
int mr_opts_handle(mr_opts* o, int c, const char* help);
// The single positional argument (the input file), or NULL after saying what is wrong
// ("memreport: summary takes one capture, got 2") and the usage hint.
const char* mr_opts_input(int argc, char** argv, const char* help);
// A usage error: "memreport: " and the message on one line, then the usage hint (the usage
// lines of `help` and where the full help is). Returns the usage exit code.
int mr_usage_error(const char* help, const char* fmt, ...) __attribute__((format(printf, 2, 3)));
// The usage lines of a subcommand's help (its first lines) and a pointer to --help.
void mr_usage_hint(const char* help);

// --top N of the reports that list stacks (stacks, stats, leaks): N >= 0, 0 meaning all
// (*out = SIZE_MAX). Returns 0, or the usage exit code after an error and the usage hint.
#define MR_TOP_DEFAULT 20
int mr_parse_top(const char* value, const char* help, size_t* out);

// Opens a capture and loads its stacks and names (symbolizing it first if needed). Returns 0
// or an exit code after printing the reason; on failure nothing is left open.
typedef struct mr_symbols mr_symbols;
int mr_open_capture_symbols(const char* path, mt_capture** cap, mr_symbols** sym);
// Loads an open capture's stacks and names (mr_symbols_load), printing what it says
// ("memreport: FILE: symbolized N frames", or why it failed). Returns 0 or an exit code.
int mr_open_symbols(mt_capture* cap, mr_symbols** sym);

// A time given on the command line (--at): nanoseconds since the capture started, or for an
// imported NPU capture an allocation step. Every subcommand parses times with mr_parse_time
// and checks them against its capture with mr_time_in_capture.
typedef struct mr_time {
    int64_t value; // ns, or the step
    bool step;
} mr_time;
// Accepts a number with a unit, "20ms", "1.5s", "250 us", "100ns", or "step N". A bare
// number is refused: its unit would be a guess. Returns 0, or the usage exit code after an
// error saying what is expected.
int mr_parse_time(const char* option, const char* value, mr_time* out);

// Checks t against the capture `path` (its heap's extent): steps only for an NPU capture,
// ns only for a native one, and inside the capture. Returns 0 with the time in the heap's
// unit in *ts, or the usage exit code after an error naming the capture's extent.
int mr_time_in_capture(const char* option, const char* value, mr_time t, const char* path,
                       mr_extent extent, int64_t* ts);

// The moment, range and thread of the reports that weigh stacks (--at, --leaks, --range,
// --thread) as given on the command line; mr_query_for places them in a capture.
// A time may also name a mark or range the program recorded (memtrace.h): a value that
// starts with a digit (or "step" and a number) is a time, anything else (or "mark:NAME") a
// name. A mark stands for its time; a range for its begin as FROM and its end as TO or
// --at; a name recorded more than once takes "#N" (the Nth by time, from 1).
typedef struct mr_when {
    mr_moment moment;                          // MR_AT_PEAK unless --at or --leaks
    mr_time at, from, to;                      // parsed, not yet checked against the capture
    const char *at_arg, *from_arg, *to_arg;    // as given; NULL when left out
    const char *at_name, *from_name, *to_name; // the mark named instead of a time, or NULL
    bool range_named;                          // --range NAME: that range's begin..end
    uint32_t tid;                              // 0: every thread
} mr_when;
#define MR_WHEN_INIT                                                                               \
    { .moment = MR_AT_PEAK }
// --at TIME|NAME (moment MR_AT_TIME), --range FROM..TO (either side optional, each a time
// or a name; value is cut at the dots) or --range NAME (a range), --thread TID. Each
// returns 0, or the usage exit code after an error naming the subcommand of `help` and
// the usage hint.
int mr_parse_at(const char* value, mr_when* w);
// The help lines that say so, for the reports that take --at or --range.
#define MR_HELP_TIMES                                                                              \
    "  TIME, FROM, TO     a time (20ms, 1.5s: ns, us, ms or s; step N for an NPU log) or the\n"    \
    "                     name of a mark or range the program recorded (memtrace.h): a mark's\n"   \
    "                     time; a range's begin as FROM, its end as TO or --at; --range NAME:\n"   \
    "                     the range from begin to end. NAME#N: the Nth (by time) of a name\n"      \
    "                     recorded more than once. A name that reads as a time (a digit first,\n"  \
    "                     or step and a number) is given as mark:NAME\n"
int mr_parse_range(char* value, const char* help, mr_when* w);
int mr_parse_thread(const char* value, const char* help, uint32_t* tid);
// --metric live|allocated|count (and leaked when `leaked`): MR_METRIC_LIVE_BYTES,
// _ALLOC_BYTES, _ALLOC_COUNT, _END_BYTES. Returns 0 or the usage exit code.
int mr_parse_metric(const char* value, const char* help, bool leaked, mr_metric* out);
// The query of w on the capture's default heap, its times placed in the capture and its
// names looked up in the heap's marks (*steps: the heap is timed in NPU steps). With a
// range and moment MR_AT_PEAK, the model takes the highest point within the range.
// Returns 0 or the usage exit code after the reason (an unknown or ambiguous name: the
// marks it could be).
int mr_query_for(const mr_when* w, const char* path, mt_capture* cap, mr_query* q, bool* steps);

// mr_profile_build for a command: on failure says why ("memreport: FILE: ...") and returns
// the exit code (3 out of memory, 2 a bad capture); 0 with *p built.
int mr_profile_for(const char* path, mt_capture* cap, const mr_query* q, mr_profile* p);

// mr_profile_for, with the blocks the C runtime holds at the end apart from the leaks
// (mr_profile_runtime_apart): what every view but `leaks` (which shows them as a group of
// their own) counts as leaked.
int mr_program_profile_for(const char* path, mt_capture* cap, const mr_symbols* sym,
                           const mr_query* q, mr_profile* p);

// Of the blocks live at the end of a heap (its aggregates, aggregates.h), those the C runtime
// holds (runtime_held.h), their stacks read only when blocks are left. Returns 0, or an exit
// code after the reason.
int mr_runtime_held_at_end(mt_capture* cap, const mr_aggregates* a, uint64_t* bytes,
                           uint64_t* blocks);
// A heap's aggregates (read, or from a replay: aggregates.h), with a progress indicator
// labelled `progress` on a terminal. Returns 0, or an exit code after the reason.
int mr_aggregates_for(mt_capture* cap, int heap, const char* progress, mr_aggregates* a);

// The program's blocks live at the end per leak kind (docs/leaks.md), as `leaks` counts
// them (the C runtime's apart); *scanned false, and the totals 0, when the capture has no
// leak scan. Returns 0, or an exit code after the reason.
int mr_leak_totals_at_end(mt_capture* cap, bool* scanned, uint64_t* bytes, uint64_t* blocks);

#endif
