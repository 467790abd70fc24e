// SPDX-License-Identifier: MIT
// memreport leaks: the blocks still live at the end of a run, grouped by allocation stack,
// largest first; the C runtime's own blocks apart from the program's (runtime_held.h); an
// optional suppressions file (memreport's glob patterns or LeakSanitizer's leak: lines).
// The blocks come from the aggregation model (profile.h) at the end of the run.
#include "cmd.h"
#include "escape.h"
#include "extent.h"
#include "leak_kinds.h"
#include "leaks_report.h"
#include "load.h"
#include "opts.h"
#include "procs.h"
#include "profile.h"
#include "runtime_held.h"
#include "sites.h"
#include "when.h"

#include "memtrace/input.h"
#include "memtrace/schema.h"
#include "memtrace/vec.h"

#include <errno.h>
#include <fnmatch.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char leaks_help[] =
    "usage: memreport leaks CAPTURE [--json] [--top N] [--kind LIST] [--range FROM..TO]\n"
    "                       [--suppressions FILE] [-o FILE] [-f]\n"
    "       memreport leaks CAPTURE... | DIR [same options]\n"
    "Blocks of the libc heap still live at the end of the run, grouped by allocation\n"
    "stack, largest first, with the full stack of each group and a totals line. Blocks\n"
    "the C runtime allocated for itself and never frees (stdio buffers, thread DTVs and\n"
    "TLS, locale data, dlerror results...) are a group of their own, \"held by the C\n"
    "runtime\", not counted as the program's leaks.\n"
    "A capture whose leak scan ran at its end (docs/leaks.md) groups the program's blocks\n"
    "by kind as valgrind's memcheck does: definitely lost, indirectly lost, possibly\n"
    "lost, then still reachable (blocks live after the scan: unclassified).\n" MR_HELP_PROCS
    "The groups of every process are then listed together, each stack with its process\n"
    "(\"COMMAND (pid N)\") as the outermost frame; the totals add up the processes, and\n"
    "each process's own follow.\n"
    "  --json               machine-readable output\n"
    "  --top N              show the N largest groups only (totals still count all);\n"
    "                       default and 0: every group (of each kind)\n"
    "  --kind LIST          only these kinds, a comma list of definite, indirect,\n"
    "                       possible, reachable or all (memcheck's --show-leak-kinds);\n"
    "                       a capture without a leak scan is refused\n"
    "  --range FROM..TO     only the blocks allocated between FROM and TO (one "
    "capture)\n" MR_HELP_TIMES
    "  --suppressions FILE  hide the groups a line of FILE matches: a glob pattern matched\n"
    "                       against whole function names, or LeakSanitizer's leak:PATTERN,\n"
    "                       a substring of a function, source file or module name ('*'\n"
    "                       any text, '^' and '$' anchor); '#' starts a comment. A line\n"
    "                       that matches no leak is reported on stderr\n"
    "  --all-frames         also show noise frames (allocator internals, start-up code);\n"
    "                       hidden by default, their bytes count in their callers\n"
    "  --full-names         C++ names as demangled (default: std::string, <...>)\n"
    "  -o, --output FILE    write to FILE instead of stdout\n"
    "  -f, --force          overwrite FILE if it exists\n";

typedef struct suppressions {
    mr_leaks_suppression* v;
    size_t n, cap;
} suppressions;

static void suppressions_free(suppressions* p) {
    for (size_t i = 0; i < p->n; i++) {
        free(p->v[i].pattern);
        free(p->v[i].glob);
    }
    free(p->v);
}

// LeakSanitizer's template as an fnmatch pattern: a substring unless anchored by a leading
// '^' or a trailing '$'; '*' is the only wildcard, every other character is literal.
static char* lsan_glob(const char* t) {
    bool start = t[0] == '^';
    t += start;
    size_t n = strlen(t);
    bool end = n && t[n - 1] == '$';
    n -= end;
    char* g = malloc(2 * n + 3);
    if (!g)
        return NULL;
    char* o = g;
    if (!start)
        *o++ = '*';
    for (size_t i = 0; i < n; i++) {
        if (strchr("?[]\\", t[i]))
            *o++ = '\\';
        *o++ = t[i];
    }
    if (!end)
        *o++ = '*';
    *o = 0;
    return g;
}

// One non-blank line b (comments and white space gone) of FILE, line `line`. A line
// "TYPE:PATTERN" (TYPE a lower-case word, not "::" as in C++ names) is LeakSanitizer's
// format, where only leak: is about leaks. Returns 0 or an exit code.
static int add_suppression(suppressions* p, const char* path, unsigned line, const char* b) {
    char where[4096];
    snprintf(where, sizeof where, "%s:%u", path, line);
    size_t type = strspn(b, "abcdefghijklmnopqrstuvwxyz_");
    bool lsan = type && b[type] == ':' && b[type + 1] != ':';
    if (lsan && (type != 4 || strncmp(b, "leak", 4))) {
        mr_messages_error(where, "unknown suppression type '%.*s' (only leak: lines are read)",
                          (int)type, b);
        return MR_EXIT_BAD_INPUT;
    }
    const char* pattern = lsan ? b + type + 1 : b;
    if (!*pattern) {
        mr_messages_error(where, "empty suppression pattern");
        return MR_EXIT_BAD_INPUT;
    }
    if (MT_VEC_RESERVE(&p->v, &p->cap, p->n + 1)) {
        mr_messages_error(path, "out of memory");
        return MR_EXIT_IO;
    }
    mr_leaks_suppression* s = &p->v[p->n];
    *s = (mr_leaks_suppression){.pattern = strdup(pattern),
                                .glob = lsan ? lsan_glob(pattern) : strdup(pattern),
                                .lsan = lsan,
                                .line = line};
    p->n++; // freed with the others even when a copy failed
    if (!s->pattern || !s->glob) {
        mr_messages_error(path, "out of memory");
        return MR_EXIT_IO;
    }
    return MR_EXIT_OK;
}

// Reads a suppressions file: one pattern a line (see leaks_help), blank lines and '#'
// comments ignored, surrounding white space trimmed. Returns 0 or an exit code.
static int load_suppressions(const char* path, suppressions* p) {
    char err[256];
    int fd = mt_input_open(path, err, sizeof err);
    FILE* fp = fd >= 0 ? fdopen(fd, "r") : NULL;
    if (!fp) {
        if (fd >= 0)
            close(fd);
        mr_messages_error(path, "cannot open suppressions: %s",
                          fd >= 0         ? "out of memory"
                          : fd == -ENODEV ? "not a regular file"
                                          : strerror(-fd));
        return fd == -ENODEV || fd == -EISDIR ? MR_EXIT_BAD_INPUT : MR_EXIT_IO;
    }
    char* line = NULL;
    size_t cap = 0;
    int rc = MR_EXIT_OK;
    for (unsigned lineno = 1; rc == MR_EXIT_OK && getline(&line, &cap, fp) >= 0; lineno++) {
        char* hash = strchr(line, '#');
        if (hash)
            *hash = 0;
        char* b = line;
        while (*b == ' ' || *b == '\t')
            b++;
        char* e = b + strlen(b);
        while (e > b && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\n' || e[-1] == '\r'))
            *--e = 0;
        if (*b)
            rc = add_suppression(p, path, lineno, b);
    }
    if (rc == MR_EXIT_OK && ferror(fp)) {
        mr_messages_error(path, "cannot read suppressions: %s", strerror(errno));
        rc = MR_EXIT_IO;
    }
    free(line);
    fclose(fp);
    return rc;
}

static bool name_matches(const char* glob, const char* name) {
    return name && fnmatch(glob, name, 0) == 0;
}

// Whether a suppression matches a frame of the stack (every frame, noise included, and
// every inlined function of a frame).
static bool stack_matches(const mr_symbols* s, uint32_t callsite, const mr_leaks_suppression* p) {
    uint32_t frames[MR_SITES_MAX_DEPTH];
    size_t n = mr_symbols_stack(s, callsite, true, frames, MR_SITES_MAX_DEPTH);
    for (size_t i = 0; i < n && i < MR_SITES_MAX_DEPTH; i++) {
        if (p->lsan && name_matches(p->glob, mr_symbols_frame_module(s, frames[i])))
            return true;
        const mr_symloc* locs;
        size_t nl = mr_symbols_frame_locs(s, frames[i], &locs);
        for (size_t l = 0; l < nl; l++)
            if (name_matches(p->glob, locs[l].function) ||
                (p->lsan && name_matches(p->glob, locs[l].file)))
                return true;
    }
    return false;
}

// Counts a group in every suppression that matches it; true when one does.
static bool suppressed(const mr_symbols* s, const mr_leaks_group* g, suppressions* p) {
    bool any = false;
    for (size_t k = 0; k < p->n; k++) {
        if (stack_matches(s, g->callsite, &p->v[k])) {
            p->v[k].bytes += g->bytes;
            p->v[k].blocks += g->blocks;
            p->v[k].stacks++;
            any = true;
        }
    }
    return any;
}

static int by_bytes_desc(const void* a, const void* b) {
    const mr_leaks_group *x = a, *y = b;
    if (x->bytes != y->bytes)
        return x->bytes < y->bytes ? 1 : -1;
    if (x->blocks != y->blocks)
        return x->blocks < y->blocks ? 1 : -1;
    return x->callsite < y->callsite ? -1 : x->callsite > y->callsite;
}

// Groups the blocks live at the end by symbolized stack (ids outside the table count as
// "no stack") and, when the capture's leak scan ran (k->scanned), by kind: a callsite's
// blocks without a verdict are unclassified.
static mr_leaks_group* group_live(const mr_profile* p, const mr_symbols* s, const mr_leak_kinds* k,
                                  size_t* ngroups) {
    uint32_t ncallsites = mr_symbols_callsite_count(s);
    const size_t K = MT_LEAK_COUNT_;
    mr_leaks_group* g = calloc(((size_t)ncallsites + 1) * K, sizeof *g);
    uint32_t* canon = mr_sites_canonical(s);
    if (!g || !canon) {
        free(g);
        free(canon);
        return NULL;
    }
    for (size_t i = 0; i < p->nrows; i++) {
        const mr_profile_row* r = &p->rows[i];
        uint32_t c = r->callsite < ncallsites ? canon[r->callsite] : 0;
        uint64_t bytes = r->end_bytes, blocks = r->end_blocks;
        for (size_t kind = MT_LEAK_DEFINITE; k->scanned && kind < K; kind++) {
            size_t at = (size_t)(r->callsite <= k->ncallsites ? r->callsite : 0) * K + kind;
            uint64_t kb = k->bytes[at] < bytes ? k->bytes[at] : bytes;
            uint64_t kn = k->blocks[at] < blocks ? k->blocks[at] : blocks;
            g[c * K + kind].bytes += kb;
            g[c * K + kind].blocks += kn;
            bytes -= kb;
            blocks -= kn;
        }
        g[c * K].bytes += bytes;
        g[c * K].blocks += blocks;
    }
    size_t n = 0;
    for (size_t i = 0; i < ((size_t)ncallsites + 1) * K; i++) {
        if (!g[i].blocks)
            continue;
        g[i].callsite = (uint32_t)(i / K);
        g[i].kind = (int)(i % K);
        g[n++] = g[i];
    }
    qsort(g, n, sizeof *g, by_bytes_desc);
    free(canon);
    *ngroups = n;
    return g;
}

// Says on stderr which suppressions matched nothing (a typo, or a leak that is gone).
static void report_unused(const char* path, const suppressions* p) {
    for (size_t k = 0; k < p->n; k++) {
        if (p->v[k].stacks)
            continue;
        char where[4096];
        snprintf(where, sizeof where, "%s:%u", path, p->v[k].line);
        char* shown = mr_escape(p->v[k].pattern, strlen(p->v[k].pattern), MR_ESCAPE_TERMINAL);
        mr_messages_error(where, "suppression '%s' matched no leak",
                          shown ? shown : p->v[k].pattern);
        free(shown);
    }
}

// Whose each group is: suppressions first (each counts what it matches), then the C
// runtime's blocks.
static void classify(const mr_symbols* sites, mr_leaks_group* g, size_t n, suppressions* supp) {
    for (size_t i = 0; i < n; i++)
        g[i].owner = suppressed(sites, &g[i], supp)          ? MR_LEAKS_SUPPRESSED
                     : mr_runtime_held(sites, g[i].callsite) ? MR_LEAKS_RUNTIME
                                                             : MR_LEAKS_PROGRAM;
}

// The leak kinds of a capture's blocks, or an exit code (after saying why) when --kind
// asks for kinds (mask) and the capture has no scan.
static int load_kinds(const char* path, mt_capture* cap, const mr_symbols* s, unsigned mask,
                      const mr_query* q, mr_leak_kinds* k) {
    char err[256];
    int rc = mr_leak_kinds_load_range(cap, q->heap, mr_symbols_callsite_count(s), q->from, q->to, k,
                                      err, sizeof err);
    if (rc || err[0]) // an error, or a note: damaged stored sums, counted anew
        mr_messages_error(path, "%s", err);
    if (rc)
        return rc == -ENOMEM ? MR_EXIT_IO : MR_EXIT_BAD_INPUT;
    if (mask && !k->scanned) {
        mr_messages_error(path, "no leak kinds: %s (docs/leaks.md)", k->why);
        return MR_EXIT_BAD_INPUT;
    }
    return MR_EXIT_OK;
}

// Drops the groups whose kind --kind did not ask for (mask 0: keeps all).
static size_t keep_kinds(mr_leaks_group* g, size_t n, unsigned mask) {
    if (!mask)
        return n;
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (mask & (1u << g[i].kind))
            g[k++] = g[i];
    return k;
}

// Appends the classified groups of process p (its profile at its end) to *all. Returns an
// exit code.
static int add_process(const mr_process* p, const mr_profile* prof, suppressions* supp,
                       unsigned mask, bool* scanned, mr_leaks_group** all, size_t* n) {
    size_t k = 0;
    mr_leak_kinds kinds;
    mr_query whole = MR_QUERY_INIT(mr_extent_default_heap(p->cap));
    int rc = load_kinds(p->path, p->cap, p->sym, mask, &whole, &kinds);
    if (rc)
        return rc;
    *scanned |= kinds.scanned;
    mr_leaks_group* g = group_live(prof, p->sym, &kinds, &k);
    mr_leak_kinds_free(&kinds);
    k = g ? keep_kinds(g, k, mask) : 0;
    mr_leaks_group* grown = g ? realloc(*all, (*n + k + 1) * sizeof **all) : NULL;
    if (!grown) {
        free(g);
        mr_messages_error(p->path, "out of memory");
        return MR_EXIT_IO;
    }
    *all = grown;
    classify(p->sym, g, k, supp);
    for (size_t i = 0; i < k; i++) {
        g[i].process = p;
        (*all)[(*n)++] = g[i];
    }
    free(g);
    return MR_EXIT_OK;
}

// Several captures (procs.h): the groups of every process in one report, largest first.
typedef struct processes_input {
    const char* first; // the first input named, for the report's title
    const mr_opts* opt;
    size_t top;
    suppressions* supp;
    const char* supp_path;
    bool all_frames;
    unsigned kinds; // --kind's mask, 0: all
} processes_input;

static int processes_report(void* ud, const mr_capture_set* s, const mr_profile* profs,
                            const mr_profile* sum, const mr_procs_moment* joint) {
    (void)joint; // each process at its own peak
    (void)sum;
    const processes_input* in = ud;
    mr_leaks_group* all = NULL;
    size_t nall = 0;
    int rc = MR_EXIT_OK;
    bool scanned = false, skipped = false;
    char why[256];
    for (size_t i = 0; !rc && i < s->n; i++)
        rc = add_process(&s->procs[i], &profs[i], in->supp, in->kinds, &scanned, &all, &nall);
    for (size_t i = 0; !rc && !scanned && !skipped && i < s->n; i++)
        skipped = mr_leak_kinds_scan_skipped(s->procs[i].cap, why, sizeof why);
    if (!rc) {
        qsort(all, nall, sizeof *all, by_bytes_desc);
        mr_leaks_report r = {.cap = s->procs[0].cap,
                             .groups = all,
                             .n = nall,
                             .top = in->top,
                             .all_frames = in->all_frames,
                             .suppressions = in->supp->v,
                             .nsuppressions = in->supp->n,
                             .set = s,
                             .input = in->first,
                             .scanned = scanned,
                             .no_scan = skipped ? why : NULL};
        mr_report_to to = mr_opts_report_to(in->opt);
        rc = mr_leaks_report_write(&to, &r);
        if (rc == MR_EXIT_OK)
            report_unused(in->supp_path, in->supp);
    }
    free(all);
    return rc;
}

static int several_processes(char* const* paths, int n, processes_input* in) {
    mr_query q = MR_QUERY_INIT(0);
    q.moment = MR_AT_END;
    q.progress = "leaks";
    return mr_procs_report(paths, n, leaks_help, &q, false, processes_report, in);
}

// Groups what is live at the end and writes the report. Returns an exit code.
static int report(const char* path, mt_capture* cap, const mr_symbols* sites, const mr_opts* opt,
                  size_t top, suppressions* supp, const char* supp_path, bool all_frames,
                  unsigned mask, const mr_when* when) {
    mr_query q;
    bool steps;
    int krc = mr_when_query(when, path, cap, &q, &steps);
    if (krc)
        return krc;
    q.moment = MR_AT_END;
    q.progress = "leaks";
    q.range_blocks = when->from_arg || when->to_arg;
    q.ends_only = true;
    mr_leak_kinds kinds;
    if ((krc = load_kinds(path, cap, sites, mask, &q, &kinds)))
        return krc;
    mr_profile p;
    int e = mr_load_profile(path, cap, &q, &p);
    if (e) {
        mr_leak_kinds_free(&kinds);
        return e;
    }
    size_t n;
    mr_leaks_group* g = group_live(&p, sites, &kinds, &n);
    bool scanned = kinds.scanned;
    char why[256];
    bool skipped = !scanned && mr_leak_kinds_scan_skipped(cap, why, sizeof why);
    mr_leak_kinds_free(&kinds);
    n = g ? keep_kinds(g, n, mask) : 0;
    int rc;
    if (!g) {
        mr_messages_error(path, "out of memory");
        rc = MR_EXIT_IO;
    } else {
        classify(sites, g, n, supp);
        mr_leaks_report r = {.cap = cap,
                             .sym = sites,
                             .groups = g,
                             .n = n,
                             .top = top,
                             .all_frames = all_frames,
                             .suppressions = supp->v,
                             .nsuppressions = supp->n,
                             .scanned = scanned,
                             .no_scan = skipped ? why : NULL};
        mr_report_to to = mr_opts_report_to(opt);
        rc = mr_leaks_report_write(&to, &r);
        if (rc == MR_EXIT_OK)
            report_unused(supp_path, supp);
    }
    free(g);
    mr_profile_free(&p);
    return rc;
}

int mr_cmd_leaks(int argc, char** argv) {
    static const struct option opts[] = {{"json", no_argument, NULL, 'j'},
                                         {"top", required_argument, NULL, 't'},
                                         {"suppressions", required_argument, NULL, 's'},
                                         {"kind", required_argument, NULL, 'k'},
                                         {"range", required_argument, NULL, 'r'},
                                         {"all-frames", no_argument, NULL, 'a'},
                                         {"output", required_argument, NULL, 'o'},
                                         {"force", no_argument, NULL, 'f'},
                                         {"full-names", no_argument, NULL, MR_OPT_FULL_NAMES},
                                         {"help", no_argument, NULL, 'h'},
                                         {NULL, 0, NULL, 0}};
    mr_opts opt = MR_OPTS_INIT;
    bool all_frames = false;
    const char* supp_path = NULL;
    size_t top = SIZE_MAX;
    unsigned mask = 0;
    mr_when when = MR_WHEN_INIT;
    int c;
    while ((c = getopt_long(argc, argv, "jt:s:k:ao:fh", opts, NULL)) != -1) {
        switch (c) {
        case 'k': {
            char bad[64];
            if (!(mask = mr_leak_kinds_mask(optarg, bad, sizeof bad)))
                return mr_opts_usage_error(
                    leaks_help,
                    "leaks: --kind: not a leak kind: '%s' (definite, indirect, "
                    "possible, reachable, all)",
                    bad);
            break;
        }
        case 't':
            if (mr_opts_parse_top(optarg, leaks_help, &top))
                return MR_EXIT_USAGE;
            break;
        case 's':
            supp_path = optarg;
            break;
        case 'r':
            if (mr_opts_parse_range(optarg, leaks_help, &when))
                return MR_EXIT_USAGE;
            break;
        case 'a':
            all_frames = true;
            break;
        default: {
            int orc = mr_opts_handle(&opt, c, leaks_help);
            if (orc != MR_OPT_NEXT)
                return orc;
        }
        }
    }
    bool several = mr_capture_set_wanted(argc - optind, argv + optind);
    const char* path = several ? argv[optind] : mr_opts_input(argc, argv, leaks_help);
    if (!path)
        return MR_EXIT_USAGE;
    suppressions supp = {0};
    int rc = supp_path ? load_suppressions(supp_path, &supp) : MR_EXIT_OK;
    if (several && (when.from_arg || when.to_arg))
        return mr_opts_usage_error(leaks_help, "leaks: --range takes one capture");
    if (several) {
        processes_input in = {argv[optind], &opt, top, &supp, supp_path, all_frames, mask};
        if (!rc)
            rc = several_processes(argv + optind, argc - optind, &in);
        suppressions_free(&supp);
        return rc;
    }
    mt_capture* cap = NULL;
    mr_symbols* sites = NULL;
    if (rc || (rc = mr_load_capture_symbols(path, &cap, &sites))) {
        suppressions_free(&supp);
        return rc;
    }
    rc = report(path, cap, sites, &opt, top, &supp, supp_path, all_frames, mask, &when);
    mr_symbols_free(sites);
    suppressions_free(&supp);
    mt_capture_close(cap);
    return rc;
}
