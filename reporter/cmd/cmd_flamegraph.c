// SPDX-License-Identifier: MIT
// memreport flamegraph: one self-contained HTML page (render/flamegraph_page.h) with the
// callsite tree of the blocks live at the peak, at a time, or at the end. Callsites
// narrower than a threshold are merged into their caller so the page stays small; hiding
// non-relevant frames and the thread filter happen in the page itself.
#include "cmd.h"
#include "cxx_names.h"
#include "extent.h"
#include "flame_tree.h"
#include "flamegraph_page.h"
#include "flamegraph_run.h"
#include "heap_timeline.h"
#include "leak_kinds.h"
#include "load.h"
#include "opts.h"
#include "output_file.h"
#include "procs.h"
#include "procs_report.h"
#include "profile.h"
#include "runtime_held.h"
#include "when.h"

#include "memtrace/schema.h"
#include "memtrace/units.h"

#include <errno.h>
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char flamegraph_help[] =
    "usage: memreport flamegraph CAPTURE [-o FILE] [-f] [--peak | --at TIME | --leaks]\n"
    "         [--kind LIST] [--range FROM..TO] [--split-threads] [--min-width F] [--all-frames]\n"
    "         [--inverted] [--orientation top|bottom] [--temporal] [--heap NAME]\n"
    "A flame graph of the libc heap as one self-contained HTML page (no network needed):\n"
    "the allocation stacks of the blocks live at a moment, width = bytes. The page opens as\n"
    "an icicle (root on top, or as the viewer last chose); a button flips it to a flame\n"
    "graph (root at the bottom), another turns it bottom-up (inverted), and a Functions tab\n"
    "lists self and total bytes per function, a click showing its callers and callees.\n"
    "Several captures, or a directory of them (memtrace -o DIR/), are read as the processes\n"
    "of one run: each process (command and pid) is the root frame of its own stacks, at the\n"
    "moment the processes together held the most, or each at its end (--peak or --leaks).\n"
    "  --peak              blocks live at the peak of live bytes (default)\n"
    "  --at TIME           blocks live at TIME since the start, with its unit (ns, us,\n"
    "                      ms, s), e.g. 1.5s or 20ms; step N for an imported NPU log\n"
    "  --leaks             blocks still live at the end of the run\n"
    "  --kind LIST         with --leaks: only the blocks of these leak kinds (definite,\n"
    "                      indirect, possible, reachable; docs/leaks.md)\n"
    "  --range FROM..TO    blocks live at the highest point between FROM and TO (either\n"
    "                      side may be left out: 1s.., ..500ms)\n" MR_HELP_TIMES
    "  --temporal          the page also holds the heap over time: drag a time range on it\n"
    "                      and the graph shows the blocks live at the highest point within\n"
    "                      it (memray's temporal flame graph); times snap to 1/500 of the run\n"
    "  --split-threads     add a thread filter to the page\n"
    "  --all-frames        open the page with noise frames (allocator internals, start-up\n"
    "                      code) shown; by default they are hidden, their bytes in their callers\n"
    "  --inverted          open the page bottom-up: each allocating function a root, its\n"
    "                      callers above it (heaptrack's bottom-up view)\n"
    "  --orientation top|bottom\n"
    "                      open the page with the root on top (icicle) or at the bottom\n"
    "                      (flame graph), whatever the viewer last chose\n"
    "  --heap NAME         the heap to show: libc (the default) or mmap (MEMTRACE_MMAP=1)\n"
    "  --min-width F       merge call sites smaller than F of the total into their caller\n"
    "                      (what each allocated stays its function's, under that caller)\n"
    "                      (default 0.0001; at most 20000 frames are kept in any case)\n"
    "  --full-names        C++ names as demangled (default: std::string, <...>)\n"
    "  -o, --output FILE   default: memreport-flamegraph-NAME.html in the current directory,\n"
    "                      NAME being the capture's file name without .db\n"
    "  -f, --force         overwrite FILE if it exists\n";

// Kept frames at most, whatever --min-width says: the page stays a few MB.
#define MAX_NODES 20000
// --temporal: time buckets across the run, each with the moment of its highest live bytes.
#define TEMPORAL_BUCKETS 500
// Each kept frame carries its changes across the buckets: fewer frames keep the page a few
// MB. memreport view's frames carry their allocations per bucket too: fewer again
// (bench/view/README.md has the sizes).
#define TEMPORAL_MAX_NODES 1000
#define VIEW_MAX_NODES 500
// The threads with a page of their own: those that allocated most, in tid order, each
// page of fewer frames than the heap's, while the heap has few enough events that a replay
// per thread costs seconds.
#define VIEW_THREADS 4
#define VIEW_THREAD_MAX_NODES 60
#define VIEW_THREAD_EVENTS 10000000

char* mr_flamegraph_run_default_output(const char* what, const char* capture) {
    size_t end = strlen(capture);
    while (end > 1 && capture[end - 1] == '/') // a directory given as DIR/
        end--;
    const char* base = capture + end;
    while (base > capture && base[-1] != '/')
        base--;
    size_t n = (size_t)(capture + end - base);
    if (n > 3 && !strncmp(base + n - 3, ".db", 3))
        n -= 3;
    char* out;
    if (asprintf(&out, "memreport-%s-%.*s.html", what, (int)n, base) < 0)
        return NULL;
    return out;
}

// ---- the command

typedef struct fg_args {
    const char* output; // NULL until the default is made
    bool force, split, all_frames, inverted, temporal;
    bool view; // memreport view: temporal, with the buckets' edges, a header and a timeline
    const char* orientation; // "top", "bottom" or NULL: the page's choice
    mr_flamegraph_mode mode;
    mr_when when; // --at, --range
    double min_width;
    unsigned kinds; // --kind: a mask of leak kinds (leak_kinds.h), 0: all blocks
} fg_args;

// One option of getopt_long (*modes counts --peak, --at and --leaks). Returns MR_OPT_NEXT
// to go on, else the exit code.
static int parse_option(int c, fg_args* a, int* modes) {
    int rc;
    switch (c) {
    case 'o':
        a->output = optarg;
        break;
    case 'f':
        a->force = true;
        break;
    case 'p':
        a->mode = MR_FLAMEGRAPH_PEAK;
        ++*modes;
        break;
    case 'a':
        if ((rc = mr_opts_parse_at(optarg, &a->when)))
            return rc;
        a->mode = MR_FLAMEGRAPH_AT;
        ++*modes;
        break;
    case 'r':
        if ((rc = mr_opts_parse_range(optarg, flamegraph_help, &a->when)))
            return rc;
        break;
    case 'l':
        a->mode = MR_FLAMEGRAPH_LEAKS;
        ++*modes;
        break;
    case 's':
        a->split = true;
        break;
    case 'K': {
        char bad[64];
        if (!(a->kinds = mr_leak_kinds_mask(optarg, bad, sizeof bad)))
            return mr_opts_usage_error(
                flamegraph_help,
                "--kind: not a leak kind: '%s' (definite, indirect, possible, "
                "reachable, all)",
                bad);
        break;
    }
    case 'A':
        a->all_frames = true;
        break;
    case 'T':
        a->temporal = true;
        break;
    case 'I':
        a->inverted = true;
        break;
    case 'O':
        if (strcmp(optarg, "top") && strcmp(optarg, "bottom")) {
            mr_messages_error(NULL, "--orientation: not top or bottom: '%s'", optarg);
            return MR_EXIT_USAGE;
        }
        a->orientation = optarg;
        break;
    case 'm': {
        char* end;
        a->min_width = strtod(optarg, &end);
        if (*end || end == optarg || !(a->min_width >= 0 && a->min_width < 1)) {
            mr_messages_error(NULL, "--min-width: not a fraction in [0, 1): '%s'", optarg);
            return MR_EXIT_USAGE;
        }
        break;
    }
    case 'H':
        mr_extent_want_heap(optarg);
        break;
    case MR_OPT_FULL_NAMES:
        mr_cxx_names_set_full(true);
        break;
    case 'h':
        fputs(flamegraph_help, stdout);
        return MR_EXIT_OK;
    default: // getopt said what is wrong
        mr_opts_usage_hint(flamegraph_help);
        return MR_EXIT_USAGE;
    }
    return MR_OPT_NEXT;
}

// Returns MR_OPT_NEXT to go on, else the exit code.
static int parse_args(int argc, char** argv, fg_args* a) {
    static const struct option opts[] = {{"output", required_argument, NULL, 'o'},
                                         {"force", no_argument, NULL, 'f'},
                                         {"peak", no_argument, NULL, 'p'},
                                         {"at", required_argument, NULL, 'a'},
                                         {"range", required_argument, NULL, 'r'},
                                         {"leaks", no_argument, NULL, 'l'},
                                         {"kind", required_argument, NULL, 'K'},
                                         {"split-threads", no_argument, NULL, 's'},
                                         {"min-width", required_argument, NULL, 'm'},
                                         {"all-frames", no_argument, NULL, 'A'},
                                         {"inverted", no_argument, NULL, 'I'},
                                         {"temporal", no_argument, NULL, 'T'},
                                         {"orientation", required_argument, NULL, 'O'},
                                         {"heap", required_argument, NULL, 'H'},
                                         {"full-names", no_argument, NULL, MR_OPT_FULL_NAMES},
                                         {"help", no_argument, NULL, 'h'},
                                         {NULL, 0, NULL, 0}};
    *a = (fg_args){.mode = MR_FLAMEGRAPH_PEAK, .min_width = 0.0001};
    int modes = 0;
    int c;
    while ((c = getopt_long(argc, argv, "o:fh", opts, NULL)) != -1) {
        int rc = parse_option(c, a, &modes);
        if (rc != MR_OPT_NEXT)
            return rc;
    }
    if (modes > 1)
        return mr_opts_usage_error(flamegraph_help, "--peak, --at and --leaks exclude each other");
    if (a->when.from_arg || a->when.to_arg) // a range has its own highest point
        if (a->mode != MR_FLAMEGRAPH_PEAK)
            return mr_opts_usage_error(flamegraph_help, "--range excludes --at and --leaks");
    if (a->kinds && (a->mode != MR_FLAMEGRAPH_LEAKS || a->split))
        return mr_opts_usage_error(flamegraph_help,
                                   "--kind takes --leaks, without --split-threads");
    if (a->temporal && (modes || a->split || a->when.from_arg || a->when.to_arg))
        return mr_opts_usage_error(flamegraph_help, "--temporal excludes --peak, --at, --leaks, "
                                                    "--range and --split-threads");
    return MR_OPT_NEXT;
}

// What the steps of one run share.
typedef struct fg_run {
    fg_args args;
    const char* path; // the capture
    mt_capture* cap;
    mr_symbols* sym;
    mr_extent extent;
    mr_query query; // the heap, --at and --range placed in the capture
    mr_flame_tree tree;
    int64_t moment_ts;         // of the profile the tree was built from
    mr_moments moments;        // --temporal
    mr_heap_timeline timeline; // memreport view
} fg_run;

// Opens the capture and its symbols and places --at and --range in it. Returns an exit code.
static int open_input(fg_run* run) {
    int rc = mr_load_capture_symbols(run->path, &run->cap, &run->sym);
    if (rc)
        return rc;
    run->extent = mr_extent_of(run->cap, mr_extent_default_heap(run->cap));
    bool steps;
    return mr_when_query(&run->args.when, run->path, run->cap, &run->query, &steps);
}

// --kind: each callsite's blocks live at the end cut to those of the kinds asked, from the
// capture's leak scan. Returns 0 or a negative errno, the reason in err.
static int keep_kinds(fg_run* run, mr_profile* p, char* err, size_t errlen) {
    mr_leak_kinds k;
    int e = mr_leak_kinds_load(run->cap, run->query.heap, mr_symbols_callsite_count(run->sym), &k,
                               err, errlen);
    if (e)
        return e;
    if (err[0]) // a note: damaged stored sums, counted anew
        mr_messages_error(run->path, "%s", err);
    if (!k.scanned) {
        snprintf(err, errlen, "no leak kinds: %.200s (docs/leaks.md)", k.why);
        return -EPROTO;
    }
    for (size_t i = 0; i < p->nrows; i++) {
        mr_profile_row* r = &p->rows[i];
        size_t c = (r->callsite <= k.ncallsites ? r->callsite : 0) * (size_t)MT_LEAK_COUNT_;
        uint64_t bytes = 0, blocks = 0;
        for (int kind = MT_LEAK_DEFINITE; kind < MT_LEAK_COUNT_; kind++)
            if (run->args.kinds & (1u << kind)) {
                bytes += k.bytes[c + kind];
                blocks += k.blocks[c + kind];
            }
        r->end_bytes = r->live_bytes = bytes < r->end_bytes ? bytes : r->end_bytes;
        r->end_blocks = r->live_blocks = blocks < r->end_blocks ? blocks : r->end_blocks;
    }
    mr_leak_kinds_free(&k);
    return 0;
}

// Builds the model's rows at the moment asked (per thread with --split-threads) and their
// tree, pruned. Returns an exit code.
static int live_graph(fg_run* run) {
    static const mr_moment moments[] = {MR_AT_PEAK, MR_AT_TIME, MR_AT_END};
    mr_query q = run->query;
    q.moment = moments[run->args.mode];
    q.by_thread = run->args.split;
    q.progress = "flamegraph";
    mr_profile p;
    char err[256] = "";
    int e = mr_profile_build(run->cap, &q, &p, err, sizeof err);
    if (e == 0 && err[0]) // a note: damaged stored aggregates, read anew
        mr_messages_error(run->path, "%s", err);
    if (e == 0 && (e = mr_runtime_held_apart(&p, run->sym, q.moment == MR_AT_END, NULL, NULL)))
        snprintf(err, sizeof err, "out of memory");
    if (e == 0 && run->args.kinds)
        e = keep_kinds(run, &p, err, sizeof err);
    if (e == 0) {
        run->moment_ts = p.moment_ts;
        e = mr_flame_tree_build(&run->tree, run->sym, &p, run->args.split);
        if (e == 0)
            e = mr_flame_tree_prune(&run->tree, run->args.min_width, MAX_NODES);
        snprintf(err, sizeof err, "out of memory");
    }
    mr_profile_free(&p);
    if (e)
        mr_messages_error(run->path, "%s", err);
    return e == 0 ? MR_EXIT_OK : mr_messages_exit_code(e);
}

// Each callsite's most live bytes and blocks at one of m's moments, in p's rows by callsite
// (rows 0..*top). One pass over the values, wherever they lie. 0 or a negative errno.
static int most_held(const mr_moments* m, mr_profile* p, uint32_t* top) {
    mr_moments_cursor c;
    mr_moment_value v;
    size_t cap = 0;
    int e = mr_moments_cursor_open(m, false, &c);
    while (e == 0 && (e = mr_moments_cursor_next(&c, &v)) == 1) {
        e = 0;
        if (v.callsite >= cap) {
            size_t want = v.callsite + (size_t)1, grown = cap ? 2 * cap : 1024;
            grown = grown > want ? grown : want;
            mr_profile_row* rows = realloc(p->rows, grown * sizeof *rows);
            if (!rows) {
                e = -ENOMEM;
                break;
            }
            memset(rows + cap, 0, (grown - cap) * sizeof *rows);
            p->rows = rows;
            cap = grown;
        }
        mr_profile_row* r = &p->rows[v.callsite];
        r->callsite = v.callsite;
        r->live_bytes = v.bytes > r->live_bytes ? v.bytes : r->live_bytes;
        r->live_blocks = v.blocks > r->live_blocks ? v.blocks : r->live_blocks;
        *top = v.callsite > *top ? v.callsite : *top;
    }
    mr_moments_cursor_close(&c);
    if (e == 0 && !p->rows && !(p->rows = calloc(1, sizeof *p->rows)))
        e = -ENOMEM;
    return e;
}

// --temporal: the live values per callsite at each time bucket's highest moment, and the
// tree of every callsite live at one of them, each weighed by the most it held (so that
// pruning keeps what is wide at some moment). Returns an exit code.
static int temporal_graph(fg_run* run) {
    char err[256] = "";
    mr_moments* m = &run->moments;
    int e = mr_moments_get(run->cap, run->query.heap, run->query.tid, run->extent.end,
                           TEMPORAL_BUCKETS, run->args.view, m, err, sizeof err);
    if (e == 0 && err[0]) // a note: damaged stored moments, read anew
        mr_messages_error(run->path, "%s", err);
    mr_profile p = {0};
    uint32_t top = 0;
    if (e == 0 && (e = most_held(m, &p, &top)))
        snprintf(err, sizeof err, "%s",
                 e == -ENOMEM ? "out of memory" : "the stored moments changed while read");
    size_t peak = 0; // the run's peak, which the page opens with
    for (size_t k = 1; e == 0 && k < m->n; k++)
        peak = m->bytes[k] > m->bytes[peak] ? k : peak;
    run->moment_ts = e == 0 && m->n ? m->ts[peak] : 0;
    if (e == 0) {
        p.nrows = (size_t)top + 1; // by callsite; rows without blocks are skipped
        e = mr_flame_tree_build(&run->tree, run->sym, &p, false);
        if (e == 0)
            e = mr_flame_tree_prune(&run->tree, run->args.min_width,
                                    run->query.tid   ? VIEW_THREAD_MAX_NODES
                                    : run->args.view ? VIEW_MAX_NODES
                                                     : TEMPORAL_MAX_NODES);
        if (e)
            snprintf(err, sizeof err, "out of memory");
    }
    free(p.rows);
    if (e)
        mr_messages_error(run->path, "%s", err);
    return e == 0 ? MR_EXIT_OK : mr_messages_exit_code(e);
}

// Writes the page to `output` whole, or leaves nothing. Returns an exit code.
static int write_output(const fg_run* run) {
    const fg_args* a = &run->args;
    mr_flamegraph_view view = {.mode = a->mode,
                               .t = a->mode == MR_FLAMEGRAPH_LEAKS ? 0 : run->moment_ts,
                               .steps = run->extent.steps,
                               .all_frames = a->all_frames,
                               .inverted = a->inverted,
                               .orientation = a->orientation,
                               .temporal = a->temporal ? &run->moments : NULL,
                               .timeline = a->view ? &run->timeline : NULL};
    mr_output_file out;
    int rc = mr_output_file_open(&out, a->output, a->force);
    if (rc)
        return rc;
    int e = mr_flamegraph_page_write(out.fp, &run->tree, run->cap, &view);
    if (e) {
        mr_messages_error(e == -ENOMEM ? run->path : a->output, "%s",
                          e == -ENOMEM ? "out of memory" : "cannot write the page");
        mr_output_file_abort(&out);
        return MR_EXIT_IO;
    }
    return mr_output_file_commit(&out);
}

// Several captures (procs.h): the processes at their joint peak, or their leaks.
static int several_processes(const fg_args* a, char* const* paths, int n) {
    if (a->mode == MR_FLAMEGRAPH_AT || a->when.from_arg || a->when.to_arg || a->when.range_named ||
        a->split || a->temporal || a->kinds)
        return mr_opts_usage_error(flamegraph_help, "several captures take --peak or --leaks, not "
                                                    "--at, --range, --split-threads, --temporal or "
                                                    "--kind");
    mr_procs_flame_args p = {.output = a->output,
                             .force = a->force,
                             .all_frames = a->all_frames,
                             .inverted = a->inverted,
                             .orientation = a->orientation,
                             .mode = a->mode,
                             .min_width = a->min_width};
    return mr_procs_flamegraph(&p, paths, n, flamegraph_help);
}

// A page's tree and moments, of run->query's heap and thread, added to the pages (tid 0: the
// heap's page, named `name`; else that thread's page of it). Returns an exit code.
static int view_page(fg_run* run, const char* name, mr_heap_pages* pages) {
    int rc = temporal_graph(run);
    if (rc == 0) {
        mr_flamegraph_view view = {.t = run->moment_ts,
                                   .all_frames = run->args.all_frames,
                                   .temporal = &run->moments,
                                   .timeline = &run->timeline};
        int e = run->query.tid
                    ? mr_flamegraph_page_heaps_add_thread(pages, run->query.tid, &run->tree,
                                                          run->cap, &view)
                    : mr_flamegraph_page_heaps_add(pages, name, &run->tree, run->cap, &view);
        if (e) {
            mr_messages_error(run->path, "out of memory");
            rc = MR_EXIT_IO;
        }
    }
    mr_flame_tree_free(&run->tree);
    return rc;
}

// Chooses up to VIEW_THREADS threads of m that allocated, most allocations first (ties: the
// lower tid), into tids, then puts them in tid order. Returns how many; none when the heap
// has one thread.
static size_t busiest_threads(const mr_moments* m, uint32_t tids[VIEW_THREADS]) {
    size_t n = 0;
    while (m->threads > 1 && n < VIEW_THREADS) {
        size_t best = SIZE_MAX;
        for (size_t i = 0; i < m->threads; i++) {
            bool taken = false;
            for (size_t k = 0; k < n; k++)
                taken |= tids[k] == m->tids[i];
            if (!taken && m->tid_allocs[i] &&
                (best == SIZE_MAX || m->tid_allocs[i] > m->tid_allocs[best]))
                best = i;
        }
        if (best == SIZE_MAX)
            break;
        tids[n++] = m->tids[best];
    }
    for (size_t k = 1; k < n; k++)
        for (size_t j = k; j > 0 && tids[j - 1] > tids[j]; j--) {
            uint32_t x = tids[j];
            tids[j] = tids[j - 1];
            tids[j - 1] = x;
        }
    return n;
}

// memreport view: one heap's pages (with `threads`, its busiest threads' too), added to
// the pages. Returns an exit code.
static int view_heap(fg_run* run, const char* name, bool threads, mr_heap_pages* pages) {
    run->extent = mr_extent_of(run->cap, mr_extent_default_heap(run->cap));
    run->query = (mr_query)MR_QUERY_INIT(mr_extent_default_heap(run->cap));
    // One series point per pixel column of a wide laptop screen at most.
    mr_timeline_opts topts = {.buckets = 1200};
    char msg[1024];
    int rc = mr_heap_timeline_build(run->cap, &topts, &run->timeline, msg, sizeof msg);
    if (msg[0])
        mr_messages_error(mt_capture_path(run->cap), "%s", msg);
    rc = mr_messages_exit_code(rc);
    if (rc == 0)
        rc = view_page(run, name, pages);
    uint32_t tids[VIEW_THREADS] = {0};
    size_t n = rc == 0 && threads ? busiest_threads(&run->moments, tids) : 0;
    if (n && run->moments.events > VIEW_THREAD_EVENTS) {
        char why[160];
        snprintf(why, sizeof why,
                 "no page per thread: %llu events, over the %d a page per thread is made for "
                 "(memreport top --thread TID)",
                 (unsigned long long)run->moments.events, VIEW_THREAD_EVENTS);
        n = 0;
        if (mr_flamegraph_page_heaps_note_threads(pages, why)) {
            mr_messages_error(run->path, "out of memory");
            rc = MR_EXIT_IO;
        }
    }
    for (size_t k = 0; rc == 0 && k < n; k++) {
        mr_moments_free(&run->moments);
        run->query.tid = tids[k];
        rc = view_page(run, name, pages);
    }
    run->query.tid = 0;
    mr_heap_timeline_free(&run->timeline);
    mr_moments_free(&run->moments);
    return rc;
}

// The heaps a view page offers, the one it opens with first: a process's libc heap with its
// python and pool heaps together, then each alone; the libc heap; the mmap heap
// (MEMTRACE_MMAP=1). names[k] is the heap's name for mr_extent_want_heap (NULL: the default
// one), labels[k] what the page calls it; *pool the pool heap's name (malloc'd, or NULL).
// Returns how many.
static int view_heaps(mt_capture* cap, const char* names[5], const char* labels[5], char** pool) {
    int n = 0;
    bool python = mr_extent_heap_named(cap, "python") != 0;
    *pool = mr_extent_heap_name(cap, MT_HEAP_POOL);
    names[n] = NULL;
    labels[n++] = python && *pool ? "libc, python and pool"
                  : python        ? "libc and python"
                  : *pool         ? "libc and pool"
                                  : "libc";
    if (python || *pool) {
        names[n] = labels[n] = "libc";
        n++;
    }
    if (python) {
        names[n] = labels[n] = "python";
        n++;
    }
    if (*pool) {
        names[n] = labels[n] = *pool;
        n++;
    }
    if (mr_extent_heap_named(cap, "mmap")) {
        names[n] = labels[n] = "mmap";
        n++;
    }
    return n;
}

// Writes the pages to output whole, or leaves nothing. Returns an exit code.
static int write_pages(const mr_heap_pages* pages, const char* path, const char* output,
                       bool force) {
    mr_output_file out;
    int rc = mr_output_file_open(&out, output, force);
    if (rc)
        return rc;
    int e = mr_flamegraph_page_heaps_write(out.fp, pages);
    if (e) {
        mr_messages_error(e == -ENOMEM ? path : output, "%s",
                          e == -ENOMEM ? "out of memory" : "cannot write the page");
        mr_output_file_abort(&out);
        return MR_EXIT_IO;
    }
    return mr_output_file_commit(&out);
}

int mr_flamegraph_run_view_page(const char* path, const char* output, bool force, bool all_frames) {
    fg_run run = {.path = path,
                  .args = {.output = output,
                           .force = force,
                           .all_frames = all_frames,
                           .temporal = true,
                           .view = true,
                           .min_width = 0.0001}};
    int rc = open_input(&run);
    if (rc == 0 && run.extent.steps) { // the page's axes, marks and header are in time
        mr_messages_error(path,
                          "an imported NPU log, timed in allocation steps: memreport plot and "
                          "flamegraph show it");
        rc = MR_EXIT_BAD_INPUT;
    }
    const char *names[5], *labels[5];
    char* pool = NULL;
    int n = rc == 0 ? view_heaps(run.cap, names, labels, &pool) : 0;
    mr_heap_pages* pages = mr_flamegraph_page_heaps_new();
    if (rc == 0 && !pages) {
        mr_messages_error(path, "out of memory");
        rc = MR_EXIT_IO;
    }
    for (int k = 0; rc == 0 && k < n; k++) {
        mr_extent_want_heap(names[k]);
        rc = view_heap(&run, labels[k], k == 0, pages);
    }
    mr_extent_want_heap(NULL);
    if (rc == 0)
        rc = write_pages(pages, path, output, force);
    mr_flamegraph_page_heaps_free(pages);
    free(pool);
    mr_symbols_free(run.sym);
    mt_capture_close(run.cap);
    return rc;
}

int mr_flamegraph_run_view_procs(char* const* paths, int n, const char* output, bool force,
                                 bool all_frames, const char* help) {
    mr_capture_set s;
    int rc = mr_procs_open(&s, paths, n, help, true);
    if (rc)
        return rc;
    mr_procs_timeline pt = {0};
    mr_procs_moment joint = {0};
    mr_heap_pages* pages = mr_flamegraph_page_heaps_new();
    if (!pages) {
        mr_messages_error(s.procs[0].path, "out of memory");
        rc = MR_EXIT_IO;
    }
    mr_procs_error err;
    if (rc == 0 && (rc = mr_procs_timeline_build(&s, 1200, &pt, &err)))
        mr_messages_error(err.path, "%s", err.msg);
    rc = mr_messages_exit_code(rc);
    // A process's name in the page, "pid N PROGRAM ARGS": what tells it apart from the others.
    char** names = rc == 0 ? calloc(2 * s.n + 1, sizeof *names) : NULL;
    if (rc == 0 && (!names || mr_procs_report_legend_names(&s, names, names + s.n))) {
        mr_messages_error(s.procs[0].path, "out of memory");
        rc = MR_EXIT_IO;
    }
    if (rc == 0)
        rc = mr_procs_joint_peak(&s, &joint);
    for (size_t i = 0; rc == 0 && i < s.n; i++) {
        mr_process* p = &s.procs[i];
        fg_run run = {
            .path = p->path,
            .cap = p->cap,
            .sym = p->sym,
            .args = {
                .all_frames = all_frames, .temporal = true, .view = true, .min_width = 0.0001}};
        char *label = NULL, *command = mr_procs_report_label(p);
        const char* args = names[s.n + i];
        if (!command || asprintf(&label, "pid %lld %s%s%s", (long long)p->pid, names[i],
                                 args[0] ? " " : "", args) < 0) {
            mr_messages_error(p->path, "out of memory");
            rc = MR_EXIT_IO;
        } else if (mr_extent_of(p->cap, mr_extent_default_heap(p->cap)).steps) {
            mr_messages_error(p->path,
                              "an imported NPU log, timed in allocation steps: memreport plot "
                              "and flamegraph show it");
            rc = MR_EXIT_BAD_INPUT;
        } else if ((rc = view_heap(&run, label, false, pages)) == 0 &&
                   (mr_flamegraph_page_heaps_place(pages, i, p->pid, p->ppid, p->depth,
                                                   pt.procs[i].offset, command, args) ||
                    (i == 0 && mr_flamegraph_page_heaps_procs(pages, joint.peak, joint.ts)))) {
            mr_messages_error(p->path, "out of memory");
            rc = MR_EXIT_IO;
        }
        free(label);
        free(command);
    }
    if (rc == 0)
        rc = write_pages(pages, paths[0], output, force);
    for (size_t i = 0; names && i < 2 * s.n; i++)
        free(names[i]);
    free(names);
    mr_flamegraph_page_heaps_free(pages);
    mr_procs_timeline_moment_free(&joint);
    mr_procs_timeline_free(&pt);
    mr_capture_set_free(&s);
    return rc;
}

int mr_cmd_flamegraph(int argc, char** argv) {
    fg_run run = {0};
    int rc = parse_args(argc, argv, &run.args);
    if (rc != MR_OPT_NEXT)
        return rc;
    if (mr_capture_set_wanted(argc - optind, argv + optind))
        return several_processes(&run.args, argv + optind, argc - optind);
    run.path = mr_opts_input(argc, argv, flamegraph_help);
    if (!run.path)
        return MR_EXIT_USAGE;
    char* def = run.args.output ? NULL : mr_flamegraph_run_default_output("flamegraph", run.path);
    if (!run.args.output && !(run.args.output = def)) {
        mr_messages_error(run.path, "out of memory");
        return MR_EXIT_IO;
    }
    if ((rc = open_input(&run)) == 0 &&
        (rc = run.args.temporal ? temporal_graph(&run) : live_graph(&run)) == 0)
        rc = write_output(&run);
    mr_flame_tree_free(&run.tree);
    mr_moments_free(&run.moments);
    mr_symbols_free(run.sym);
    mt_capture_close(run.cap);
    free(def);
    return rc;
}
