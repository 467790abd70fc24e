// SPDX-License-Identifier: MIT
// memreport top: which function holds the memory. The function view of the model
// (functions.h) as a table of self and total per function, or, with --callers/--callees,
// one function's callers and callees from the call graph (callgraph.h) with their shares:
// heaptrack's top allocators and caller/callee lists, speedscope's sandwich view. The
// report itself is render/top_report.h's.
#include "callgraph.h"
#include "cmd.h"
#include "escape.h"
#include "functions.h"
#include "load.h"
#include "opts.h"
#include "procs.h"
#include "procs_report.h"
#include "procs_views.h"
#include "profile.h"
#include "symbols.h"
#include "top_report.h"
#include "when.h"

#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static const char top_help[] =
    "usage: memreport top CAPTURE [--metric M] [--at TIME] [--range FROM..TO] [--thread TID]\n"
    "         [--sort self|total] [--top N] [--all-frames] [--callers NAME] [--callees NAME]\n"
    "         [--json] [-o FILE] [-f]\n"
    "Which functions hold the memory: per function, its self bytes (allocated by the\n"
    "function itself, the leaf of the stack) and its total bytes (by it and everything it\n"
    "calls, counted once per stack when it recurses), most self first. Inlined functions\n"
    "are functions of their own; a function is a name and a source file. The C++ standard\n"
    "library's functions (allocation plumbing, as stats passes it) are passed: what they\n"
    "allocate is their caller's self.\n"
    "  --metric M         live: bytes live at the peak (or --at), the default; allocated:\n"
    "                     bytes allocated over the run (or --range); count: allocations over\n"
    "                     the run (or --range); leaked: bytes still live at the end\n"
    "  --at TIME          live at TIME (e.g. 20ms, 1.5s; step N for an NPU log) instead of\n"
    "                     at the peak (--metric live)\n"
    "  --range FROM..TO   only the allocations made between FROM and TO (allocated, count);\n"
    "                     live: at the highest point between them instead of the run's peak;\n"
    "                     leaked: the blocks allocated between them still live at the end;\n"
    "                     either side may be left out: 1s.., ..500ms\n" MR_HELP_TIMES
    "  --thread TID       only the blocks and allocations of thread TID\n"
    "  --sort KEY         self (default) or total\n"
    "  --top N            the first N functions, callers or callees (default 20; 0: all)\n"
    "  --all-frames       noise frames (allocator internals, start-up code) and the\n"
    "                     standard library's are functions too\n"
    "  --callers NAME     the functions that call NAME, each with the part of NAME's total\n"
    "                     that came through it and its share of that total; (root): stacks\n"
    "                     that start at NAME\n"
    "  --callees NAME     the functions NAME calls, likewise, and NAME's self as (self)\n"
    "                     NAME: a function's exact name, 'name (file)', or a unique part of a\n"
    "                     name; under recursion the shares may add up to more than "
    "100%\n" MR_HELP_PROCS
    "                     Their functions are summed over the processes (a function is a\n"
    "                     name and a file, whatever the process), live bytes when the\n"
    "                     processes together held the most; --at, --range, --thread,\n"
    "                     --callers and --callees take one capture\n"
    "  --by-process       several captures: a row per process and function instead\n"
    "  -j, --json         machine-readable output\n"
    "  --full-names       C++ names as demangled (default: std::string, <...>)\n"
    "  -o, --output FILE  write to FILE instead of stdout\n"
    "  -f, --force        overwrite FILE if it exists\n";

typedef struct top_args {
    mr_opts opt;
    mr_when when;
    mr_metric metric;
    bool sort_total, all_frames, by_process;
    size_t top;
    const char *callers, *callees; // NULL unless given
} top_args;

// ---- options

static int parse_option(int c, top_args* a) {
    switch (c) {
    case 'a':
        return mr_opts_parse_at(optarg, &a->when) ? MR_EXIT_USAGE : MR_OPT_NEXT;
    case 'r':
        return mr_opts_parse_range(optarg, top_help, &a->when) ? MR_EXIT_USAGE : MR_OPT_NEXT;
    case 'm':
        return mr_opts_parse_metric(optarg, top_help, true, &a->metric) ? MR_EXIT_USAGE
                                                                        : MR_OPT_NEXT;
    case 'T':
        return mr_opts_parse_thread(optarg, top_help, &a->when.tid) ? MR_EXIT_USAGE : MR_OPT_NEXT;
    case 't':
        return mr_opts_parse_top(optarg, top_help, &a->top) ? MR_EXIT_USAGE : MR_OPT_NEXT;
    case 's':
        if (strcmp(optarg, "self") && strcmp(optarg, "total"))
            return mr_opts_usage_error(top_help, "top: --sort: expected self or total, got '%s'",
                                       optarg);
        a->sort_total = !strcmp(optarg, "total");
        return MR_OPT_NEXT;
    case 'A':
        a->all_frames = true;
        return MR_OPT_NEXT;
    case 'P':
        a->by_process = true;
        return MR_OPT_NEXT;
    case 'c':
        a->callers = optarg;
        return MR_OPT_NEXT;
    case 'C':
        a->callees = optarg;
        return MR_OPT_NEXT;
    default:
        return mr_opts_handle(&a->opt, c, top_help);
    }
}

// Options that mean nothing together are refused rather than ignored.
static int check_args(const top_args* a) {
    const char* metric = mr_top_report_metric_name(a->metric);
    if (a->when.at_arg && a->metric != MR_METRIC_LIVE_BYTES)
        return mr_opts_usage_error(top_help, "top: --at applies to --metric live, not %s", metric);
    if (a->callers && a->callees && strcmp(a->callers, a->callees))
        return mr_opts_usage_error(top_help,
                                   "top: --callers and --callees name two functions: give one");
    return MR_OPT_NEXT;
}

static int parse_args(int argc, char** argv, top_args* a) {
    static const struct option opts[] = {{"metric", required_argument, NULL, 'm'},
                                         {"at", required_argument, NULL, 'a'},
                                         {"range", required_argument, NULL, 'r'},
                                         {"thread", required_argument, NULL, 'T'},
                                         {"sort", required_argument, NULL, 's'},
                                         {"top", required_argument, NULL, 't'},
                                         {"all-frames", no_argument, NULL, 'A'},
                                         {"callers", required_argument, NULL, 'c'},
                                         {"callees", required_argument, NULL, 'C'},
                                         {"json", no_argument, NULL, 'j'},
                                         {"by-process", no_argument, NULL, 'P'},
                                         {"output", required_argument, NULL, 'o'},
                                         {"force", no_argument, NULL, 'f'},
                                         {"full-names", no_argument, NULL, MR_OPT_FULL_NAMES},
                                         {"help", no_argument, NULL, 'h'},
                                         {NULL, 0, NULL, 0}};
    *a = (top_args){.opt = MR_OPTS_INIT,
                    .when = MR_WHEN_INIT,
                    .metric = MR_METRIC_LIVE_BYTES,
                    .top = MR_TOP_DEFAULT};
    int c;
    while ((c = getopt_long(argc, argv, "jo:fh", opts, NULL)) != -1) {
        int rc = parse_option(c, a);
        if (rc != MR_OPT_NEXT)
            return rc;
    }
    return check_args(a);
}

// ---- naming one function (--callers, --callees)

// True when s reads "name (file)" for f.
static bool is_display_name(const mr_function* f, const char* s) {
    size_t n = strlen(f->name);
    if (!f->file || strncmp(s, f->name, n) || strncmp(s + n, " (", 2))
        return false;
    size_t k = strlen(f->file);
    return !strncmp(s + n + 2, f->file, k) && !strcmp(s + n + 2 + k, ")");
}

// The functions matching `name` one way: 0 exact (name or "name (file)"), 1 part of the
// name, 2 part of the name in any case. Returns their number, indexes in idx.
static size_t match(const mr_functions* fns, const char* name, int how, size_t* idx) {
    size_t n = 0;
    for (size_t i = 0; i < fns->n; i++) {
        const mr_function* f = &fns->v[i];
        bool m = how == 0   ? !strcmp(f->name, name) || is_display_name(f, name)
                 : how == 1 ? strstr(f->name, name) != NULL
                            : strcasestr(f->name, name) != NULL;
        if (m)
            idx[n++] = i;
    }
    return n;
}

// An error line lists up to 8 functions, each name and file cut visibly past this many
// bytes so that every one shows.
#define LISTED_NAME_MAX 200

// s (malloc'd, escaped) cut past LISTED_NAME_MAX bytes, ending in "…" (never inside a
// UTF-8 sequence).
static void cut_visibly(char* s) {
    size_t n = s ? strlen(s) : 0;
    if (n <= LISTED_NAME_MAX)
        return;
    n = LISTED_NAME_MAX - 3;
    while (n > 0 && ((unsigned char)s[n] & 0xC0) == 0x80)
        n--;
    memcpy(s + n, "\xe2\x80\xa6", 4); // U+2026
}

// "a (file), b, ... and N more" for an error line, names escaped for a terminal.
static void list_names(const mr_functions* fns, const size_t* idx, size_t n, char* buf,
                       size_t len) {
    size_t used = 0;
    buf[0] = 0;
    for (size_t i = 0; i < n && i < 8 && used < len; i++) {
        const mr_function* f = &fns->v[idx[i]];
        char* name = mr_escape(f->name, strlen(f->name), MR_ESCAPE_TERMINAL);
        char* file = f->file ? mr_escape(f->file, strlen(f->file), MR_ESCAPE_TERMINAL) : NULL;
        cut_visibly(name);
        cut_visibly(file);
        used +=
            (size_t)snprintf(buf + used, len - used, "%s%s%s%s%s", i ? ", " : "", name ? name : "?",
                             file ? " (" : "", file ? file : "", file ? ")" : "");
        free(name);
        free(file);
    }
    if (n > 8 && used < len)
        snprintf(buf + used, len - used, " and %zu more", n - 8);
}

// The function `name` names (top_help's NAME). Returns 0 with its index, or the usage exit
// code after saying which functions it could mean.
static int find_function(const mr_functions* fns, const char* option, const char* name,
                         size_t* out) {
    size_t* idx = malloc((fns->n ? fns->n : 1) * sizeof *idx);
    if (!idx) {
        mr_messages_error(NULL, "out of memory");
        return MR_EXIT_IO;
    }
    size_t n = match(fns, name, 0, idx);
    if (n == 0)
        n = match(fns, name, 1, idx);
    int rc = MR_EXIT_OK;
    char names[8 * (2 * LISTED_NAME_MAX + 8) + 64];
    char* shown = mr_escape(name, strlen(name), MR_ESCAPE_TERMINAL);
    if (n == 1) {
        *out = idx[0];
    } else if (n > 1) {
        list_names(fns, idx, n, names, sizeof names);
        rc = mr_opts_usage_error(top_help, "top: %s '%s' is ambiguous: %zu functions match: %s",
                                 option, shown ? shown : "?", n, names);
    } else if ((n = match(fns, name, 2, idx)) > 0) {
        list_names(fns, idx, n, names, sizeof names);
        rc = mr_opts_usage_error(top_help, "top: %s '%s': no such function; did you mean: %s",
                                 option, shown ? shown : "?", names);
    } else {
        rc = mr_opts_usage_error(top_help,
                                 "top: %s '%s': no such function ('memreport top CAPTURE --top 0' "
                                 "lists them)",
                                 option, shown ? shown : "?");
    }
    free(shown);
    free(idx);
    return rc;
}

// ---- the command

// Builds the views the arguments ask for and writes the report. Returns an exit code.
static int write_top(mr_top_report* t, const top_args* a, const mr_symbols* sy) {
    mr_functions fns;
    mr_callgraph graph = {0};
    if (mr_functions_build(t->profile, sy, a->all_frames, &fns)) {
        mr_messages_error(t->capture, "out of memory");
        return MR_EXIT_IO;
    }
    t->functions = &fns;
    const char* name = a->callers ? a->callers : a->callees;
    int rc = MR_EXIT_OK;
    if (name)
        rc = find_function(&fns, a->callers ? "--callers" : "--callees", name, &t->focus);
    if (!rc && name && mr_callgraph_build(t->profile, sy, a->all_frames, &fns, &graph)) {
        mr_messages_error(t->capture, "out of memory");
        rc = MR_EXIT_IO;
    }
    t->graph = name ? &graph : NULL;
    if (!rc) {
        mr_report_to to = mr_opts_report_to(&a->opt);
        rc = mr_top_report_write(&to, t);
    }
    mr_callgraph_free(&graph);
    mr_functions_free(&fns);
    return rc;
}

// The function views of every process, summed per function or (--by-process) one after
// the other, with each row's process label in labels[i]. Returns an exit code.
static int procs_functions(const top_args* a, const mr_capture_set* s, const mr_profile* profs,
                           mr_functions* fns, char*** labels) {
    mr_functions* parts = calloc(s->n, sizeof *parts);
    size_t* part_of = NULL;
    int e = parts ? 0 : -ENOMEM;
    for (size_t i = 0; !e && i < s->n; i++)
        e = mr_functions_build(&profs[i], s->procs[i].sym, a->all_frames, &parts[i]);
    if (!e)
        e = a->by_process ? mr_procs_views_functions_split(parts, s->n, fns, &part_of)
                          : mr_procs_views_functions_sum(parts, s->n, fns);
    *labels = NULL;
    if (!e && a->by_process && !(*labels = calloc(fns->n + 1, sizeof **labels)))
        e = -ENOMEM;
    for (size_t i = 0; !e && part_of && i < fns->n; i++)
        if (!((*labels)[i] = mr_procs_report_label(&s->procs[part_of[i]])))
            e = -ENOMEM;
    for (size_t i = 0; parts && i < s->n; i++)
        mr_functions_free(&parts[i]);
    free(parts);
    free(part_of);
    if (e)
        mr_messages_error(s->procs[0].path, "out of memory");
    return e ? MR_EXIT_IO : MR_EXIT_OK;
}

// Several captures (procs.h): the function table over every process.
typedef struct processes_input {
    const top_args* args;
    const char* first; // the first input named, for the report's title
    const mr_query* query;
} processes_input;

static int processes_report(void* ud, const mr_capture_set* s, const mr_profile* profs,
                            const mr_profile* sum, const mr_procs_moment* joint) {
    const processes_input* in = ud;
    const top_args* a = in->args;
    mr_functions fns = {0};
    char** labels = NULL;
    int rc = procs_functions(a, s, profs, &fns, &labels);
    if (!rc) {
        mr_top_report t = {.capture = in->first,
                           .query = in->query,
                           .profile = sum,
                           .metric = a->metric,
                           .all_frames = a->all_frames,
                           .sort_total = a->sort_total,
                           .top = a->top,
                           .functions = &fns,
                           .processes = s->n,
                           .process_of = (const char* const*)labels,
                           .joint_ts = joint ? joint->ts : 0};
        mr_report_to to = mr_opts_report_to(&a->opt);
        rc = mr_top_report_write(&to, &t);
    }
    for (size_t i = 0; labels && i < fns.n; i++)
        free(labels[i]);
    free(labels);
    mr_functions_free(&fns);
    return rc;
}

static int several_processes(const top_args* a, char* const* paths, int n) {
    if (a->when.at_arg || a->when.from_arg || a->when.to_arg || a->when.range_named ||
        a->when.tid || a->callers || a->callees)
        return mr_opts_usage_error(top_help, "top: several captures take --metric, --sort, --top, "
                                             "--all-frames and --by-process, not --at, --range, "
                                             "--thread, --callers or --callees");
    mr_query q = MR_QUERY_INIT(0);
    q.progress = "top";
    processes_input in = {a, paths[0], &q};
    // Live bytes at the processes' joint peak: a sum of each one's own peak is no moment.
    return mr_procs_report(paths, n, top_help, &q, a->metric == MR_METRIC_LIVE_BYTES,
                           processes_report, &in);
}

int mr_cmd_top(int argc, char** argv) {
    top_args a;
    int rc = parse_args(argc, argv, &a);
    if (rc != MR_OPT_NEXT)
        return rc;
    if (mr_capture_set_wanted(argc - optind, argv + optind))
        return several_processes(&a, argv + optind, argc - optind);
    if (a.by_process)
        return mr_opts_usage_error(top_help, "top: --by-process takes several captures or a "
                                             "directory");
    const char* path = mr_opts_input(argc, argv, top_help);
    if (!path)
        return MR_EXIT_USAGE;
    mt_capture* cap;
    mr_symbols* sy;
    if ((rc = mr_load_capture_symbols(path, &cap, &sy)))
        return rc;
    mr_query q;
    mr_profile p = {0};
    mr_top_report t = {.capture = path,
                       .query = &q,
                       .profile = &p,
                       .metric = a.metric,
                       .at_time = a.when.at_arg != NULL,
                       .range_given = a.when.from_arg || a.when.to_arg,
                       .tid = a.when.tid,
                       .all_frames = a.all_frames,
                       .sort_total = a.sort_total,
                       .top = a.top,
                       .callers = a.callers != NULL,
                       .callees = a.callees != NULL};
    if (!(rc = mr_when_query(&a.when, path, cap, &q, &t.steps))) {
        q.progress = "top";
        if (a.metric == MR_METRIC_END_BYTES) {
            q.range_blocks = t.range_given;
            q.ends_only = true;
            q.moment = MR_AT_END;
        }
        if (!(rc = mr_load_program_profile(path, cap, sy, &q, &p)))
            rc = write_top(&t, &a, sy);
    }
    mr_profile_free(&p);
    mr_symbols_free(sy);
    mt_capture_close(cap);
    return rc;
}
