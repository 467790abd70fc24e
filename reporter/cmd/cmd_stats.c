// SPDX-License-Identifier: MIT
// memreport stats: top allocation sites by bytes live at the peak, by bytes allocated and
// by allocation count; a power-of-two histogram of sizes; temporary allocations by site;
// totals per thread. Bytes and counts per callsite come from the aggregation model
// (profile.h); the event-level measures (temporaries, sizes) and the totals per thread
// from observing its replay: a per-(callsite, thread) profile would cost stats 60% more
// time for eight numbers per thread.
#include "commands.h"
#include "escape.h"
#include "options.h"
#include "output.h"
#include "profile.h"
#include "sites.h"
#include "stack_json.h"
#include "u64map.h"

#include "memtrace/schema.h"
#include "memtrace/units.h"
#include "memtrace/vec.h"

#include <errno.h>
#include <getopt.h>
#include <jansson.h>
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
    "  -f, --force        overwrite FILE if it exists\n";

// Power-of-two size classes: bucket 0 holds size 0, bucket k >= 1 holds [2^(k-1), 2^k).
#define NBUCKETS 65

typedef struct site {
    uint64_t count, bytes, temporary, at_peak;
} site;

typedef struct thread_stat {
    uint32_t tid;
    uint64_t allocations, bytes, frees, temporary, live_bytes, live_blocks;
} thread_stat;

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
    thread_stat* threads;
    size_t nthreads, capthreads;
    uint32_t cached_tid;
    size_t cached_index;
    uint64_t hist_count[NBUCKETS], hist_bytes[NBUCKETS];
    uint64_t temporary, frees;
    alloc_key last_alloc;  // the allocation heaptrack compares the next free with
    alloc_key first_alloc; // the process's first allocation (see is_temporary)
} stats;

static unsigned bucket_of(uint64_t size) {
    return size ? 64u - (unsigned)__builtin_clzll(size) : 0u;
}

static thread_stat* thread_of(stats* s, uint32_t tid) {
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
        s->threads[s->nthreads++] = (thread_stat){.tid = tid};
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
    (void)r;
    stats* s = ud;
    thread_stat* th = thread_of(s, ev->tid);
    if (!th)
        return -ENOMEM;
    if (freed) { // freed, or replaced by an allocation at its address
        thread_stat* owner = freed->tid == ev->tid ? th : thread_of(s, freed->tid);
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
        unsigned b = bucket_of(ev->size);
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

typedef struct row {
    uint32_t callsite; // the stack shown: the row's own, or its largest one's when merged
    uint32_t nstacks;
    uint64_t stack_bytes; // bytes allocated by that stack
    const char* label;
    uint64_t count, bytes, temporary, at_peak;
} row;

#define DESC_BY(field)                                                                             \
    static int by_##field(const void* a, const void* b) {                                          \
        const row *x = a, *y = b;                                                                  \
        if (x->field != y->field)                                                                  \
            return x->field < y->field ? 1 : -1;                                                   \
        return x->callsite < y->callsite ? -1 : x->callsite > y->callsite;                         \
    }
DESC_BY(count)
DESC_BY(bytes)
DESC_BY(temporary)
DESC_BY(at_peak)

static int by_label(const void* a, const void* b) {
    const row *x = a, *y = b;
    int c = strcmp(x->label, y->label);
    return c ? c : x->callsite < y->callsite ? -1 : x->callsite > y->callsite;
}

// Merges the rows of one label into one, shown with the stack that allocated most bytes.
static size_t merge_by_label(row* rows, size_t n) {
    if (n > 1)
        qsort(rows, n, sizeof *rows, by_label);
    size_t out = 0;
    for (size_t i = 0; i < n; i++) {
        row* m = out ? &rows[out - 1] : NULL;
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

static json_t* site_json(const mr_symbols* sites, const row* r, bool all_frames) {
    json_t* o = json_object();
    json_object_set_new(o, "site", mr_json_bytes(r->label));
    json_object_set_new(o, "stacks", json_integer(r->nstacks));
    json_object_set_new(o, "peak_bytes", json_integer((json_int_t)r->at_peak));
    json_object_set_new(o, "bytes_allocated", json_integer((json_int_t)r->bytes));
    json_object_set_new(o, "allocations", json_integer((json_int_t)r->count));
    json_object_set_new(o, "temporary", json_integer((json_int_t)r->temporary));
    json_object_set_new(o, "stack", mr_sites_stack_json(sites, r->callsite, all_frames));
    return o;
}

static json_t* top_sites(const mr_symbols* sites, row* rows, size_t n, size_t top,
                         int (*cmp)(const void*, const void*), size_t field, bool all_frames) {
    if (n > 1)
        qsort(rows, n, sizeof *rows, cmp);
    json_t* a = json_array();
    for (size_t i = 0; i < n && json_array_size(a) < top; i++) {
        uint64_t v;
        memcpy(&v, (const char*)&rows[i] + field, sizeof v);
        if (v)
            json_array_append_new(a, site_json(sites, &rows[i], all_frames));
    }
    return a;
}

static int by_tid(const void* a, const void* b) {
    const thread_stat *x = a, *y = b;
    return x->tid < y->tid ? -1 : x->tid > y->tid;
}

// One row per callsite that allocated, or per site label unless --stacks.
static row* site_rows(const stats* s, size_t* nrows) {
    row* rows = malloc(((size_t)s->ncallsites + 1) * sizeof *rows);
    if (!rows)
        return NULL;
    size_t n = 0;
    for (uint32_t i = 0; i < s->ncallsites; i++) {
        const site* st = &s->site[i];
        if (!st->count)
            continue;
        rows[n++] = (row){i,         1,         st->bytes,     mr_site_label(s->labels, i),
                          st->count, st->bytes, st->temporary, st->at_peak};
    }
    *nrows = s->by_stack ? n : merge_by_label(rows, n);
    return rows;
}

// The four top-N tables, each sorted on its own field.
static void add_top_tables(json_t* o, const stats* s, row* rows, size_t n, size_t top) {
    const mr_symbols* sites = s->sites;
    json_object_set_new(
        o, "by_peak",
        top_sites(sites, rows, n, top, by_at_peak, offsetof(row, at_peak), s->all_frames));
    json_object_set_new(
        o, "by_bytes",
        top_sites(sites, rows, n, top, by_bytes, offsetof(row, bytes), s->all_frames));
    json_object_set_new(
        o, "by_count",
        top_sites(sites, rows, n, top, by_count, offsetof(row, count), s->all_frames));
    json_object_set_new(
        o, "temporary_by_site",
        top_sites(sites, rows, n, top, by_temporary, offsetof(row, temporary), s->all_frames));
}

static json_t* size_histogram(const stats* s) {
    json_t* hist = json_array();
    for (unsigned b = 0; b < NBUCKETS; b++) {
        if (!s->hist_count[b])
            continue;
        json_t* h = json_object();
        uint64_t lo = b ? 1ull << (b - 1) : 0;
        uint64_t hi = b == 0 ? 0 : b == 64 ? UINT64_MAX : (1ull << b) - 1;
        json_object_set_new(h, "min", json_integer((json_int_t)lo));
        json_object_set_new(h, "max", json_integer((json_int_t)hi));
        json_object_set_new(h, "count", json_integer((json_int_t)s->hist_count[b]));
        json_object_set_new(h, "bytes", json_integer((json_int_t)s->hist_bytes[b]));
        json_array_append_new(hist, h);
    }
    return hist;
}

static json_t* thread_json(const thread_stat* th, json_t* names) {
    char key[16];
    snprintf(key, sizeof key, "%u", th->tid);
    json_t* t = json_object();
    json_object_set_new(t, "tid", json_integer(th->tid));
    json_t* name = json_object_get(names, key);
    json_object_set_new(t, "name", name ? json_incref(name) : json_null());
    json_object_set_new(t, "allocations", json_integer((json_int_t)th->allocations));
    json_object_set_new(t, "bytes_allocated", json_integer((json_int_t)th->bytes));
    json_object_set_new(t, "frees", json_integer((json_int_t)th->frees));
    json_object_set_new(t, "temporary", json_integer((json_int_t)th->temporary));
    json_object_set_new(t, "live_bytes", json_integer((json_int_t)th->live_bytes));
    json_object_set_new(t, "live_blocks", json_integer((json_int_t)th->live_blocks));
    return t;
}

// Totals per thread, by tid.
static json_t* thread_table(mt_capture* cap, stats* s) {
    // No threads (an imported NPU capture): threads is NULL, which qsort must not get.
    if (s->nthreads > 1)
        qsort(s->threads, s->nthreads, sizeof *s->threads, by_tid);
    json_t* names = json_object();
    mt_capture_threads(cap, mr_json_add_thread, names); // tid -> name
    json_t* threads = json_array();
    for (size_t i = 0; i < s->nthreads; i++)
        json_array_append_new(threads, thread_json(&s->threads[i], names));
    json_decref(names);
    return threads;
}

static json_t* build_report(mt_capture* cap, stats* s, const mr_profile* p, int heap, size_t top) {
    size_t n;
    row* rows = site_rows(s, &n);
    if (!rows)
        return NULL;
    json_t* o = json_object();
    json_object_set_new(o, "capture", mr_json_bytes(mt_capture_path(cap)));
    json_object_set_new(o, "status",
                        json_string(mt_capture_truncated(cap) ? "truncated" : "complete"));
    json_object_set_new(o, "allocations", json_integer((json_int_t)p->alloc_count));
    json_object_set_new(o, "bytes_allocated", json_integer((json_int_t)p->alloc_bytes));
    json_object_set_new(o, "frees", json_integer((json_int_t)s->frees));
    json_object_set_new(o, "peak_bytes", json_integer((json_int_t)p->peak_bytes));
    // An imported NPU heap counts time in allocation steps, not nanoseconds.
    bool steps = heap == MT_HEAP_NPU;
    json_object_set_new(o, steps ? "peak_step" : "peak_time_ns", json_integer(p->peak_ts));
    json_object_set_new(o, "time_unit", json_string(steps ? "step" : "ns"));
    json_object_set_new(o, "temporary", json_integer((json_int_t)s->temporary));
    add_top_tables(o, s, rows, n, top);
    free(rows);
    json_object_set_new(o, "sizes", size_histogram(s));
    json_object_set_new(o, "threads", thread_table(cap, s));
    return o;
}

// ---- text

#define INT(o, k) (unsigned long long)json_integer_value(json_object_get(o, k))

static void print_sites(FILE* out, json_t* o, const char* key, const char* title, const char* field,
                        bool as_bytes) {
    json_t* a = json_object_get(o, key);
    fprintf(out, "\n%s\n", title);
    if (!json_array_size(a))
        fputs("  (none)\n", out);
    size_t i;
    json_t* s;
    json_array_foreach(a, i, s) {
        char v[32], line[1024];
        if (as_bytes)
            mt_format_bytes(INT(s, field), v, sizeof v);
        else
            snprintf(v, sizeof v, "%llu", INT(s, field));
        // The site frame, then the next two frames towards main for context; a row of
        // several stacks shows the site's function only, where they all meet.
        unsigned long long nstacks = INT(s, "stacks");
        json_t* stack = json_object_get(s, "stack");
        size_t k, shown = 0;
        json_t* f;
        bool found = false;
        const char* site_name = json_string_value(json_object_get(s, "site"));
        json_array_foreach(stack, k, f) {
            const char* fn = json_string_value(json_object_get(f, "function"));
            if (!found && (!fn || !site_name || strcmp(fn, site_name) != 0))
                continue;
            found = true;
            if (nstacks > 1) {
                json_t* fn_only = json_copy(f);
                json_object_set_new(fn_only, "line", json_null());
                mr_sites_format_json_frame(fn_only, line, sizeof line);
                json_decref(fn_only);
                size_t len = strlen(line);
                snprintf(line + len, sizeof line - len, ", %llu stacks", nstacks);
            } else {
                mr_sites_format_json_frame(f, line, sizeof line);
            }
            if (shown == 0)
                fprintf(out, "  %12s  ", v);
            else
                fprintf(out, "  %12s    from ", "");
            mr_fputs_text(out, line);
            fputc('\n', out);
            if (++shown == 3 || nstacks > 1)
                break;
        }
        if (!shown) {
            fprintf(out, "  %12s  ", v);
            mr_fputs_text(out, site_name ? site_name : "??");
            fputc('\n', out);
        }
    }
}

static void print_text(FILE* out, json_t* o) {
    char a[32], b[32], c[32];
    unsigned long long allocs = INT(o, "allocations");
    fprintf(out, "allocations: %llu (%s), frees: %llu, temporary: %llu (%.1f%%)\n", allocs,
            mt_format_bytes(INT(o, "bytes_allocated"), a, sizeof a), INT(o, "frees"),
            INT(o, "temporary"),
            allocs ? 100.0 * (double)INT(o, "temporary") / (double)allocs : 0.0);
    bool steps = !strcmp(json_string_value(json_object_get(o, "time_unit")), "step");
    fprintf(
        out, "peak: %s at %s\n", mt_format_bytes(INT(o, "peak_bytes"), a, sizeof a),
        mr_format_time((int64_t)INT(o, steps ? "peak_step" : "peak_time_ns"), steps, b, sizeof b));
    print_sites(out, o, "by_peak", "top sites by bytes live at the peak:", "peak_bytes", true);
    print_sites(out, o, "by_bytes", "top sites by bytes allocated:", "bytes_allocated", true);
    print_sites(out, o, "by_count", "top sites by allocations:", "allocations", false);
    print_sites(out, o, "temporary_by_site", "top sites by temporary allocations:", "temporary",
                false);

    fputs("\nallocation sizes:\n", out);
    size_t i;
    json_t* h;
    unsigned long long maxc = 1;
    json_array_foreach(json_object_get(o, "sizes"), i, h) if (INT(h, "count") > maxc) maxc =
        INT(h, "count");
    json_array_foreach(json_object_get(o, "sizes"), i, h) {
        char range[64], bar[41];
        if (INT(h, "max") == 0)
            snprintf(range, sizeof range, "0");
        else
            snprintf(range, sizeof range, "%s - <%s", mt_format_bytes(INT(h, "min"), a, sizeof a),
                     mt_format_bytes(INT(h, "max") + 1, b, sizeof b));
        size_t w = (size_t)((double)INT(h, "count") * 40.0 / (double)maxc + 0.5);
        memset(bar, '#', w);
        bar[w] = 0;
        // Wide enough for "128.00 KiB - <256.00 KiB".
        fprintf(out, "  %24s  %10llu  %s\n", range, INT(h, "count"), bar);
    }

    fputs("\nthreads:\n  tid       name              allocations    allocated        frees"
          "    live at end\n",
          out);
    json_array_foreach(json_object_get(o, "threads"), i, h) {
        // Thread names are at most 15 bytes, but may grow when escaped.
        const char* name = json_string_value(json_object_get(h, "name"));
        if (!name)
            name = "-";
        char* shown = mr_escape(name, strlen(name), MR_ESCAPE_TERMINAL);
        fprintf(out, "  %-9llu %-16s %12llu %12s %12llu %14s\n", INT(h, "tid"), shown ? shown : "?",
                INT(h, "allocations"), mt_format_bytes(INT(h, "bytes_allocated"), a, sizeof a),
                INT(h, "frees"), mt_format_bytes(INT(h, "live_bytes"), c, sizeof c));
        free(shown);
    }
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
    json_t* rep = build_report(cap, s, &p, q.heap, a->top);
    int rc;
    if (!rep) {
        mr_error(path, "out of memory");
        rc = MR_EXIT_IO;
    } else {
        rc = mr_write_report(&a->opt, rep, print_text);
    }
    json_decref(rep);
    mr_profile_free(&p);
    return rc;
}

int mr_cmd_stats(int argc, char** argv) {
    stats_args a;
    int rc = parse_args(argc, argv, &a);
    if (rc != MR_OPT_NEXT)
        return rc;
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
