// SPDX-License-Identifier: MIT
// memreport stats: top allocation sites by bytes live at the peak, by bytes allocated and
// by allocation count; a power-of-two histogram of sizes; temporary allocations by site;
// totals per thread. All of it from the heap's aggregates (aggregates.h): the model's
// rows at the peak and the measures observed during its replay, stored in the capture.
#include "aggregates.h"
#include "cmd.h"
#include "extent.h"
#include "load.h"
#include "opts.h"
#include "procs.h"
#include "procs_views.h"
#include "profile.h"
#include "runtime_held.h"
#include "sites.h"
#include "stats_report.h"

#include "memtrace/schema.h"
#include "memtrace/vec.h"

#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

static const char stats_help[] =
    "usage: memreport stats CAPTURE [--json] [--top N] [--all-frames] [--stacks] [-o FILE] [-f]\n"
    "Statistics of the libc heap of a capture:\n"
    "  - top allocation sites by bytes live at the peak, by bytes allocated, by count;\n"
    "  - a histogram of allocation sizes in powers of two;\n"
    "  - temporary allocations by site, as heaptrack counts them: a free (realloc's\n"
    "    implicit free included) whose block has the size and stack of the allocation\n"
    "    made just before it, in the order of events of all threads;\n"
    "  - totals per thread.\n"
    "A site is the innermost relevant function of an allocation stack that is not an\n"
    "allocation wrapper (xmalloc, g_malloc, PyObject_Malloc... called from several\n"
    "functions: see README); the stacks of one site merge into one row.\n"
    "  --stacks           one row per allocation stack instead\n"
    "  --json             machine-readable output\n"
    "  --top N            sites per table (default 20; 0: all)\n"
    "  --all-frames       also show noise frames (allocator internals, start-up code)\n"
    "  --full-names       C++ names as demangled (default: std::string, <...>)\n"
    "  -o, --output FILE  write to FILE instead of stdout\n"
    "  -f, --force        overwrite FILE if it exists\n"
    "Several captures, or a directory of them (memtrace -o DIR/), are read as the processes\n"
    "of one run: the sites of every process in the same tables, each with its process\n"
    "(COMMAND (pid N)) as the outermost frame, live bytes at each process's own peak; sizes\n"
    "and totals summed; threads per process. The peak is the most the processes held at\n"
    "one moment; the sum of each process's own peak is given apart (sum_of_peaks_bytes).\n";

typedef struct site {
    uint64_t count, bytes, temporary, at_peak;
} site;

typedef struct stats {
    const mr_symbols* sites;
    mr_site_labels* labels;
    bool by_stack;   // --stacks: a row per symbolized stack, not per label
    bool all_frames; // --all-frames: stacks with their noise frames
    uint32_t ncallsites;
    uint32_t* canon; // callsite -> representative of its symbolized stack (sites.h)
    site* site;      // indexed by callsite id, ncallsites entries
    mr_stats_thread* threads;
    size_t nthreads, capthreads;
    uint64_t hist_count[MR_STATS_NBUCKETS], hist_bytes[MR_STATS_NBUCKETS];
    uint64_t temporary, frees;
} stats;

// The site row of a callsite (ids the capture does not have count as "no stack").
static site* site_of(stats* s, uint32_t callsite) {
    return &s->site[callsite < s->ncallsites ? s->canon[callsite] : 0];
}

// Adds a heap's aggregates (its rows at the peak, temporaries, threads, sizes) to the sites
// and totals; the threads keep the aggregates' order, by tid. Returns 0 or -ENOMEM.
static int add_aggregates(stats* s, const mr_aggregates* a) {
    if (MT_VEC_RESERVE(&s->threads, &s->capthreads, s->nthreads + a->nthreads))
        return -ENOMEM;
    const mr_profile* p = &a->peak;
    for (size_t i = 0; i < p->nrows; i++) {
        const mr_profile_row* r = &p->rows[i];
        site* st = site_of(s, r->callsite);
        st->count += r->alloc_count;
        st->bytes += r->alloc_bytes;
        st->at_peak += r->live_bytes;
        st->temporary += a->temporary[i];
    }
    for (size_t i = 0; i < a->nthreads; i++) {
        const mr_agg_thread* t = &a->threads[i];
        s->threads[s->nthreads++] = (mr_stats_thread){.tid = t->tid,
                                                      .allocations = t->allocations,
                                                      .bytes = t->bytes,
                                                      .frees = t->frees,
                                                      .temporary = t->temporary,
                                                      .live_bytes = t->live_bytes,
                                                      .live_blocks = t->live_blocks};
    }
    for (unsigned b = 0; b < MR_STATS_NBUCKETS; b++) {
        s->hist_count[b] += a->hist_count[b];
        s->hist_bytes[b] += a->hist_bytes[b];
    }
    s->frees += a->frees;
    s->temporary += a->temporaries;
    return 0;
}

// ---- report

static int by_label(const void* a, const void* b) {
    const mr_stats_row *x = a, *y = b;
    int c = strcmp(x->label, y->label);
    return c ? c : x->callsite < y->callsite ? -1 : x->callsite > y->callsite;
}

// Merges the rows of one label into one, shown with the stack that allocated most bytes.
static size_t merge_by_label(mr_stats_row* rows, size_t n) {
    if (n > 1)
        qsort(rows, n, sizeof *rows, by_label);
    size_t out = 0;
    for (size_t i = 0; i < n; i++) {
        mr_stats_row* m = out ? &rows[out - 1] : NULL;
        if (!m || strcmp(m->label, rows[i].label) != 0) {
            rows[out++] = rows[i];
            continue;
        }
        if (rows[i].stack_bytes > m->stack_bytes) {
            m->callsite = rows[i].callsite;
            m->stack_bytes = rows[i].stack_bytes;
        }
        m->nstacks++;
        m->count += rows[i].count;
        m->bytes += rows[i].bytes;
        m->temporary += rows[i].temporary;
        m->at_peak += rows[i].at_peak;
    }
    return out;
}

// One row per callsite that allocated, or per site label unless --stacks.
static mr_stats_row* site_rows(const stats* s, size_t* nrows) {
    mr_stats_row* rows = malloc(((size_t)s->ncallsites + 1) * sizeof *rows);
    if (!rows)
        return NULL;
    size_t n = 0;
    for (uint32_t i = 0; i < s->ncallsites; i++) {
        const site* st = &s->site[i];
        if (!st->count)
            continue;
        rows[n++] = (mr_stats_row){.callsite = i,
                                   .nstacks = 1,
                                   .stack_bytes = st->bytes,
                                   .label = mr_sites_label(s->labels, i),
                                   .count = st->count,
                                   .bytes = st->bytes,
                                   .temporary = st->temporary,
                                   .at_peak = st->at_peak};
    }
    *nrows = s->by_stack ? n : merge_by_label(rows, n);
    return rows;
}

static int by_name(const void* a, const void* b) {
    return strcmp(*(const char* const*)a, *(const char* const*)b);
}

// The wrappers whose callers took their rows, sorted: the site frames of the stacks that
// allocated whose label is another function. NULL (with *n 0) when there is none or no
// memory (the report then names none).
static const char** passed_wrappers(const stats* s, size_t* n) {
    const char** out = NULL;
    size_t cap = 0;
    *n = 0;
    for (uint32_t i = 1; i < s->ncallsites && !s->by_stack; i++) {
        if (!s->site[i].count)
            continue;
        const char* fn = mr_sites_site_name(s->sites, i);
        if (!strcmp(fn, mr_sites_label(s->labels, i)))
            continue;
        if (mr_sites_is_plumbing(fn))
            fn = MR_SITES_PLUMBING;
        size_t k = 0;
        while (k < *n && strcmp(out[k], fn) != 0)
            k++;
        if (k < *n)
            continue;
        if (MT_VEC_RESERVE(&out, &cap, *n + 1)) {
            free(out);
            *n = 0;
            return NULL;
        }
        out[(*n)++] = fn;
    }
    if (*n > 1)
        qsort(out, *n, sizeof *out, by_name);
    return out;
}

typedef struct stats_args {
    mr_opts opt;
    size_t top;
    bool by_stack, all_frames;
} stats_args;

// Returns MR_OPT_NEXT to go on, else the exit code.
static int parse_args(int argc, char** argv, stats_args* a) {
    static const struct option opts[] = {{"json", no_argument, NULL, 'j'},
                                         {"top", required_argument, NULL, 't'},
                                         {"stacks", no_argument, NULL, 'S'},
                                         {"all-frames", no_argument, NULL, 'a'},
                                         {"output", required_argument, NULL, 'o'},
                                         {"force", no_argument, NULL, 'f'},
                                         {"full-names", no_argument, NULL, MR_OPT_FULL_NAMES},
                                         {"help", no_argument, NULL, 'h'},
                                         {NULL, 0, NULL, 0}};
    *a = (stats_args){.opt = MR_OPTS_INIT, .top = MR_TOP_DEFAULT};
    int c;
    while ((c = getopt_long(argc, argv, "jt:o:fh", opts, NULL)) != -1) {
        switch (c) {
        case 'a':
            a->all_frames = true;
            break;
        case 'S':
            a->by_stack = true;
            break;
        case 't':
            if (mr_opts_parse_top(optarg, stats_help, &a->top))
                return MR_EXIT_USAGE;
            break;
        default: {
            int orc = mr_opts_handle(&a->opt, c, stats_help);
            if (orc != MR_OPT_NEXT)
                return orc;
        }
        }
    }
    return MR_OPT_NEXT;
}

// The counters for one replay: per callsite, per thread, the site labels.
static int stats_init(stats* s, const stats_args* a, mr_symbols* sites) {
    *s = (stats){.sites = sites,
                 .ncallsites = mr_symbols_callsite_count(sites),
                 .by_stack = a->by_stack,
                 .all_frames = a->all_frames};
    s->labels = mr_sites_labels_new(sites);
    s->site = calloc((size_t)s->ncallsites + 1, sizeof *s->site);
    s->canon = mr_sites_canonical(sites);
    if (!s->site || !s->canon || !s->labels)
        return -ENOMEM;
    return 0;
}

static void stats_free(stats* s) {
    free(s->threads);
    free(s->site);
    free(s->canon);
    mr_sites_labels_free(s->labels);
}

// Reads the heap's aggregates (one replay unless stored) into `s` and writes the report.
// Returns an exit code.
static int report(const char* path, mt_capture* cap, stats* s, const stats_args* a) {
    mr_aggregates agg;
    char err[256] = "";
    int heap = mr_extent_default_heap(cap);
    int e = mr_aggregates_get(cap, heap, "stats", &agg, err, sizeof err);
    if (e || err[0]) // the reason, or a note (damaged stored aggregates, read anew)
        mr_messages_error(path, "%s", err);
    if (e)
        return mr_messages_exit_code(e);
    int rc;
    size_t n;
    mr_stats_row* rows = add_aggregates(s, &agg) ? NULL : site_rows(s, &n);
    size_t nwrappers;
    const char** wrappers = rows ? passed_wrappers(s, &nwrappers) : NULL;
    if (!rows) {
        mr_messages_error(path, "out of memory");
        rc = MR_EXIT_IO;
    } else {
        mr_stats_report r = {.cap = cap,
                             .sym = s->sites,
                             .profile = &agg.peak,
                             .steps = heap == MT_HEAP_NPU,
                             .frees = s->frees,
                             .temporary = s->temporary,
                             .hist_count = s->hist_count,
                             .hist_bytes = s->hist_bytes,
                             .rows = rows,
                             .nrows = n,
                             .top = a->top,
                             .all_frames = s->all_frames,
                             .by_label = !s->by_stack,
                             .wrappers = wrappers,
                             .nwrappers = nwrappers,
                             .threads = s->threads,
                             .nthreads = s->nthreads};
        mr_report_to to = mr_opts_report_to(&a->opt);
        rc = mr_stats_report_write(&to, &r);
        free(rows);
        free(wrappers);
    }
    mr_aggregates_free(&agg);
    return rc;
}

// ---- several captures (procs.h): each process counted on its own, its rows and threads
// under it, the sizes and totals summed.

// Every process's rows, each with its process, in *rows; its threads (with it), sizes and
// totals added to *all. Returns 0 or -ENOMEM.
static int gather(const mr_capture_set* set, stats* per, const mr_aggregates* aggs, stats* all,
                  mr_stats_row** rows, size_t* nrows) {
    for (size_t i = 0; i < set->n; i++) {
        if (add_aggregates(&per[i], &aggs[i]))
            return -ENOMEM;
        size_t n;
        mr_stats_row* part = site_rows(&per[i], &n);
        mr_stats_row* grown = part ? realloc(*rows, (*nrows + n + 1) * sizeof **rows) : NULL;
        if (!grown) {
            free(part);
            return -ENOMEM;
        }
        *rows = grown;
        for (size_t k = 0; k < n; k++) {
            part[k].process = &set->procs[i];
            (*rows)[(*nrows)++] = part[k];
        }
        free(part);
        mr_aggregates totals = aggs[i]; // without its rows, which are the process's sites'
        totals.peak.nrows = 0;
        size_t first = all->nthreads;
        if (add_aggregates(all, &totals))
            return -ENOMEM;
        for (size_t k = first; k < all->nthreads; k++)
            all->threads[k].process = &set->procs[i];
    }
    return 0;
}

// Each process's aggregates (its program's leaks at the end, as every view counts them),
// and their sum in *sum. Returns an exit code.
static int process_aggregates(const mr_capture_set* set, mr_aggregates* aggs, mr_profile* sum) {
    for (size_t i = 0; i < set->n; i++) {
        const mr_process* p = &set->procs[i];
        char err[256] = "";
        int e = mr_aggregates_get(p->cap, mr_extent_default_heap(p->cap), "stats", &aggs[i], err,
                                  sizeof err);
        if (e || err[0]) // the reason, or a note (damaged stored aggregates, read anew)
            mr_messages_error(p->path, "%s", err);
        if (e)
            return mr_messages_exit_code(e);
        if (p->sym && mr_runtime_held_apart(&aggs[i].peak, p->sym, false, NULL, NULL)) {
            mr_messages_error(p->path, "out of memory");
            return MR_EXIT_IO;
        }
        mr_procs_views_profile_add(sum, &aggs[i].peak);
    }
    return MR_EXIT_OK;
}

static int processes_report(const stats_args* a, char* const* paths, int n) {
    mr_capture_set set;
    int rc = mr_procs_open(&set, paths, n, stats_help, true);
    if (rc)
        return rc;
    stats* per = calloc(set.n, sizeof *per);
    mr_aggregates* aggs = calloc(set.n, sizeof *aggs);
    int e = per && aggs ? 0 : -ENOMEM;
    for (size_t i = 0; !e && i < set.n; i++)
        e = stats_init(&per[i], a, set.procs[i].sym);
    mr_profile sum = {0};
    if (e) {
        mr_messages_error(paths[0], "out of memory");
        rc = MR_EXIT_IO;
    } else {
        rc = process_aggregates(&set, aggs, &sum);
    }
    stats all = {0};
    mr_stats_row* rows = NULL;
    size_t nrows = 0;
    mr_procs_moment joint = {0};
    if (!rc)
        rc = mr_procs_joint_peak(&set, &joint);
    if (!rc && gather(&set, per, aggs, &all, &rows, &nrows)) {
        mr_messages_error(paths[0], "out of memory");
        rc = MR_EXIT_IO;
    }
    // The wrappers of every process, once each.
    const char** wrappers = NULL;
    size_t nwrappers = 0, cap = 0;
    for (size_t i = 0; !rc && i < set.n; i++) {
        size_t nw;
        const char** w = passed_wrappers(&per[i], &nw);
        for (size_t k = 0; k < nw && !MT_VEC_RESERVE(&wrappers, &cap, nwrappers + 1); k++)
            wrappers[nwrappers++] = w[k];
        free(w);
    }
    if (nwrappers > 1)
        qsort(wrappers, nwrappers, sizeof *wrappers, by_name);
    size_t unique = 0;
    for (size_t k = 0; k < nwrappers; k++)
        if (!unique || strcmp(wrappers[unique - 1], wrappers[k]) != 0)
            wrappers[unique++] = wrappers[k];
    if (!rc) {
        mr_stats_report r = {.cap = set.procs[0].cap,
                             .profile = &sum,
                             .frees = all.frees,
                             .temporary = all.temporary,
                             .hist_count = all.hist_count,
                             .hist_bytes = all.hist_bytes,
                             .rows = rows,
                             .nrows = nrows,
                             .top = a->top,
                             .all_frames = a->all_frames,
                             .by_label = !a->by_stack,
                             .wrappers = wrappers,
                             .nwrappers = unique,
                             .threads = all.threads,
                             .nthreads = all.nthreads,
                             .set = &set,
                             .first = paths[0],
                             .joint_peak = joint.peak,
                             .joint_ts = joint.ts};
        mr_report_to to = mr_opts_report_to(&a->opt);
        rc = mr_stats_report_write(&to, &r);
    }
    mr_procs_timeline_moment_free(&joint);
    free(rows);
    free(wrappers);
    free(all.threads);
    for (size_t i = 0; per && aggs && i < set.n; i++) {
        stats_free(&per[i]);
        mr_aggregates_free(&aggs[i]);
    }
    free(per);
    free(aggs);
    mr_capture_set_free(&set);
    return rc;
}

int mr_cmd_stats(int argc, char** argv) {
    stats_args a;
    int rc = parse_args(argc, argv, &a);
    if (rc != MR_OPT_NEXT)
        return rc;
    if (mr_capture_set_wanted(argc - optind, argv + optind))
        return processes_report(&a, argv + optind, argc - optind);
    const char* path = mr_opts_input(argc, argv, stats_help);
    if (!path)
        return MR_EXIT_USAGE;
    mt_capture* cap;
    mr_symbols* sites;
    if ((rc = mr_load_capture_symbols(path, &cap, &sites)))
        return rc;
    stats s;
    if (stats_init(&s, &a, sites)) {
        mr_messages_error(path, "out of memory");
        rc = MR_EXIT_IO;
    } else {
        rc = report(path, cap, &s, &a);
    }
    stats_free(&s);
    mr_symbols_free(sites);
    mt_capture_close(cap);
    return rc;
}
