// SPDX-License-Identifier: MIT
// memreport stacks: every distinct allocation stack of the libc heap with the bytes and
// number of allocations made there, the bytes it held live at the peak and at the end,
// fully symbolized (inlined frames expanded), as text or JSON. Noise frames are hidden
// unless --all-frames; stacks that differ only in hidden frames are merged.
#include "cmd.h"
#include "extent.h"
#include "load.h"
#include "opts.h"
#include "procs.h"
#include "profile.h"
#include "sites.h"
#include "stacks_report.h"
#include "symbols.h"

#include "memtrace/schema.h"

#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

static const char stacks_help[] =
    "usage: memreport stacks CAPTURE [--json] [--top N] [--all-frames] [-o FILE] [-f]\n"
    "       memreport stacks CAPTURE... | DIR [same options]\n"
    "The distinct allocation stacks of a capture's libc heap, most bytes first: bytes and\n"
    "number of allocations made from each, bytes live there at the peak and at the end.\n"
    "Frames are listed leaf first (the caller of malloc first), inlined functions "
    "expanded.\n" MR_HELP_PROCS
    "The stacks of every process are then listed together, each with its process\n"
    "(\"COMMAND (pid N)\") as the outermost frame, with each process's totals and their sum\n"
    "(the peak: each process at its own peak).\n"
    "  --json         machine-readable output\n"
    "  --top N        the N stacks with most bytes (default 20; 0: all)\n"
    "  --all-frames   also show noise frames (allocator internals, start-up code)\n"
    "  --full-names   C++ names as demangled (default: std::string, <...>)\n"
    "  -o, --output   write to FILE instead of stdout\n"
    "  -f, --force    overwrite FILE if it exists\n";

// Adds the metrics of a stack merged into another.
static void add_metrics(mr_profile_row* to, const mr_profile_row* from) {
    to->alloc_bytes += from->alloc_bytes;
    to->alloc_count += from->alloc_count;
    to->live_bytes += from->live_bytes;
    to->end_bytes += from->end_bytes;
    to->end_blocks += from->end_blocks;
}

static int cmp_frames(const void* a, const void* b) {
    const mr_stacks_entry *x = a, *y = b;
    size_t n = x->n < y->n ? x->n : y->n;
    for (size_t i = 0; i < n; i++)
        if (x->frames[i] != y->frames[i])
            return x->frames[i] < y->frames[i] ? -1 : 1;
    return (x->n > y->n) - (x->n < y->n);
}

static int cmp_bytes(const void* a, const void* b) {
    const mr_stacks_entry *x = a, *y = b;
    if (x->st.alloc_bytes != y->st.alloc_bytes)
        return x->st.alloc_bytes < y->st.alloc_bytes ? 1 : -1;
    if (x->st.alloc_count != y->st.alloc_count)
        return x->st.alloc_count < y->st.alloc_count ? 1 : -1;
    return cmp_frames(a, b);
}

// Merges the stacks that show the same frames (they differ only in hidden frames) in a
// list sorted by frames. Returns the new length.
static size_t merge_same_frames(mr_stacks_entry* list, size_t k) {
    size_t m = 0;
    for (size_t i = 0; i < k; i++) {
        if (m && cmp_frames(&list[m - 1], &list[i]) == 0) {
            add_metrics(&list[m - 1].st, &list[i].st);
            free(list[i].frames);
        } else {
            list[m++] = list[i];
        }
    }
    return m;
}

static void free_list(mr_stacks_entry* list, size_t n) {
    for (size_t i = 0; i < n; i++)
        free(list[i].frames);
    free(list);
}

// Groups the callsites with allocations by the frames they show (ids the capture does
// not have as "no stack"). Returns the number of distinct stacks in *out (sorted by
// bytes), or -1 when out of memory.
static ptrdiff_t group(const mr_symbols* sy, const mr_profile* p, bool all_frames,
                       mr_stacks_entry** out) {
    uint32_t ncs = mr_symbols_callsite_count(sy);
    mr_stacks_entry* list = calloc(p->nrows ? p->nrows : 1, sizeof *list);
    uint32_t* buf = malloc(MR_SITES_MAX_DEPTH * sizeof *buf);
    bool oom = !list || !buf;
    size_t k = 0;
    for (size_t i = 0; !oom && i < p->nrows; i++) {
        if (!p->rows[i].alloc_count)
            continue;
        uint32_t cs = p->rows[i].callsite < ncs ? p->rows[i].callsite : 0;
        size_t depth = cs ? mr_symbols_stack(sy, cs, all_frames, buf, MR_SITES_MAX_DEPTH) : 0;
        if (depth > MR_SITES_MAX_DEPTH)
            depth = MR_SITES_MAX_DEPTH;
        uint32_t* frames = malloc((depth ? depth : 1) * sizeof *buf);
        if (!(oom = !frames)) {
            memcpy(frames, buf, depth * sizeof *buf);
            list[k++] =
                (mr_stacks_entry){.frames = frames, .n = depth, .leaf = cs, .st = p->rows[i]};
        }
    }
    free(buf);
    if (oom) {
        if (list)
            free_list(list, k);
        return -1;
    }
    qsort(list, k, sizeof *list, cmp_frames);
    size_t m = merge_same_frames(list, k);
    qsort(list, m, sizeof *list, cmp_bytes);
    *out = list;
    return (ptrdiff_t)m;
}

typedef struct stacks_args {
    mr_opts opt;
    bool all_frames;
    size_t top;
} stacks_args;

// Returns MR_OPT_NEXT to go on, else the exit code.
static int parse_args(int argc, char** argv, stacks_args* a) {
    static const struct option opts[] = {{"json", no_argument, NULL, 'j'},
                                         {"all-frames", no_argument, NULL, 'a'},
                                         {"output", required_argument, NULL, 'o'},
                                         {"force", no_argument, NULL, 'f'},
                                         {"top", required_argument, NULL, 't'},
                                         {"full-names", no_argument, NULL, MR_OPT_FULL_NAMES},
                                         {"help", no_argument, NULL, 'h'},
                                         {NULL, 0, NULL, 0}};
    *a = (stacks_args){.opt = MR_OPTS_INIT, .top = MR_TOP_DEFAULT};
    int c;
    while ((c = getopt_long(argc, argv, "jat:o:fh", opts, NULL)) != -1) {
        switch (c) {
        case 'a':
            a->all_frames = true;
            break;
        case 't':
            if (mr_opts_parse_top(optarg, stacks_help, &a->top))
                return MR_EXIT_USAGE;
            break;
        default: {
            int orc = mr_opts_handle(&a->opt, c, stacks_help);
            if (orc != MR_OPT_NEXT)
                return orc;
        }
        }
    }
    return MR_OPT_NEXT;
}

// Groups the profile's callsites into shown stacks and writes the report. Returns an exit
// code.
static int write_stacks(const stacks_args* a, const char* path, const mr_symbols* sy,
                        const mr_profile* p) {
    mr_stacks_entry* list = NULL;
    ptrdiff_t n = group(sy, p, a->all_frames, &list);
    if (n < 0) {
        mr_messages_error(path, "out of memory");
        return MR_EXIT_IO;
    }
    mr_stacks_report r = {.capture = path,
                          .sym = sy,
                          .profile = p,
                          .stacks = list,
                          .n = (size_t)n,
                          .top = a->top,
                          .all_frames = a->all_frames};
    mr_report_to to = mr_opts_report_to(&a->opt);
    int rc = mr_stacks_report_write(&to, &r);
    free_list(list, (size_t)n);
    return rc;
}

// The model's rows at the peak: allocations of the whole run, live at the peak and at the
// end. Returns an exit code.
static int report(const stacks_args* a, const char* path, mt_capture* cap, const mr_symbols* sy) {
    mr_query q = MR_QUERY_INIT(mr_extent_default_heap(cap));
    q.progress = "stacks";
    mr_profile p;
    int e = mr_load_program_profile(path, cap, sy, &q, &p);
    if (e)
        return e;
    int rc = write_stacks(a, path, sy, &p);
    mr_profile_free(&p);
    return rc;
}

// Appends the stacks of process p (its profile prof) to *all. Returns an exit code.
static int add_process(const stacks_args* a, const mr_process* p, const mr_profile* prof,
                       mr_stacks_entry** all, size_t* n) {
    mr_stacks_entry* list = NULL;
    ptrdiff_t k = group(p->sym, prof, a->all_frames, &list);
    mr_stacks_entry* grown = k < 0 ? NULL : realloc(*all, (*n + (size_t)k + 1) * sizeof **all);
    if (!grown) {
        if (k >= 0)
            free_list(list, (size_t)k);
        mr_messages_error(p->path, "out of memory");
        return MR_EXIT_IO;
    }
    *all = grown;
    for (ptrdiff_t j = 0; j < k; j++) {
        list[j].process = p;
        (*all)[(*n)++] = list[j];
    }
    free(list);
    return MR_EXIT_OK;
}

// Several captures (procs.h): the stacks of every process in one list, most bytes first.
typedef struct processes_input {
    const stacks_args* args;
    const char* first; // the first input named, for the report's title
} processes_input;

static int processes_report(void* ud, const mr_capture_set* s, const mr_profile* profs,
                            const mr_profile* sum, const mr_procs_moment* joint) {
    (void)joint; // each process at its own peak
    const processes_input* in = ud;
    const stacks_args* a = in->args;
    mr_stacks_entry* all = NULL;
    size_t nall = 0;
    int rc = MR_EXIT_OK;
    for (size_t i = 0; !rc && i < s->n; i++)
        rc = add_process(a, &s->procs[i], &profs[i], &all, &nall);
    if (!rc) {
        qsort(all, nall, sizeof *all, cmp_bytes);
        mr_stacks_report r = {.capture = in->first,
                              .profile = sum,
                              .stacks = all,
                              .n = nall,
                              .top = a->top,
                              .all_frames = a->all_frames,
                              .set = s,
                              .profiles = profs};
        mr_report_to to = mr_opts_report_to(&a->opt);
        rc = mr_stacks_report_write(&to, &r);
    }
    if (all)
        free_list(all, nall);
    return rc;
}

int mr_cmd_stacks(int argc, char** argv) {
    stacks_args a;
    int rc = parse_args(argc, argv, &a);
    if (rc != MR_OPT_NEXT)
        return rc;
    if (mr_capture_set_wanted(argc - optind, argv + optind)) {
        mr_query q = MR_QUERY_INIT(0);
        q.progress = "stacks";
        processes_input in = {&a, argv[optind]};
        return mr_procs_report(argv + optind, argc - optind, stacks_help, &q, false,
                               processes_report, &in);
    }
    const char* path = mr_opts_input(argc, argv, stacks_help);
    if (!path)
        return MR_EXIT_USAGE;
    mt_capture* cap;
    mr_symbols* sy;
    if ((rc = mr_load_capture_symbols(path, &cap, &sy)))
        return rc;
    rc = report(&a, path, cap, sy);
    mr_symbols_free(sy);
    mt_capture_close(cap);
    return rc;
}
