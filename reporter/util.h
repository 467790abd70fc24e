// SPDX-License-Identifier: MIT
// memreport plumbing shared by every subcommand: exit codes, error messages, opening
// captures with a clear message, and outputs written to a temporary file then renamed.
#ifndef MR_UTIL_H
#define MR_UTIL_H

#include "memtrace/capture.h"

#include <stdbool.h>
#include <stdio.h>

enum { MR_EXIT_OK = 0, MR_EXIT_USAGE = 1, MR_EXIT_BAD_INPUT = 2, MR_EXIT_IO = 3 };

// Prints "memreport: WHAT: message" on stderr (WHAT may be NULL).
void mr_error(const char* what, const char* fmt, ...) __attribute__((format(printf, 2, 3)));

// Opens a capture; on failure prints the reason and returns the exit code (2 or 3).
int mr_open_capture(const char* path, mt_capture** out);

// An output file. "-" means stdout. Otherwise the data goes to a temporary file in the
// same directory, renamed over `path` by mr_output_commit, removed by mr_output_abort;
// an existing `path` is refused unless `force`.
typedef struct mr_output {
    FILE* fp;
    char* path;
    char* tmp;
} mr_output;

// Returns 0 or an exit code (after printing the reason). Commit says "memreport: wrote
// FILE" on stderr once the file is in place (never for stdout).
int mr_output_open(mr_output* o, const char* path, bool force);
int mr_output_commit(mr_output* o);
// The one line every subcommand prints for a file it wrote: "memreport: wrote FILE".
void mr_note_written(const char* path);
void mr_output_abort(mr_output* o);

// The options every subcommand shares: -j/--json, -o/--output FILE, -f/--force, -h/--help.
typedef struct mr_opts {
    const char* output; // "-" = stdout
    bool force;
    bool json;
} mr_opts;
#define MR_OPTS_INIT                                                                               \
    { "-", false, false }
enum { MR_OPT_NEXT = -1 };
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

// Writes a report to o->output: as indented JSON with --json, else through print_text.
// Returns 0 or an exit code (after printing the reason).
typedef struct json_t json_t;
int mr_write_report(const mr_opts* o, json_t* report, void (*print_text)(FILE*, json_t*));

// True when stderr is a terminal (progress indicators are shown only then).
bool mr_progress_enabled(void);
// Prints "\rLABEL: NN%" at most every 100 ms when enabled; done < 0 clears the line.
void mr_progress(const char* label, double fraction);

// A default output name: path with the extension of its last component (if any) replaced
// by ext (".db", ".png"). Returns a malloc'd string or NULL.
char* mr_path_with_ext(const char* path, const char* ext);

// The heap a report shows by default: MT_HEAP_NPU for a capture imported from an NPU log
// (heap 2 of kind 'npu' and no libc heap; its time unit is the allocation step, not ns),
// MT_HEAP_LIBC otherwise.
int mr_capture_default_heap(mt_capture* cap);

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

// The extent in time of a capture's heap: a native heap's duration in ns (steps false), or
// an imported NPU heap's number of allocation steps (steps true; they run 0..end-1).
typedef struct mr_extent {
    int64_t end;
    bool steps;
} mr_extent;
mr_extent mr_capture_extent(mt_capture* cap, int heap);

// Checks t against the capture `path` (its heap's extent): steps only for an NPU capture,
// ns only for a native one, and inside the capture. Returns 0 with the time in the heap's
// unit in *ts, or the usage exit code after an error naming the capture's extent.
int mr_time_in_capture(const char* option, const char* value, mr_time t, const char* path,
                       mr_extent extent, int64_t* ts);

// A time of a report: "step 3" for steps, else a duration ("1.234 s", "12.5 ms"). Returns buf.
char* mr_format_time(int64_t t, bool steps, char* buf, size_t len);

#endif
