// SPDX-License-Identifier: MIT
// memreport: the offline reporter. Dispatches to one subcommand per module.
#include "aggregates.h"
#include "cmd.h"
#include "opts.h"
#include "output_file.h"

#include "memtrace/capture.h"

#include <malloc.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

typedef struct command {
    const char* name;
    int (*run)(int argc, char** argv);
    const char* help;
} command;

static const command commands[] = {
    {"view", mr_cmd_view, "one HTML page to explore a capture: timeline, flame graph, tables"},
    {"summary", mr_cmd_summary, "totals of a capture: events, peak, leaks, calls"},
    {"stacks", mr_cmd_stacks, "distinct allocation stacks with bytes and counts, symbolized"},
    {"top", mr_cmd_top, "which functions hold the memory: self and total, callers, callees"},
    {"leaks", mr_cmd_leaks, "blocks live at the end, grouped by allocation stack"},
    {"stats", mr_cmd_stats, "top sites, size histogram, temporaries, threads"},
    {"flamegraph", mr_cmd_flamegraph, "HTML flame graph of live memory (peak, time, leaks)"},
    {"import", mr_cmd_import, "import an NPU compiler memory-usage log into a capture"},
    {"plot", mr_cmd_plot, "memory over time as PNG/SVG (native or NPU heap plot)"},
    {"export", mr_cmd_export, "the heap profile in other tools' formats (folded, ...)"},
    {"sql", mr_cmd_sql, "SQL over a capture: events, allocations, stacks and its tables"},
    {"diff", mr_cmd_diff, "two captures compared per function and stack; a CI gate"},
    {"flow", mr_cmd_flow, "flow graph of live memory through lines of code (DOT, SVG)"},
    {"live", mr_cmd_live, "follow a running program's capture: heap, RSS, top sites, plot"},
};

// `asked`: --help, not a mistake, whose short hint stays short.
static void usage(FILE* out, bool asked) {
    fputs("usage: memreport COMMAND [OPTIONS] ...\n\ncommands:\n", out);
    for (size_t i = 0; i < sizeof commands / sizeof *commands; i++)
        fprintf(out, "  %-12s %s\n", commands[i].name, commands[i].help);
    fputs("\n'memreport COMMAND --help' describes one command.\n"
          "--skip-corrupt (anywhere before --): leave out event chunks that fail their\n"
          "checksum, with a warning for each, instead of stopping at the first.\n"
          "--replay (anywhere before --): read every event, as if the capture stored no\n"
          "aggregates (which the first report of a writable capture stores, so that\n"
          "summary, leaks, stats, top and the peak flame graph read no event after it).\n"
          "exit codes: 0 ok, 1 usage, 2 bad input, 3 I/O error, 4 a --fail-if limit broken\n",
          out);
    if (asked)
        fputs("Documentation: README.md and docs/ (docs/reports.md: every report), in the source\n"
              "and in share/doc/memtrace/ when installed.\n",
              out);
}

static void warn_skipped(const char* path, const char* what) {
    mr_messages_error(path, "warning: %s", what);
}

// Removes the global options --skip-corrupt and --replay from argv (they apply to every
// subcommand, whose own option parsers do not know them). Returns the new argc.
static int take_global_options(int argc, char** argv) {
    int out = 1;
    bool options = true;
    for (int i = 1; i < argc; i++) {
        if (options && !strcmp(argv[i], "--"))
            options = false;
        if (options && !strcmp(argv[i], "--skip-corrupt")) {
            mt_capture_skip_corrupt_chunks(warn_skipped);
            mr_aggregates_enable(false); // figures without the skipped chunks are not the capture's
            continue;
        }
        if (options && !strcmp(argv[i], "--replay")) {
            mr_aggregates_enable(false);
            continue;
        }
        argv[out++] = argv[i];
    }
    argv[out] = NULL;
    return out;
}

int main(int argc, char** argv) {
#ifdef M_MMAP_THRESHOLD
    // Blocks of 1 MiB and more get pages of their own, given back when freed. glibc's
    // default raises that threshold to the largest block freed so far: the checkpoints'
    // buffers of megabytes, made and freed every 4 Mi events of a replay, then stay in the
    // heap as free memory beside the live-block table.
    mallopt(M_MMAP_THRESHOLD, 1 << 20);
#endif
    argc = take_global_options(argc, argv);
    if (argc < 2) {
        mr_messages_error(NULL, "no command given");
        usage(stderr, false);
        return MR_EXIT_USAGE;
    }
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
        usage(stdout, true);
        return MR_EXIT_OK;
    }
    if (!strcmp(argv[1], "--version")) {
        printf("memreport %s\n", MEMTRACE_VERSION_STRING);
        return MR_EXIT_OK;
    }
    for (size_t i = 0; i < sizeof commands / sizeof *commands; i++) {
        if (strcmp(argv[1], commands[i].name) != 0)
            continue;
        // getopt names argv[0] in its messages: "memreport: stats: unrecognized option".
        char arg0[64];
        snprintf(arg0, sizeof arg0, "memreport: %s", commands[i].name);
        argv[1] = arg0;
        return commands[i].run(argc - 1, argv + 1);
    }
    mr_messages_error(NULL, "unknown command '%s'", argv[1]);
    usage(stderr, false);
    return MR_EXIT_USAGE;
}
