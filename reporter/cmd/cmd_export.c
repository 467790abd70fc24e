// SPDX-License-Identifier: MIT
// memreport export: a capture in a file format other tools open. The options choose the
// moment, range, thread and metric; the aggregation model (profile.h) computes the rows;
// one writer per format (render/export_<format>.c) writes them.
#include "cmd.h"
#include "export.h"
#include "load.h"
#include "opts.h"
#include "output_file.h"
#include "procs.h"
#include "procs_report.h"
#include "profile.h"
#include "when.h"

#include "memtrace/schema.h"

#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

// The formats: adding one is a writer in render/ and a line here.
static const struct export_format {
    const char* name;
    mr_export_fn write;
    bool binary;  // never written to a terminal
    bool streams; // replays the events itself (once): the command builds no profile
    bool several; // takes several processes' stacks (mr_export_input.procs)
    const char* help;
} formats[] = {
    {"folded", mr_export_folded, false, false, true,
     "collapsed stacks, 'root;...;leaf VALUE' (flamegraph.pl, inferno, speedscope)"},
    {"pprof", mr_export_pprof, true, false, true,
     "gzipped profile.proto, Go heap profile types (go tool pprof)"},
    {"speedscope", mr_export_speedscope, false, false, true,
     "speedscope's JSON: live, allocated and count profiles (speedscope.app)"},
    {"csv", mr_export_csv, false, true, true,
     "every heap event and mark, msMemScope's dump layout (spreadsheets, sqlite3)"},
    {"massif", mr_export_massif, false, true, false,
     "valgrind massif's massif.out: snapshots, the tree at the peak (ms_print)"},
    {"chrome", mr_export_chrome, false, true, true,
     "Chrome trace-event JSON: heap, RSS, VSZ counters, marks (Perfetto, chrome://tracing)"},
};

static const char export_help_head[] =
    "usage: memreport export CAPTURE --format FORMAT [-o FILE] [-f] [--at TIME | --leaks]\n"
    "         [--range FROM..TO] [--metric live|allocated|count] [--thread TID] [--all-frames]\n"
    "Writes a capture's heap profile in a format other tools open.\n"
    "  --format FORMAT     one of the formats below\n"
    "  -o, --output FILE   write to FILE (default: stdout, text formats only)\n"
    "  -f, --force         overwrite FILE if it exists\n"
    "  --at TIME           live memory at TIME (e.g. 20ms, 1.5s; step N for an NPU log)\n"
    "                      instead of at the peak\n"
    "  --leaks             live memory at the end (what was never freed)\n"
    "  --range FROM..TO    count allocations made between FROM and TO only, and take live\n"
    "                      memory at the highest point between them instead of the peak\n"
    "                      (either side may be left out: 1s.., ..500ms); csv and chrome keep\n"
    "                      the events and marks between them\n" MR_HELP_TIMES
    "  --metric M          the weight of a stack where a format has one: live (bytes live\n"
    "                      at the moment, default), allocated (bytes allocated in the\n"
    "                      range), count (allocations in the range)\n"
    "  --thread TID        only the blocks and allocations of thread TID\n"
    "  --all-frames        keep noise frames (allocator internals, start-up code)\n"
    "Several captures, or a directory of them (memtrace -o DIR/), are read as the processes\n"
    "of one run (all formats but massif): each process (command and pid) is the root frame\n"
    "of its own stacks, at the processes' joint peak (the most they held at one moment) or\n"
    "each one's end (--leaks); chrome shows each process under\n"
    "its pid, csv each one's rows in turn (tree order), on one time axis from the earliest\n"
    "start; --at, --range and --thread name one process's times and threads, so they take\n"
    "one capture.\n"
    "formats:\n";

static char* export_help(void) {
    static char help[4096];
    size_t len = (size_t)snprintf(help, sizeof help, "%s", export_help_head);
    for (size_t i = 0; i < sizeof formats / sizeof *formats && len < sizeof help; i++)
        len += (size_t)snprintf(help + len, sizeof help - len, "  %-19s %s\n", formats[i].name,
                                formats[i].help);
    return help;
}

typedef struct export_args {
    mr_opts opt;
    const struct export_format* format;
    mr_when when;
    mr_metric metric;
    bool all_frames;
} export_args;

static int parse_format(const char* name, export_args* a) {
    for (size_t i = 0; i < sizeof formats / sizeof *formats; i++)
        if (!strcmp(name, formats[i].name)) {
            a->format = &formats[i];
            return MR_OPT_NEXT;
        }
    return mr_opts_usage_error(export_help(), "export: unknown format '%s'", name);
}

static int parse_option(int c, export_args* a, int* moments) {
    switch (c) {
    case 'F':
        return parse_format(optarg, a);
    case 'a':
        ++*moments;
        return mr_opts_parse_at(optarg, &a->when) ? MR_EXIT_USAGE : MR_OPT_NEXT;
    case 'l':
        ++*moments;
        a->when.moment = MR_AT_END;
        return MR_OPT_NEXT;
    case 'r':
        return mr_opts_parse_range(optarg, export_help(), &a->when) ? MR_EXIT_USAGE : MR_OPT_NEXT;
    case 'm':
        return mr_opts_parse_metric(optarg, export_help(), false, &a->metric) ? MR_EXIT_USAGE
                                                                              : MR_OPT_NEXT;
    case 't':
        return mr_opts_parse_thread(optarg, export_help(), &a->when.tid) ? MR_EXIT_USAGE
                                                                         : MR_OPT_NEXT;
    case 'A':
        a->all_frames = true;
        return MR_OPT_NEXT;
    default:
        return mr_opts_handle(&a->opt, c, export_help());
    }
}

static int parse_args(int argc, char** argv, export_args* a) {
    static const struct option opts[] = {{"format", required_argument, NULL, 'F'},
                                         {"output", required_argument, NULL, 'o'},
                                         {"force", no_argument, NULL, 'f'},
                                         {"at", required_argument, NULL, 'a'},
                                         {"leaks", no_argument, NULL, 'l'},
                                         {"range", required_argument, NULL, 'r'},
                                         {"metric", required_argument, NULL, 'm'},
                                         {"thread", required_argument, NULL, 't'},
                                         {"all-frames", no_argument, NULL, 'A'},
                                         {"help", no_argument, NULL, 'h'},
                                         {NULL, 0, NULL, 0}};
    *a = (export_args){.opt = MR_OPTS_INIT, .when = MR_WHEN_INIT};
    int c, moments = 0;
    while ((c = getopt_long(argc, argv, "o:fh", opts, NULL)) != -1) {
        int rc = parse_option(c, a, &moments);
        if (rc != MR_OPT_NEXT)
            return rc;
    }
    if (moments > 1)
        return mr_opts_usage_error(export_help(), "export: --at and --leaks exclude each other");
    return MR_OPT_NEXT;
}

static int write_export(const export_args* a, const mr_export_input* in) {
    mr_output_file out;
    int rc = mr_output_file_open(&out, a->opt.output, a->opt.force);
    if (rc)
        return rc;
    char err[256] = "";
    int e = a->format->write(out.fp, in, err, sizeof err);
    if (e) {
        mr_messages_error(in->path, "%s", err[0] ? err : strerror(-e));
        mr_output_file_abort(&out);
        return e == -ENOMEM || e == -EIO ? MR_EXIT_IO : MR_EXIT_BAD_INPUT;
    }
    return mr_output_file_commit(&out);
}

// Several captures (procs.h): every process's rows in one profile, its callsites offset
// past the previous process's, each stack under its process's frame.
typedef struct procs_input {
    const export_args* args;
    const mr_query* query;
    const char* first; // the first input named: the file's name
} procs_input;

// The processes of s, each placed after the earliest start, and their rows in one profile
// (none for a format that streams: profs NULL). Returns an exit code.
static int merge_processes(const mr_capture_set* s, const mr_profile* profs, mr_profile* merged,
                           mr_export_process* procs) {
    size_t nrows = 0;
    int64_t origin = 0; // the earliest start a capture records
    for (size_t i = 0; i < s->n; i++) {
        nrows += profs ? profs[i].nrows : 0;
        if (s->procs[i].start_ns > 0 && (!origin || s->procs[i].start_ns < origin))
            origin = s->procs[i].start_ns;
    }
    if (!(merged->rows = calloc(nrows ? nrows : 1, sizeof *merged->rows))) {
        mr_messages_error(s->procs[0].path, "out of memory");
        return MR_EXIT_IO;
    }
    uint64_t first = 0;
    for (size_t i = 0; i < s->n; i++) {
        const mr_profile* p = profs ? &profs[i] : &(mr_profile){0};
        int64_t start = s->procs[i].start_ns;
        procs[i] = (mr_export_process){.cap = s->procs[i].cap,
                                       .sym = s->procs[i].sym,
                                       .first = (uint32_t)first,
                                       .offset = start > 0 ? start - origin : 0};
        if (!(procs[i].root.function = mr_procs_report_label(&s->procs[i]))) {
            mr_messages_error(s->procs[i].path, "out of memory");
            return MR_EXIT_IO;
        }
        uint64_t top = 0; // rows come by callsite: the last is the highest
        for (size_t r = 0; r < p->nrows; r++) {
            merged->rows[merged->nrows] = p->rows[r];
            merged->rows[merged->nrows++].callsite += (uint32_t)first;
            top = p->rows[r].callsite;
        }
        if ((first += top + 1) > UINT32_MAX) {
            mr_messages_error(s->procs[i].path, "too many call sites in these captures together");
            return MR_EXIT_BAD_INPUT;
        }
    }
    return MR_EXIT_OK;
}

static int processes_export(void* ud, const mr_capture_set* s, const mr_profile* profs,
                            const mr_profile* sum, const mr_procs_moment* joint) {
    const procs_input* pin = ud;
    mr_profile merged = *sum; // the totals; the rows are every process's
    merged.rows = NULL;
    merged.nrows = 0;
    mr_export_process* procs = calloc(s->n, sizeof *procs);
    int rc = procs ? merge_processes(s, profs, &merged, procs) : MR_EXIT_IO;
    if (!procs)
        mr_messages_error(s->procs[0].path, "out of memory");
    if (!rc) {
        mr_export_input in = {.cap = s->procs[0].cap,
                              .path = pin->first,
                              .sym = s->procs[0].sym,
                              .query = pin->query,
                              .prof = &merged,
                              .metric = pin->args->metric,
                              .all_frames = pin->args->all_frames,
                              .procs = procs,
                              .nprocs = s->n,
                              .joint_peak = joint != NULL,
                              .joint_ts = joint ? joint->ts : 0};
        rc = write_export(pin->args, &in);
    }
    for (size_t i = 0; procs && i < s->n; i++)
        free((char*)procs[i].root.function);
    free(procs);
    free(merged.rows);
    return rc;
}

static int export_processes(const export_args* a, char* const* paths, int n) {
    if (!a->format->several)
        return mr_opts_usage_error(export_help(),
                                   "export: several captures take folded, pprof, speedscope, "
                                   "chrome or csv, not %s",
                                   a->format->name);
    if (a->when.moment == MR_AT_TIME || a->when.from_arg || a->when.to_arg || a->when.range_named ||
        a->when.tid)
        return mr_opts_usage_error(export_help(), "export: several captures take --leaks or each "
                                                  "process's peak, not --at, --range or --thread");
    mr_query q = MR_QUERY_INIT(0);
    q.moment = a->when.moment == MR_AT_END ? MR_AT_END : MR_AT_PEAK;
    q.progress = "export";
    procs_input in = {.args = a, .query = &q, .first = paths[0]};
    if (!a->format->streams)
        return mr_procs_report(paths, n, export_help(), &q, true, processes_export, &in);
    mr_capture_set s; // a format that reads the events itself: no profiles
    int rc = mr_procs_open(&s, paths, n, export_help(), true);
    if (!rc) {
        rc = processes_export(&in, &s, NULL, &(mr_profile){0}, NULL);
        mr_capture_set_free(&s);
    }
    return rc;
}

int mr_cmd_export(int argc, char** argv) {
    export_args a;
    int rc = parse_args(argc, argv, &a);
    if (rc != MR_OPT_NEXT)
        return rc;
    bool several = mr_capture_set_wanted(argc - optind, argv + optind);
    const char* path = several ? argv[optind] : mr_opts_input(argc, argv, export_help());
    if (!path)
        return MR_EXIT_USAGE;
    if (!a.format)
        return mr_opts_usage_error(export_help(), "export: --format is required");
    if (a.format->binary && !strcmp(a.opt.output, "-") && isatty(STDOUT_FILENO))
        return mr_opts_usage_error(export_help(), "export: %s is binary: name a file with -o",
                                   a.format->name);
    if (several)
        return export_processes(&a, argv + optind, argc - optind);
    mt_capture* cap;
    mr_symbols* sym;
    if ((rc = mr_load_capture_symbols(path, &cap, &sym)))
        return rc;
    mr_query q;
    mr_profile prof;
    mr_export_input in = {.cap = cap,
                          .path = path,
                          .sym = sym,
                          .query = &q,
                          .prof = &prof,
                          .metric = a.metric,
                          .all_frames = a.all_frames};
    memset(&prof, 0, sizeof prof);
    if (!(rc = mr_when_query(&a.when, path, cap, &q, &in.steps)) &&
        !(rc = a.format->streams ? 0 : mr_load_program_profile(path, cap, sym, &q, &prof)))
        rc = write_export(&a, &in);
    mr_profile_free(&prof);
    mr_symbols_free(sym);
    mt_capture_close(cap);
    return rc;
}
