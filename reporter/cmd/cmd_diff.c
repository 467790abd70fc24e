// SPDX-License-Identifier: MIT
// memreport diff: two captures of one program compared, per function and per stack, each
// run at its own peak, with totals, as text, JSON or msMemScope's memory_compare CSV; and
// a gate for CI (--fail-if). Functions match by name and source file name, stacks by their
// function names, never by address (model/diff.h does the matching); the aggregation
// model (profile.h, functions.h) gives each run's numbers; render/diff_report.h writes it.
#include "cmd.h"
#include "diff.h"
#include "diff_report.h"
#include "diff_run.h"
#include "extent.h"
#include "flame_tree.h"
#include "flamegraph_page.h"
#include "functions.h"
#include "load.h"
#include "opts.h"
#include "output_file.h"
#include "procs.h"
#include "profile.h"
#include "symbols.h"

#include "memtrace/schema.h"

#include <getopt.h>
#include <stdlib.h>
#include <string.h>

// A limit of --fail-if broken: its own exit code, so CI tells it from a failed report.
enum { EXIT_LIMIT_BROKEN = 4 };
#define MAX_LIMITS 32

static const char diff_help[] =
    "usage: memreport diff BASE NEW [--json | --csv | --html] [--top N] [--sort METRIC]\n"
    "         [--inclusive] [--all-frames] [--fail-if LIMIT]... [-o FILE] [-f]\n"
    "Compares two captures of a program (two native captures, or two imported NPU logs):\n"
    "per function and per stack, the bytes live at each run's own peak, bytes allocated,\n"
    "allocations and bytes leaked (live at the end), in BASE, in NEW and NEW - BASE, with\n"
    "the totals; largest change first. Functions match by name and source file name,\n"
    "stacks by their function names (outermost first), never by address: captures of the\n"
    "same program built or run on other machines compare cleanly.\n"
    "BASE and NEW may be directories of a process tree's captures (memtrace -o DIR/):\n"
    "processes match by program (the executable's file name), the Nth run of a program in\n"
    "BASE (in tree order: parents first, then by start) with the Nth in NEW; each process's\n"
    "totals, its functions and stacks (the process \"NAME #N\" their outermost frame) are\n"
    "compared, processes in one run only are listed as such, and the totals (peaks: each\n"
    "process at its own, added) are what --fail-if gates. --html takes two captures.\n"
    "  --json            machine-readable output: totals, functions, stacks\n"
    "  --csv             msMemScope's memory_compare columns, one row per function, then\n"
    "                    per stack, after one TOTAL row: Event (TOTAL, FUNCTION, STACK),\n"
    "                    Name (function (file), or a stack as outer;...;inner), Device ID\n"
    "                    (cpu, or npu for imported logs), Base and Compare (bytes live at\n"
    "                    the peak of BASE and of NEW), Allocated Memory(byte) (bytes\n"
    "                    allocated in NEW), Diff Memory(byte) (Compare - Base); N/A where\n"
    "                    a run does not have the function or stack\n"
    "  --html            a differential flame graph page (self-contained HTML): the new\n"
    "                    run's stacks at its peak, frames matched by function names from\n"
    "                    the root, red where they grew, blue where they shrank (deeper: a\n"
    "                    larger change), grey unchanged; frames gone from the new run show\n"
    "                    with the page's shape switched to the base run; otherwise as\n"
    "                    memreport flamegraph's page, its Functions tab with base and new\n"
    "  --top N           the N functions and N stacks that changed most (0: all; default\n"
    "                    20 in text, all in JSON and CSV)\n"
    "  --sort METRIC     order by the change of one metric (peak_bytes, allocated_bytes,\n"
    "                    allocations, leaked_bytes) instead of the largest change in bytes\n"
    "  --inclusive       weigh a function by everything allocated under it (total), not\n"
    "                    by what it allocated itself (self, default)\n"
    "  --all-frames      keep noise frames (allocator internals, start-up code)\n"
    "  --fail-if LIMIT   exit 4 when the totals break LIMIT, METRIC>VALUE (repeatable):\n"
    "                      METRIC>N[UNIT]   NEW's total is above N        leaked_bytes>0\n"
    "                      METRIC>+N[UNIT]  NEW - BASE is above N         allocations>+1000\n"
    "                      METRIC>+N%       NEW - BASE is above N% of BASE  peak_bytes>+5%\n"
    "                    METRIC: peak_bytes, allocated_bytes, allocations, leaked_bytes,\n"
    "                    the leak kinds' (definitely_lost_bytes...: docs/leaks.md) and\n"
    "                    runtime_held_bytes (the C runtime's own blocks at the end); N:\n"
    "                    digits with an optional fraction; UNIT (byte metrics only): B, KiB,\n"
    "                    MiB, GiB, TiB (1024-based), KB, MB, GB, TB (1000-based); a BASE of\n"
    "                    0 breaks +N% as soon as NEW is above 0. Each broken limit is one\n"
    "                    line on stderr: memreport: diff: peak_bytes grew 7.2% (+1.1 MiB),\n"
    "                    limit +5%. The report is written either way.\n"
    "  --full-names      C++ names as demangled (default: std::string, <...>)\n"
    "  -o, --output FILE write to FILE instead of stdout\n"
    "  -f, --force       overwrite FILE if it exists\n"
    "exit codes: 0 ok, 1 usage, 2 bad input, 3 I/O error, 4 a --fail-if limit broken\n";

typedef enum diff_format { FORMAT_TEXT, FORMAT_JSON, FORMAT_CSV, FORMAT_HTML } diff_format;

typedef struct diff_args {
    mr_opts opt;
    diff_format format;
    size_t top; // SIZE_MAX: all
    bool top_given;
    int sort_by; // -1: the largest change in bytes
    bool inclusive, all_frames;
    mr_diff_limit limits[MAX_LIMITS];
    size_t nlimits;
} diff_args;

// ---- options

static int parse_sort(const char* value, diff_args* a) {
    for (int m = 0; m < MR_DIFF_NMETRICS; m++)
        if (!strcmp(value, mr_diff_metric_name((mr_diff_metric)m))) {
            a->sort_by = m;
            return MR_OPT_NEXT;
        }
    return mr_opts_usage_error(diff_help,
                               "diff: --sort: expected peak_bytes, allocated_bytes, allocations or "
                               "leaked_bytes, got '%s'",
                               value);
}

static int parse_limit(const char* value, diff_args* a) {
    if (a->nlimits == MAX_LIMITS)
        return mr_opts_usage_error(diff_help, "diff: --fail-if: at most %d limits", MAX_LIMITS);
    char err[256];
    if (mr_diff_limit_parse(value, &a->limits[a->nlimits], err, sizeof err))
        return mr_opts_usage_error(diff_help, "diff: --fail-if %s", err);
    a->nlimits++;
    return MR_OPT_NEXT;
}

static int parse_option(int c, diff_args* a) {
    switch (c) {
    case 'j':
    case 'c':
    case 'H':
        if (a->format != FORMAT_TEXT)
            return mr_opts_usage_error(diff_help,
                                       "diff: --json, --csv and --html exclude each other");
        a->format = c == 'j' ? FORMAT_JSON : c == 'c' ? FORMAT_CSV : FORMAT_HTML;
        a->opt.json = c == 'j'; // the report's switch between text and JSON
        return MR_OPT_NEXT;
    case 't':
        a->top_given = true;
        return mr_opts_parse_top(optarg, diff_help, &a->top) ? MR_EXIT_USAGE : MR_OPT_NEXT;
    case 's':
        return parse_sort(optarg, a);
    case 'i':
        a->inclusive = true;
        return MR_OPT_NEXT;
    case 'a':
        a->all_frames = true;
        return MR_OPT_NEXT;
    case 'F':
        return parse_limit(optarg, a);
    default:
        return mr_opts_handle(&a->opt, c, diff_help);
    }
}

// Returns MR_OPT_NEXT with both inputs, else the exit code.
static int parse_args(int argc, char** argv, diff_args* a, const char** base, const char** next) {
    static const struct option opts[] = {{"json", no_argument, NULL, 'j'},
                                         {"csv", no_argument, NULL, 'c'},
                                         {"html", no_argument, NULL, 'H'},
                                         {"top", required_argument, NULL, 't'},
                                         {"sort", required_argument, NULL, 's'},
                                         {"inclusive", no_argument, NULL, 'i'},
                                         {"all-frames", no_argument, NULL, 'a'},
                                         {"fail-if", required_argument, NULL, 'F'},
                                         {"output", required_argument, NULL, 'o'},
                                         {"force", no_argument, NULL, 'f'},
                                         {"full-names", no_argument, NULL, MR_OPT_FULL_NAMES},
                                         {"help", no_argument, NULL, 'h'},
                                         {NULL, 0, NULL, 0}};
    *a = (diff_args){.opt = MR_OPTS_INIT, .top = SIZE_MAX, .sort_by = -1};
    int c;
    while ((c = getopt_long(argc, argv, "jt:o:fh", opts, NULL)) != -1) {
        int rc = parse_option(c, a);
        if (rc != MR_OPT_NEXT)
            return rc;
    }
    if (argc - optind != 2)
        return mr_opts_usage_error(diff_help, "diff takes two captures, BASE and NEW, got %d",
                                   argc - optind);
    if (!a->top_given && a->format == FORMAT_TEXT)
        a->top = MR_TOP_DEFAULT;
    *base = argv[optind];
    *next = argv[optind + 1];
    return MR_OPT_NEXT;
}

// ---- the gate

// Both runs' totals as one row (the C runtime's blocks apart, in each run's held_bytes).
static mr_diff_row run_totals(const mr_diff_run* base, const mr_diff_run* next) {
    mr_diff_row t = {.in = {true, true}};
    for (int i = 0; i < 2; i++) {
        const mr_profile* p = i == MR_DIFF_BASE ? &base->prof : &next->prof;
        uint64_t* v = t.v[i];
        v[MR_DIFF_PEAK_BYTES] = p->peak_bytes;
        v[MR_DIFF_ALLOC_BYTES] = p->alloc_bytes;
        v[MR_DIFF_ALLOCATIONS] = p->alloc_count;
        v[MR_DIFF_LEAKED_BYTES] = p->end_bytes;
    }
    return t;
}

// Whether a limit is on a leak kind, which needs the captures' leak scans.
static bool limits_on_kinds(const diff_args* a) {
    for (size_t i = 0; i < a->nlimits; i++)
        if (a->limits[i].metric >= MR_DIFF_DEFINITELY_LOST_BYTES &&
            a->limits[i].metric <= MR_DIFF_STILL_REACHABLE_BYTES)
            return true;
    return false;
}

// The gate's values of one run: the totals' metrics and the C runtime's blocks, then its
// leak kinds' bytes when a limit asks for them (a capture without a leak scan is then
// refused). Returns an exit code.
static int gate_values(const diff_args* a, const mr_diff_row* totals, const uint64_t* held,
                       int side, mt_capture* cap, uint64_t* v) {
    memcpy(v, totals->v[side], MR_DIFF_NMETRICS * sizeof *v);
    v[MR_DIFF_RUNTIME_HELD_BYTES] = held[side];
    if (!limits_on_kinds(a))
        return MR_EXIT_OK;
    if (!cap) {
        mr_messages_error("diff", "--fail-if on a leak kind takes two captures, not directories");
        return MR_EXIT_USAGE;
    }
    bool scanned;
    uint64_t bytes[MT_LEAK_COUNT_], blocks[MT_LEAK_COUNT_];
    int rc = mr_load_leak_totals(cap, &scanned, bytes, blocks);
    if (!rc && !scanned) {
        char* why = mt_capture_meta_text(cap, "leak_scan_why");
        mr_messages_error(mt_capture_path(cap), "--fail-if: no leak kinds: %s (docs/leaks.md)",
                          why ? why : "the capture has no leak scan");
        free(why);
        rc = MR_EXIT_BAD_INPUT;
    }
    for (int k = MT_LEAK_DEFINITE; k < MT_LEAK_COUNT_; k++)
        v[MR_DIFF_DEFINITELY_LOST_BYTES + k - MT_LEAK_DEFINITE] = bytes[k];
    return rc;
}

// Says each broken limit on stderr. *broken gets the number broken. Returns an exit code.
static int check_limits(const diff_args* a, const mr_diff_row* totals, const uint64_t* held,
                        mt_capture* base, mt_capture* next, size_t* broken) {
    uint64_t v[2][MR_DIFF_NGATE] = {{0}};
    *broken = 0;
    if (!a->nlimits)
        return MR_EXIT_OK;
    int rc = gate_values(a, totals, held, MR_DIFF_BASE, base, v[MR_DIFF_BASE]);
    if (!rc)
        rc = gate_values(a, totals, held, MR_DIFF_NEW, next, v[MR_DIFF_NEW]);
    for (size_t i = 0; !rc && i < a->nlimits; i++) {
        const mr_diff_limit* l = &a->limits[i];
        char msg[256];
        if (mr_diff_limit_broken(l, v[MR_DIFF_BASE][l->metric], v[MR_DIFF_NEW][l->metric], msg,
                                 sizeof msg)) {
            mr_messages_error("diff", "%s", msg);
            ++*broken;
        }
    }
    return rc;
}

// Matches, sorts, writes, gates. Returns an exit code.
static int compare(const diff_args* a, const mr_diff_run* base, const mr_diff_run* next) {
    mr_diff fns, stacks;
    if (mr_diff_match(base->fn_entries, base->nfns, next->fn_entries, next->nfns, &fns)) {
        mr_messages_error(next->path, "out of memory");
        return MR_EXIT_IO;
    }
    if (mr_diff_match(base->stack_entries, base->nstacks, next->stack_entries, next->nstacks,
                      &stacks)) {
        mr_diff_free(&fns);
        mr_messages_error(next->path, "out of memory");
        return MR_EXIT_IO;
    }
    mr_diff_sort(&fns, a->sort_by);
    mr_diff_sort(&stacks, a->sort_by);
    mr_diff_row totals = run_totals(base, next);
    uint64_t held[2] = {base->held_bytes, next->held_bytes};
    mr_diff_report r = {.base_capture = base->path,
                        .new_capture = next->path,
                        .npu = base->npu,
                        .totals = &totals,
                        .held = base->npu ? NULL : held,
                        .functions = &fns,
                        .stacks = &stacks,
                        .top = a->top,
                        .passed = base->fns.passed || next->fns.passed,
                        .csv = a->format == FORMAT_CSV};
    mr_report_to to = mr_opts_report_to(&a->opt);
    int rc = mr_diff_report_write(&to, &r);
    size_t broken = 0;
    if (!rc)
        rc = check_limits(a, &totals, held, base->cap, next->cap, &broken);
    if (!rc && broken)
        rc = EXIT_LIMIT_BROKEN;
    mr_diff_free(&fns);
    mr_diff_free(&stacks);
    return rc;
}

// ---- two directories: processes matched by program

// One side of a diff of directories: its processes' runs and the entries of all of them,
// keyed with the process first.
typedef struct run_set {
    mr_capture_set set;
    mr_diff_run* runs;
    char** names;       // "NAME #N" of each process
    const char** pkeys; // the key of each process's totals: its name
    mr_diff_entry *procs, *fns, *stacks;
    size_t nfns, nstacks;
    const char** keys; // every prefixed key, one after the other
    size_t nkeys;
    mr_diff_row totals; // the sums, in v[MR_DIFF_BASE]
    uint64_t held;      // the sum of the C runtime's blocks at the end
    bool passed;        // some process's functions passed the plumbing (functions.h)
} run_set;

// "NAME #N": the executable's file name (the capture's when unknown), N its runs so far.
static char* process_name(const run_set* rs, size_t i) {
    const mr_process* p = &rs->set.procs[i];
    const char* name = mr_diff_run_file_name(p->exe ? p->exe : p->name);
    size_t nth = 1;
    for (size_t k = 0; k < i; k++) {
        const mr_process* q = &rs->set.procs[k];
        nth += !strcmp(mr_diff_run_file_name(q->exe ? q->exe : q->name), name);
    }
    char* out;
    return asprintf(&out, "%s #%zu", name, nth) < 0 ? NULL : out;
}

// Appends entries e[0..n) with the process name before their keys.
static int add_prefixed(run_set* rs, const mr_diff_entry* e, size_t n, const char* pname,
                        mr_diff_entry* to, size_t* nto) {
    for (size_t i = 0; i < n; i++) {
        const char** key = &rs->keys[rs->nkeys];
        key[0] = pname;
        memcpy(key + 1, e[i].key, e[i].nkey * sizeof *key);
        rs->nkeys += e[i].nkey + 1;
        to[(*nto)++] = (mr_diff_entry){.key = key, .nkey = e[i].nkey + 1};
        memcpy(to[*nto - 1].v, e[i].v, sizeof e[i].v);
    }
    return 0;
}

// The runs of every process of an open set, their numbers not yet computed. Returns an
// exit code.
static int set_runs(run_set* rs) {
    size_t n = rs->set.n;
    rs->runs = calloc(n, sizeof *rs->runs);
    rs->names = calloc(n, sizeof *rs->names);
    rs->pkeys = calloc(n, sizeof *rs->pkeys);
    rs->procs = calloc(n, sizeof *rs->procs);
    if (!rs->runs || !rs->names || !rs->pkeys || !rs->procs)
        return MR_EXIT_IO;
    for (size_t i = 0; i < n; i++) {
        const mr_process* p = &rs->set.procs[i];
        rs->runs[i] = (mr_diff_run){.path = p->path, .cap = p->cap, .sy = p->sym};
    }
    return MR_EXIT_OK;
}

// The entries of every process of a set whose runs have their numbers. Returns an exit
// code.
static int set_entries(run_set* rs) {
    size_t n = rs->set.n, nfn = 0, nst = 0, nkeys = 0;
    for (size_t i = 0; i < n; i++) {
        mr_diff_run* r = &rs->runs[i];
        if (!(rs->names[i] = process_name(rs, i)))
            return MR_EXIT_IO;
        rs->pkeys[i] = rs->names[i];
        mr_diff_row t = run_totals(r, r);
        rs->procs[i] = (mr_diff_entry){.key = &rs->pkeys[i], .nkey = 1};
        memcpy(rs->procs[i].v, t.v[0], sizeof t.v[0]);
        for (int m = 0; m < MR_DIFF_NMETRICS; m++)
            rs->totals.v[MR_DIFF_BASE][m] += t.v[0][m];
        rs->held += r->held_bytes;
        nfn += r->nfns;
        nst += r->nstacks;
        rs->passed |= r->fns.passed;
        nkeys += 3 * r->nfns;
        for (size_t k = 0; k < r->nstacks; k++)
            nkeys += r->stack_entries[k].nkey + 1;
    }
    rs->fns = calloc(nfn + 1, sizeof *rs->fns);
    rs->stacks = calloc(nst + 1, sizeof *rs->stacks);
    rs->keys = calloc(nkeys + 1, sizeof *rs->keys);
    if (!rs->fns || !rs->stacks || !rs->keys)
        return MR_EXIT_IO;
    for (size_t i = 0; i < n; i++) {
        add_prefixed(rs, rs->runs[i].fn_entries, rs->runs[i].nfns, rs->names[i], rs->fns,
                     &rs->nfns);
        add_prefixed(rs, rs->runs[i].stack_entries, rs->runs[i].nstacks, rs->names[i], rs->stacks,
                     &rs->nstacks);
    }
    return MR_EXIT_OK;
}

static void close_set(run_set* rs) {
    for (size_t i = 0; rs->runs && i < rs->set.n; i++) {
        rs->runs[i].cap = NULL; // the set's
        rs->runs[i].sy = NULL;
        mr_diff_run_close(&rs->runs[i]);
        free(rs->names[i]);
    }
    free(rs->runs);
    free(rs->names);
    free(rs->pkeys);
    free(rs->procs);
    free(rs->fns);
    free(rs->stacks);
    free(rs->keys);
    if (rs->set.procs)
        mr_capture_set_free(&rs->set);
}

static int open_set(run_set* rs, const char* path) {
    *rs = (run_set){0};
    char* const paths[] = {(char*)path};
    int rc = mr_procs_open(&rs->set, paths, 1, diff_help, true);
    if (!rc && (rc = set_runs(rs)) == MR_EXIT_IO)
        mr_messages_error(path, "out of memory");
    return rc;
}

// The numbers of every process of both sets, two at a time, then each set's entries.
// Returns an exit code.
static int set_numbers(run_set* b, run_set* n, const diff_args* a) {
    size_t total = b->set.n + n->set.n, k = 0;
    mr_diff_run** all = calloc(total, sizeof *all);
    if (!all) {
        mr_messages_error(b->set.procs[0].path, "out of memory");
        return MR_EXIT_IO;
    }
    for (size_t i = 0; i < b->set.n; i++)
        all[k++] = &b->runs[i];
    for (size_t i = 0; i < n->set.n; i++)
        all[k++] = &n->runs[i];
    int rc = mr_diff_run_numbers(all, total, a->all_frames, a->inclusive);
    free(all);
    if (!rc && (set_entries(b) || set_entries(n))) {
        mr_messages_error(b->set.procs[0].path, "out of memory");
        rc = MR_EXIT_IO;
    }
    return rc;
}

// Matches both sides' processes, functions and stacks; writes and gates as compare().
static int compare_sets(const diff_args* a, const char* base_path, const char* new_path) {
    if (a->format == FORMAT_HTML)
        return mr_opts_usage_error(diff_help, "diff: --html takes two captures, not directories");
    run_set b, n = {0};
    int rc = open_set(&b, base_path);
    if (!rc)
        rc = open_set(&n, new_path);
    if (!rc)
        rc = set_numbers(&b, &n, a);
    mr_diff procs = {0}, fns = {0}, stacks = {0};
    if (!rc && (mr_diff_match(b.procs, b.set.n, n.procs, n.set.n, &procs) ||
                mr_diff_match(b.fns, b.nfns, n.fns, n.nfns, &fns) ||
                mr_diff_match(b.stacks, b.nstacks, n.stacks, n.nstacks, &stacks))) {
        mr_messages_error(new_path, "out of memory");
        rc = MR_EXIT_IO;
    }
    if (!rc) {
        mr_diff_sort(&procs, a->sort_by);
        mr_diff_sort(&fns, a->sort_by);
        mr_diff_sort(&stacks, a->sort_by);
        mr_diff_row totals = {.in = {true, true}};
        memcpy(totals.v[MR_DIFF_BASE], b.totals.v[MR_DIFF_BASE], sizeof totals.v[0]);
        memcpy(totals.v[MR_DIFF_NEW], n.totals.v[MR_DIFF_BASE], sizeof totals.v[0]);
        uint64_t held[2] = {b.held, n.held};
        mr_diff_report r = {.base_capture = base_path,
                            .new_capture = new_path,
                            .totals = &totals,
                            .held = held,
                            .functions = &fns,
                            .stacks = &stacks,
                            .processes = &procs,
                            .top = a->top,
                            .passed = b.passed || n.passed,
                            .csv = a->format == FORMAT_CSV};
        mr_report_to to = mr_opts_report_to(&a->opt);
        rc = mr_diff_report_write(&to, &r);
        size_t broken = 0;
        if (!rc)
            rc = check_limits(a, &totals, held, NULL, NULL, &broken);
        if (!rc && broken)
            rc = EXIT_LIMIT_BROKEN;
    }
    mr_diff_free(&procs);
    mr_diff_free(&fns);
    mr_diff_free(&stacks);
    close_set(&n);
    close_set(&b);
    return rc;
}

// ---- --html: a differential flame graph

// As memreport flamegraph's page: frames narrower than this share of the wider run's
// total merge into their callers, and at most this many stay.
#define PAGE_MIN_WIDTH 0.0001
#define PAGE_MAX_NODES 20000

// The new run's flame tree with the base run's grafted on by function names, pruned.
// Returns 0 or -ENOMEM.
static int diff_tree(const mr_diff_run* base, const mr_diff_run* next, mr_flame_tree* g) {
    mr_flame_tree b = {0};
    int e = mr_flame_tree_build(g, next->sy, &next->prof, false);
    if (!e)
        e = mr_flame_tree_build(&b, base->sy, &base->prof, false);
    if (!e)
        e = mr_flame_tree_add_base(g, &b);
    if (!e)
        e = mr_flame_tree_prune(g, PAGE_MIN_WIDTH, PAGE_MAX_NODES);
    mr_flame_tree_free(&b);
    return e;
}

// Writes the page whole or nothing, then gates as the report does. Returns an exit code.
static int diff_page(const diff_args* a, const mr_diff_run* base, const mr_diff_run* next) {
    mr_flame_tree g = {0};
    if (diff_tree(base, next, &g)) {
        mr_flame_tree_free(&g);
        mr_messages_error(next->path, "out of memory");
        return MR_EXIT_IO;
    }
    mr_flamegraph_view view = {
        .mode = MR_FLAMEGRAPH_DIFF, .all_frames = a->all_frames, .base = base->cap};
    mr_output_file out;
    int rc = mr_output_file_open(&out, a->opt.output, a->opt.force);
    if (!rc && mr_flamegraph_page_write(out.fp, &g, next->cap, &view)) {
        mr_messages_error(a->opt.output ? a->opt.output : "stdout", "cannot write the page");
        mr_output_file_abort(&out);
        rc = MR_EXIT_IO;
    } else if (!rc)
        rc = mr_output_file_commit(&out);
    mr_flame_tree_free(&g);
    mr_diff_row totals = run_totals(base, next);
    uint64_t held[2] = {base->held_bytes, next->held_bytes};
    size_t broken = 0;
    if (!rc)
        rc = check_limits(a, &totals, held, base->cap, next->cap, &broken);
    if (!rc && broken)
        rc = EXIT_LIMIT_BROKEN;
    return rc;
}

int mr_cmd_diff(int argc, char** argv) {
    diff_args a;
    const char *base_path = NULL, *new_path = NULL;
    int rc = parse_args(argc, argv, &a, &base_path, &new_path);
    if (rc != MR_OPT_NEXT)
        return rc;
    char* const inputs[] = {(char*)base_path, (char*)new_path};
    if (mr_capture_set_wanted(1, inputs) || mr_capture_set_wanted(1, inputs + 1))
        return compare_sets(&a, base_path, new_path);
    mr_diff_run base, next;
    rc = mr_diff_run_open(&base, &next, base_path, new_path, a.all_frames, a.inclusive);
    if (!rc && base.npu != next.npu) {
        mr_messages_error(new_path,
                          "%s, but %s is %s: diff compares two native captures or two imported NPU "
                          "logs",
                          next.npu ? "an imported NPU log" : "a native capture", base_path,
                          base.npu ? "an imported NPU log" : "a native capture");
        rc = MR_EXIT_BAD_INPUT;
    }
    if (!rc)
        rc = a.format == FORMAT_HTML ? diff_page(&a, &base, &next) : compare(&a, &base, &next);
    mr_diff_run_close(&next);
    mr_diff_run_close(&base);
    return rc;
}
