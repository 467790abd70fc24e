// SPDX-License-Identifier: MIT
// The command line's options every subcommand shares, where a report is written (a
// render/*_report.h writes it), the values of options (counts, times, metrics), and usage
// errors. A command reads through the model with load.h and places times with when.h.
#ifndef MR_OPTS_H
#define MR_OPTS_H

#include "messages.h"
#include "profile.h"
#include "report.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

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
int mr_opts_usage_error(const char* help, const char* fmt, ...)
    __attribute__((format(printf, 2, 3)));
// The usage lines of a subcommand's help (its first lines) and a pointer to --help.
void mr_opts_usage_hint(const char* help);

// --top N of the reports that list stacks (stacks, stats, leaks): N >= 0, 0 meaning all
// (*out = SIZE_MAX). Returns 0, or the usage exit code after an error and the usage hint.
#define MR_TOP_DEFAULT 20
int mr_opts_parse_top(const char* value, const char* help, size_t* out);

// A time given on the command line (--at): nanoseconds since the capture started, or for an
// imported NPU capture an allocation step. Every subcommand parses times with mr_opts_parse_time
// and checks them against its capture with mr_when_check_time.
typedef struct mr_time {
    int64_t value; // ns, or the step
    bool step;
} mr_time;
// Accepts a number with a unit, "20ms", "1.5s", "250 us", "100ns", or "step N". A bare
// number is refused: its unit would be a guess. Returns 0, or the usage exit code after an
// error saying what is expected.
int mr_opts_parse_time(const char* option, const char* value, mr_time* out);

// The moment, range and thread of the reports that weigh stacks (--at, --leaks, --range,
// --thread) as given on the command line; mr_when_query places them in a capture.
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
int mr_opts_parse_at(const char* value, mr_when* w);
// The help lines that say so, for the reports that take --at or --range.
#define MR_HELP_TIMES                                                                              \
    "  TIME, FROM, TO     a time (20ms, 1.5s: ns, us, ms or s; step N for an NPU log) or the\n"    \
    "                     name of a mark or range the program recorded (memtrace.h): a mark's\n"   \
    "                     time; a range's begin as FROM, its end as TO or --at; --range NAME:\n"   \
    "                     the range from begin to end. NAME#N: the Nth (by time) of a name\n"      \
    "                     recorded more than once. A name that reads as a time (a digit first,\n"  \
    "                     or step and a number) is given as mark:NAME\n"
int mr_opts_parse_range(char* value, const char* help, mr_when* w);
int mr_opts_parse_thread(const char* value, const char* help, uint32_t* tid);
// --metric live|allocated|count (and leaked when `leaked`): MR_METRIC_LIVE_BYTES,
// _ALLOC_BYTES, _ALLOC_COUNT, _END_BYTES. Returns 0 or the usage exit code.
int mr_opts_parse_metric(const char* value, const char* help, bool leaked, mr_metric* out);
#endif
