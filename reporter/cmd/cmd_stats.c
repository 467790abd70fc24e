// SPDX-License-Identifier: MIT
// memreport stats: top allocation sites by bytes live at the peak, by bytes allocated and
// by allocation count; a power-of-two histogram of sizes; temporary allocations by site;
// totals per thread. Bytes and counts per callsite come from the aggregation model
// (profile.h); the event-level measures (temporaries, sizes) and the totals per thread
// from observing its replay: a per-(callsite, thread) profile would cost stats 60% more
// time for eight numbers per thread.
#include "commands.h"
#include "options.h"
#include "procs.h"
#include "profile.h"
#include "sites.h"
#include "stats_report.h"
#include "u64map.h"

#include "memtrace/sampling.h"
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
    "  -o, --output FILE  write to FILE instead of stdout\n"
    "  -f, --force        overwrite FILE if it exists\n"
    "Several captures, or a directory of them (memtrace -o DIR/), are read as the processes\n"
    "of one run: the sites of every process in the same tables, each with its process\n"
    "(COMMAND (pid N)) as the outermost frame, live bytes at each process's own peak; sizes\n"
    "and totals summed; threads per process.\n";

typedef struct site {
    uint64_t count, bytes, temporary, at_peak;
} site;

// An allocation as heaptrack's analyzer identifies it: size and (unsymbolized) stack.
typedef struct alloc_key {
    uint64_t size;
    uint32_t callsite;
    bool set;
} alloc_key;

typedef struct stats {
    const mr_symbols* sites;
    mr_site_labels* labels;
    bool by_stack;   // --stacks: a row per symbolized stack, not per label
    bool all_frames; // --all-frames: stacks with their noise frames
    uint32_t ncallsites;
    uint32_t* canon;     // callsite -> representative of its symbolized stack (sites.h)
    site* site;          // indexed by callsite id, ncallsites entries
    mr_u64map tid_index; // tid -> index into threads
    mr_stats_thread* threads;
    size_t nthreads, capthreads;
    uint32_t cached_tid;
    size_t cached_index;
    uint64_t hist_count[MR_STATS_NBUCKETS], hist_bytes[MR_STATS_NBUCKETS];
    uint64_t temporary, frees;
    alloc_key last_alloc;  // the allocation heaptrack compares the next free with
    alloc_key first_alloc; // the process's first allocation (see is_temporary)
    // A sampled capture's allocations are read weighed: their requested sizes' powers of two
    // for the histogram come from these (memtrace/sampling.h), for the capture sizes_of.
    const mt_capture* sizes_of;
    uint64_t sample_bytes; // 0: not sampled
    mt_sample_sizes sizes;
} stats;

static unsigned bucket_of(uint64_t size) {
    return size ? 64u - (unsigned)__builtin_clzll(size) : 0u;
}

static mr_stats_thread* thread_of(stats* s, uint32_t tid) {
    if (s->nthreads && s->cached_tid == tid)
        return &s->threads[s->cached_index];
    const uint64_t* index = mr_u64map_get(&s->tid_index, tid);
    size_t i;
    if (index) {
        i = (size_t)*index;
    } else {
        if (MT_VEC_RESERVE(&s->threads, &s->capthreads, s->nthreads + 1))
            return NULL;
        i = s->nthreads;
        if (mr_u64map_put(&s->tid_index, tid, i))
            return NULL;
        s->threads[s->nthreads++] = (mr_stats_thread){.tid = tid};
    }
    s->cached_tid = tid;
    s->cached_index = i;
    return &s->threads[i];
}

// The site row of a callsite (ids the capture does not have count as "no stack").
static site* site_of(stats* s, uint32_t callsite) {
    return &s->site[callsite < s->ncallsites ? s->canon[callsite] : 0];
}

// heaptrack 1.4's rule (src/analyze/accumulatedtracedata.cpp), reproduced exactly: a free
// is temporary when the last event before it, over all threads, is an allocation of the same
// size from the same stack (not necessarily the same block). After a free, heaptrack's
// "last allocation" is index 0, which is also the index of the first (size, stack) seen:
// a free right after a free counts when its block matches the process's first allocation.
// Frees of blocks allocated before tracing are skipped by heaptrack and here alike.
static bool is_temporary(stats* s, const mr_block* freed) {
    bool temporary = s->last_alloc.set && s->last_alloc.size == freed->size &&
                     s->last_alloc.callsite == freed->callsite;
    s->last_alloc = s->first_alloc;
    return temporary;
}

// Observes the model's replay: the measures of events, not of callsites.
static int on_event(mr_replay* r, const mt_event* ev, const mr_block* freed, void* ud) {
    stats* s = ud;
    mr_stats_thread* th = thread_of(s, ev->tid);
    if (!th)
        return -ENOMEM;
    if (freed) { // freed, or replaced by an allocation at its address
        mr_stats_thread* owner = freed->tid == ev->tid ? th : thread_of(s, freed->tid);
        if (!owner)
            return -ENOMEM;
        owner->live_bytes -= freed->size;
        owner->live_blocks--;
    }
    if (mt_kind_is_alloc(ev->kind)) {
        th->allocations++;
        th->bytes += ev->size;
        th->live_bytes += ev->size;
        th->live_blocks++;
        s->last_alloc = (alloc_key){.size = ev->size, .callsite = ev->callsite, .set = true};
        if (!s->first_alloc.set)
            s->first_alloc = s->last_alloc;
        if (r->cap != s->sizes_of) {
            s->sizes_of = r->cap;
            s->sample_bytes = (uint64_t)mt_capture_meta_int(r->cap, "sample_bytes", 0);
            mt_sample_sizes_init(&s->sizes, s->sample_bytes);
        }
        unsigned b = s->sample_bytes && mt_sample_kind(r->heap, ev->kind)
                         ? mt_sample_size_bits(&s->sizes, ev->size)
                         : bucket_of(ev->size);
        s->hist_count[b]++;
        s->hist_bytes[b] += ev->size;
    } else if (mt_kind_is_free(ev->kind)) {
        th->frees++;
        s->frees++;
        if (freed && is_temporary(s, freed)) {
            site_of(s, freed->callsite)->temporary++;
            th->temporary++;
            s->temporary++;
        }
    }
    return 0;
}

// Adds the model's rows to the sites.
static void add_profile(stats* s, const mr_profile* p) {
    for (size_t i = 0; i < p->nrows; i++) {
        const mr_profile_row* r = &p->rows[i];
        site* st = site_of(s, r->callsite);
        st->count += r->alloc_count;
        st->bytes += r->alloc_bytes;
        st->at_peak += r->live_bytes;
    }
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

static int by_tid(const void* a, const void* b) {
    const mr_stats_thread *x = a, *y = b;
    return x->tid < y->tid ? -1 : x->tid > y->tid;
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
                                   .label = mr_site_label(s->labels, i),
                                   .count = st->count,
                                   .bytes = st->bytes,
                                   .temporary = st->temporary,
                                   .at_peak = st->at_peak};
    }
    *nrows = s->by_stack ? n : merge_by_label(rows, n);
    return rows;
}

typedef struct stats_args {
    mr_opts opt;
    size_t top;
    bool by_stack, all_frames;
} stats_args;

// Returns MR_OPT_NEXT to go on, else the exit code.
static int parse_args(int argc, char** argv, stats_args* a) {
    static const struct option opts[] = {
        {"json", no_argument, NULL, 'j'},         {"top", required_argument, NULL, 't'},
        {"stacks", no_argument, NULL, 'S'},       {"all-frames", no_argument, NULL, 'a'},
        {"output", required_argument, NULL, 'o'}, {"force", no_argument, NULL, 'f'},
        {"help", no_argument, NULL, 'h'},         {NULL, 0, NULL, 0}};
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
            if (mr_parse_top(optarg, stats_help, &a->top))
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
    s->labels = mr_site_labels_new(sites);
    s->site = calloc((size_t)s->ncallsites + 1, sizeof *s->site);
    s->canon = mr_sites_canonical(sites);
    if (!s->site || !s->canon || !s->labels || mr_u64map_init(&s->tid_index))
        return -ENOMEM;
    return 0;
}

static void stats_free(stats* s) {
    mr_u64map_free(&s->tid_index); // zeroed by stats_init, so safe before its init
    free(s->threads);
    free(s->site);
    free(s->canon);
    mr_site_labels_free(s->labels);
}

// Builds the model's rows at the peak, observing its replay into `s`, and
// writes the report. Returns an exit code.
static int report(const char* path, mt_capture* cap, stats* s, const stats_args* a) {
    mr_query q = MR_QUERY_INIT(mr_capture_default_heap(cap));
    q.observe = on_event;
    q.observe_ud = s;
    q.progress = "stats";
    mr_profile p;
    int e = mr_profile_for(path, cap, &q, &p);
    if (e)
        return e;
    add_profile(s, &p);
    int rc;
    size_t n;
    mr_stats_row* rows = site_rows(s, &n);
    if (!rows) {
        mr_error(path, "out of memory");
        rc = MR_EXIT_IO;
    } else {
        // No threads (an imported NPU capture): threads is NULL, which qsort must not get.
        if (s->nthreads > 1)
            qsort(s->threads, s->nthreads, sizeof *s->threads, by_tid);
        mr_stats_report r = {.cap = cap,
                             .sym = s->sites,
                             .profile = &p,
                             .steps = q.heap == MT_HEAP_NPU,
                             .frees = s->frees,
                             .temporary = s->temporary,
                             .hist_count = s->hist_count,
                             .hist_bytes = s->hist_bytes,
                             .rows = rows,
                             .nrows = n,
                             .top = a->top,
                             .all_frames = s->all_frames,
                             .threads = s->threads,
                             .nthreads = s->nthreads};
        mr_report_to to = mr_opts_report_to(&a->opt);
        rc = mr_stats_report_write(&to, &r);
        free(rows);
    }
    mr_profile_free(&p);
    return rc;
}

// ---- several captures (procs.h): each process counted on its own, its rows and threads
// under it, the sizes and totals summed.

typedef struct procs_stats {
    const mr_capture_set* set;
    stats* per;  // per process, s->procs' order
    size_t last; // the process of the latest event
} procs_stats;

// Observes each process's replay into its own counters.
static int on_process_event(mr_replay* r, const mt_event* ev, const mr_block* freed, void* ud) {
    procs_stats* ps = ud;
    if (ps->set->procs[ps->last].cap != r->cap)
        for (size_t i = 0; i < ps->set->n; i++)
            if (ps->set->procs[i].cap == r->cap)
                ps->last = i;
    return on_event(r, ev, freed, &ps->per[ps->last]);
}

// Every process's rows and threads, each with its process, in *rows and *threads; the
// sizes and totals summed into *all. Returns 0 or -ENOMEM.
static int gather(const procs_stats* ps, const mr_profile* profs, stats* all, mr_stats_row** rows,
                  size_t* nrows) {
    for (size_t i = 0; i < ps->set->n; i++) {
        stats* s = &ps->per[i];
        add_profile(s, &profs[i]);
        size_t n;
        mr_stats_row* part = site_rows(s, &n);
        mr_stats_row* grown = part ? realloc(*rows, (*nrows + n + 1) * sizeof **rows) : NULL;
        if (!grown ||
            MT_VEC_RESERVE(&all->threads, &all->capthreads, all->nthreads + s->nthreads)) {
            free(part);
            if (grown)
                *rows = grown;
            return -ENOMEM;
        }
        *rows = grown;
        for (size_t k = 0; k < n; k++) {
            part[k].process = &ps->set->procs[i];
            (*rows)[(*nrows)++] = part[k];
        }
        free(part);
        if (s->nthreads > 1)
            qsort(s->threads, s->nthreads, sizeof *s->threads, by_tid);
        for (size_t k = 0; k < s->nthreads; k++) {
            s->threads[k].process = &ps->set->procs[i];
            all->threads[all->nthreads++] = s->threads[k];
        }
        for (unsigned b = 0; b < MR_STATS_NBUCKETS; b++) {
            all->hist_count[b] += s->hist_count[b];
            all->hist_bytes[b] += s->hist_bytes[b];
        }
        all->frees += s->frees;
        all->temporary += s->temporary;
    }
    return 0;
}

static int processes_report(const stats_args* a, char* const* paths, int n) {
    mr_capture_set set;
    int rc = mr_procs_open(&set, paths, n, stats_help, true);
    if (rc)
        return rc;
    procs_stats ps = {.set = &set, .per = calloc(set.n, sizeof *ps.per)};
    int e = ps.per ? 0 : -ENOMEM;
    for (size_t i = 0; !e && i < set.n; i++)
        e = stats_init(&ps.per[i], a, set.procs[i].sym);
    mr_profile *profs = NULL, sum;
    if (e) {
        mr_error(paths[0], "out of memory");
        rc = MR_EXIT_IO;
    } else {
        mr_query q = MR_QUERY_INIT(0);
        q.observe = on_process_event;
        q.observe_ud = &ps;
        q.progress = "stats";
        rc = mr_procs_profiles(&set, &q, &profs, &sum);
    }
    stats all = {0};
    mr_stats_row* rows = NULL;
    size_t nrows = 0;
    if (!rc && gather(&ps, profs, &all, &rows, &nrows)) {
        mr_error(paths[0], "out of memory");
        rc = MR_EXIT_IO;
    }
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
                             .threads = all.threads,
                             .nthreads = all.nthreads,
                             .set = &set,
                             .first = paths[0]};
        mr_report_to to = mr_opts_report_to(&a->opt);
        rc = mr_stats_report_write(&to, &r);
    }
    free(rows);
    free(all.threads);
    mr_procs_profiles_free(profs, profs ? set.n : 0);
    for (size_t i = 0; ps.per && i < set.n; i++)
        stats_free(&ps.per[i]);
    free(ps.per);
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
    if ((rc = mr_open_capture_symbols(path, &cap, &sites)))
        return rc;
    stats s;
    if (stats_init(&s, &a, sites)) {
        mr_error(path, "out of memory");
        rc = MR_EXIT_IO;
    } else {
        rc = report(path, cap, &s, &a);
    }
    stats_free(&s);
    mr_symbols_free(sites);
    mt_capture_close(cap);
    return rc;
}
