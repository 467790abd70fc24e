// SPDX-License-Identifier: MIT
// memreport flow: heapprof's flow graph. One profile per moment (--at, the peak by
// default), all from one replay of the capture, each row's stack turned into its lines of
// code and added to the flow graph (model/flowgraph.h), which the flow report draws as DOT,
// SVG (through Graphviz's dot) or JSON (render/flow_report.h).
#include "cmd.h"
#include "flow_report.h"
#include "flowgraph.h"
#include "functions.h"
#include "load.h"
#include "opts.h"
#include "procs.h"
#include "procs_report.h"
#include "profile.h"
#include "sites.h"
#include "symbols.h"
#include "u64map.h"
#include "when.h"

#include "memtrace/vec.h"

#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

static const char flow_help[] =
    "usage: memreport flow CAPTURE [--at TIME]... [--min-share P] [--all-frames] [--json]\n"
    "         [--full-names] [-o FILE.dot|FILE.svg] [-f]\n"
    "How live memory flows through the code, as heapprof draws it: a directed graph whose\n"
    "nodes are lines of code (function (file:line)) and whose edges are calls, caller to\n"
    "callee. Each node shows, for each moment, 'local / cumulative = percent': local, the\n"
    "bytes live that this line allocated (the leaf-most line of their stack); cumulative,\n"
    "the bytes live in stacks through it (once per stack under recursion); percent, that of\n"
    "the moment's live bytes, also shown by colour, from blue (small) to red (large). An\n"
    "edge is labelled with the bytes of the stacks that make that call. A chain of lines\n"
    "that allocate nothing, each calling only the next, which has no other caller, is one\n"
    "box listing its lines. Inlined functions have lines of their own.\n"
    "  --at TIME          a moment to show (e.g. 20ms, 1.5s; step N for an NPU log; a mark's\n"
    "                     name; 'peak' for the peak), the peak by default; repeat it to\n"
    "                     compare moments in one graph: each node shows one row per --at\n"
    "                     (up to 16, all read in one pass over the capture)\n"
    "  --min-share P      hide the lines, and the calls, below P percent of the live bytes\n"
    "                     at every moment (default 1, heapprof's; 0 shows everything); the\n"
    "                     numbers of what is shown do not change\n"
    "  --all-frames       noise frames (allocator internals, start-up code) and the C++\n"
    "                     standard library's are lines too (else what the library\n"
    "                     allocates is its caller's line's, as in top)\n"
    "  -j, --json         the graph as JSON: moments, nodes with their lines and numbers,\n"
    "                     edges with their bytes\n"
    "  --full-names       C++ names as demangled in the boxes (default: std::string, <...>,\n"
    "                     the whole name in a box's tooltip)\n"
    "  -o, --output FILE  FILE.dot: Graphviz DOT (also the default, on stdout); FILE.svg:\n"
    "                     drawn by Graphviz's dot, which must be installed\n"
    "  -f, --force        overwrite FILE if it exists\n"
    "Several captures, or a directory of them (memtrace -o DIR/), are read as the processes\n"
    "of one run, each at its own peak: every stack ends in a node naming its process,\n"
    "COMMAND (pid N), and a line of code run by several processes is one node holding the\n"
    "bytes of all (--at takes one capture).\n";

#define MAX_MOMENTS MR_PROFILE_MAX_MOMENTS // one replay gives them all

typedef struct flow_args {
    mr_opts opt;
    mr_when when[MAX_MOMENTS];
    const char* names[MAX_MOMENTS]; // "peak" or the --at value
    size_t nt;
    double min_share; // percent
    bool all_frames, svg;
} flow_args;

static bool ends_with(const char* s, const char* end) {
    size_t n = strlen(s), k = strlen(end);
    return n >= k && !strcmp(s + n - k, end);
}

static int parse_option(int c, flow_args* a) {
    switch (c) {
    case 'a': {
        if (a->nt == MAX_MOMENTS)
            return mr_opts_usage_error(flow_help, "flow: at most %d --at", MAX_MOMENTS);
        mr_when* w = &a->when[a->nt];
        *w = (mr_when)MR_WHEN_INIT;
        a->names[a->nt++] = optarg;
        if (!strcmp(optarg, "peak"))
            return MR_OPT_NEXT;
        return mr_opts_parse_at(optarg, w) ? MR_EXIT_USAGE : MR_OPT_NEXT;
    }
    case 'm': {
        char* end;
        errno = 0;
        double p = strtod(optarg, &end);
        if (end == optarg || *end || errno || !(p >= 0 && p <= 100))
            return mr_opts_usage_error(
                flow_help, "flow: --min-share: expected a percent 0..100, got '%s'", optarg);
        a->min_share = p;
        return MR_OPT_NEXT;
    }
    case 'A':
        a->all_frames = true;
        return MR_OPT_NEXT;
    default:
        return mr_opts_handle(&a->opt, c, flow_help);
    }
}

static int parse_args(int argc, char** argv, flow_args* a) {
    static const struct option opts[] = {{"at", required_argument, NULL, 'a'},
                                         {"min-share", required_argument, NULL, 'm'},
                                         {"all-frames", no_argument, NULL, 'A'},
                                         {"json", no_argument, NULL, 'j'},
                                         {"output", required_argument, NULL, 'o'},
                                         {"force", no_argument, NULL, 'f'},
                                         {"full-names", no_argument, NULL, MR_OPT_FULL_NAMES},
                                         {"help", no_argument, NULL, 'h'},
                                         {NULL, 0, NULL, 0}};
    memset(a, 0, sizeof *a);
    a->opt = (mr_opts)MR_OPTS_INIT;
    a->min_share = 1.0;
    int c;
    while ((c = getopt_long(argc, argv, "jo:fh", opts, NULL)) != -1) {
        int rc = parse_option(c, a);
        if (rc != MR_OPT_NEXT)
            return rc;
    }
    if (a->nt == 0) {
        a->when[0] = (mr_when)MR_WHEN_INIT;
        a->names[a->nt++] = "peak";
    }
    const char* out = a->opt.output;
    a->svg = ends_with(out, ".svg");
    if (!a->opt.json && strcmp(out, "-") && !a->svg && !ends_with(out, ".dot"))
        return mr_opts_usage_error(flow_help,
                                   "flow: -o %s: expected FILE.dot or FILE.svg (or --json)", out);
    return MR_OPT_NEXT;
}

// ---- stacks as lines

typedef struct stacks {
    const mr_symbols* sy;
    mr_flow* g;
    bool all_frames;
    mr_u64map first; // frame id -> index in ids of its first location's line
    uint32_t* ids;
    size_t nids, cap;
    uint32_t no_stack; // the line of rows without a stack
    bool has_root;     // several processes: each stack ends with its process's line
    uint32_t root;
    uint32_t frames[MR_SITES_MAX_DEPTH];
    uint32_t* lines; // the lines of one stack, leaf first
    size_t lines_cap;
} stacks;

// The line ids of a frame's locations (innermost first), made once per frame.
static int frame_lines(stacks* s, uint32_t frame, const uint32_t** out, size_t* n) {
    const mr_symloc* locs;
    *n = mr_symbols_frame_locs(s->sy, frame, &locs);
    uint64_t* at = mr_u64map_get(&s->first, frame);
    if (at) {
        *out = &s->ids[*at];
        return 0;
    }
    if (MT_VEC_RESERVE(&s->ids, &s->cap, s->nids + *n) || mr_u64map_put(&s->first, frame, s->nids))
        return -ENOMEM;
    for (size_t k = 0; k < *n; k++)
        if (mr_flowgraph_line_id(s->g, locs[k].function, locs[k].file, locs[k].line,
                                 &s->ids[s->nids + k]))
            return -ENOMEM;
    *out = &s->ids[s->nids];
    s->nids += *n;
    return 0;
}

// Adds a profile's live bytes at moment t, each row along the lines of its stack.
static int add_profile(stacks* s, const mr_profile* p, size_t t) {
    for (size_t i = 0; i < p->nrows; i++) {
        const mr_profile_row* r = &p->rows[i];
        if (!r->live_bytes)
            continue;
        size_t nf = mr_functions_stack(s->sy, r->callsite, s->all_frames, s->frames), n = 0;
        for (size_t j = 0; j < nf; j++) {
            const uint32_t* ids;
            size_t k;
            if (frame_lines(s, s->frames[j], &ids, &k) ||
                MT_VEC_RESERVE(&s->lines, &s->lines_cap, n + k))
                return -ENOMEM;
            memcpy(&s->lines[n], ids, k * sizeof *ids);
            n += k;
        }
        if (!s->all_frames) { // the allocation plumbing passed, as top passes it (functions.h)
            size_t kept = 0;
            for (size_t k = 0; k < n; k++)
                if (!mr_sites_is_plumbing(s->g->lines[s->lines[k]].function))
                    s->lines[kept++] = s->lines[k];
            n = kept ? kept : n; // a stack of plumbing only is shown whole
        }
        if (MT_VEC_RESERVE(&s->lines, &s->lines_cap, n + 2))
            return -ENOMEM;
        if (n == 0) // a row without a stack
            s->lines[n++] = s->no_stack;
        if (s->has_root)
            s->lines[n++] = s->root;
        if (mr_flowgraph_add_stack(s->g, t, s->lines, n, r->live_bytes))
            return -ENOMEM;
    }
    return 0;
}

// ---- the command

// Builds the profiles of every moment, from one replay, into the graph; totals[t] the
// live bytes of moment t. Returns an exit code.
static int build_graph(const flow_args* a, const char* path, mt_capture* cap, stacks* s,
                       uint64_t* totals, mr_flow_moment* moments, bool* steps) {
    mr_query qs[MAX_MOMENTS];
    mr_profile ps[MAX_MOMENTS];
    for (size_t t = 0; t < a->nt; t++) {
        int rc = mr_when_query(&a->when[t], path, cap, &qs[t], steps);
        if (rc)
            return rc;
    }
    qs[0].progress = "flow";
    char err[256] = "";
    int e = mr_profile_build_moments(cap, qs, a->nt, ps, err, sizeof err);
    if (e || err[0]) // the reason, or a note (damaged stored aggregates, read anew)
        mr_messages_error(path, "%s", err);
    if (e)
        return mr_messages_exit_code(e);
    int rc = MR_EXIT_OK;
    for (size_t t = 0; t < a->nt; t++) {
        totals[t] = ps[t].live_bytes;
        moments[t] = (mr_flow_moment){a->names[t], ps[t].moment_ts};
        if (!rc && add_profile(s, &ps[t], t)) {
            mr_messages_error(path, "out of memory");
            rc = MR_EXIT_IO;
        }
        mr_profile_free(&ps[t]);
    }
    return rc;
}

// An empty graph of nt moments and its stacks' tables. Returns an exit code.
static int graph_init(mr_flow* g, stacks* s, size_t nt, const char* path) {
    if (mr_flowgraph_init(g, nt) || mr_u64map_init(&s->first) ||
        mr_flowgraph_line_id(g, MR_FUNCTIONS_NO_STACK, NULL, 0, &s->no_stack)) {
        mr_messages_error(path, "out of memory");
        return MR_EXIT_IO;
    }
    return MR_EXIT_OK;
}

static void graph_free(mr_flow* g, stacks* s) {
    mr_flowgraph_free(g);
    mr_u64map_free(&s->first);
    free(s->ids);
    free(s->lines);
}

// Hides and merges what is small, then writes the graph. Returns an exit code.
static int graph_write(const flow_args* a, const char* path, mr_flow* g, const uint64_t* totals,
                       const mr_flow_moment* moments, bool steps) {
    if (mr_flowgraph_finish(g, totals, a->min_share / 100.0)) {
        mr_messages_error(path, "out of memory");
        return MR_EXIT_IO;
    }
    mr_flow_view v = {.capture = path,
                      .graph = g,
                      .moments = moments,
                      .steps = steps,
                      .min_share = a->min_share / 100.0,
                      .svg = a->svg};
    mr_report_to to = mr_opts_report_to(&a->opt);
    return mr_flow_report_write(&to, &v);
}

static int run(const flow_args* a, const char* path, mt_capture* cap, const mr_symbols* sy) {
    mr_flow g;
    stacks s = {.sy = sy, .g = &g, .all_frames = a->all_frames};
    uint64_t totals[MAX_MOMENTS];
    mr_flow_moment moments[MAX_MOMENTS];
    bool steps = false;
    int rc = graph_init(&g, &s, a->nt, path);
    if (!rc)
        rc = build_graph(a, path, cap, &s, totals, moments, &steps);
    if (!rc)
        rc = graph_write(a, path, &g, totals, moments, steps);
    graph_free(&g, &s);
    return rc;
}

// Several captures (procs.h): each process at its own peak, its stacks under a line naming
// it, COMMAND (pid N); the lines of every process in one graph, so a line of code two
// processes run is one node holding the bytes of both.
typedef struct procs_input {
    const flow_args* args;
    const char* first; // the first input named
} procs_input;

// Adds a process's profile to the graph under its own line, named by *label (made here;
// the graph keeps the string, so the caller frees it after the graph). Returns 0 or -ENOMEM.
static int add_process(stacks* s, const mr_process* p, const mr_profile* prof, char** label) {
    mr_u64map_free(&s->first); // frame ids are the capture's own: the table starts again
    s->nids = 0;
    s->sy = p->sym;
    s->has_root = true;
    if (mr_u64map_init(&s->first) || !(*label = mr_procs_report_label(p)) ||
        mr_flowgraph_line_id(s->g, *label, NULL, 0, &s->root))
        return -ENOMEM;
    return add_profile(s, prof, 0);
}

static int processes_report(void* ud, const mr_capture_set* set, const mr_profile* profs,
                            const mr_profile* sum, const mr_procs_moment* joint) {
    (void)joint; // each process at its own peak
    const procs_input* in = ud;
    mr_flow g;
    stacks s = {.g = &g, .all_frames = in->args->all_frames};
    int rc = graph_init(&g, &s, 1, in->first);
    char** labels = rc ? NULL : calloc(set->n, sizeof *labels);
    if (!rc && !labels) {
        mr_messages_error(in->first, "out of memory");
        rc = MR_EXIT_IO;
    }
    for (size_t i = 0; !rc && i < set->n; i++)
        if (add_process(&s, &set->procs[i], &profs[i], &labels[i])) {
            mr_messages_error(set->procs[i].path, "out of memory");
            rc = MR_EXIT_IO;
        }
    uint64_t total = sum->live_bytes;
    mr_flow_moment moment = {"each process's peak", 0};
    if (!rc)
        rc = graph_write(in->args, in->first, &g, &total, &moment, false);
    graph_free(&g, &s);
    for (size_t i = 0; labels && i < set->n; i++)
        free(labels[i]);
    free(labels);
    return rc;
}

int mr_cmd_flow(int argc, char** argv) {
    flow_args a;
    int rc = parse_args(argc, argv, &a);
    if (rc != MR_OPT_NEXT)
        return rc;
    bool several = mr_capture_set_wanted(argc - optind, argv + optind);
    const char* path = several ? argv[optind] : mr_opts_input(argc, argv, flow_help);
    if (!path)
        return MR_EXIT_USAGE;
    if (several && (a.nt > 1 || strcmp(a.names[0], "peak")))
        return mr_opts_usage_error(flow_help, "flow: several captures are shown each at its own "
                                              "peak, not --at");
    if (a.svg && !a.opt.json && !mr_flow_report_have_dot()) {
        mr_messages_error("flow", MR_FLOW_NO_DOT);
        return MR_EXIT_IO;
    }
    if (several) {
        mr_query q = MR_QUERY_INIT(0);
        q.progress = "flow";
        procs_input in = {&a, path};
        return mr_procs_report(argv + optind, argc - optind, flow_help, &q, false, processes_report,
                               &in);
    }
    mt_capture* cap;
    mr_symbols* sy;
    if ((rc = mr_load_capture_symbols(path, &cap, &sy)))
        return rc;
    rc = run(&a, path, cap, sy);
    mr_symbols_free(sy);
    mt_capture_close(cap);
    return rc;
}
