// SPDX-License-Identifier: MIT
// memreport stacks: every distinct allocation stack of the libc heap with the bytes and
// number of allocations made there, the bytes it held live at the peak and at the end,
// fully symbolized (inlined frames expanded), as text or JSON. Noise frames are hidden
// unless --all-frames; stacks that differ only in hidden frames are merged.
#include "commands.h"
#include "escape.h"
#include "options.h"
#include "output.h"
#include "profile.h"
#include "sites.h"
#include "stack_json.h"
#include "symbols.h"

#include "memtrace/schema.h"
#include "memtrace/units.h"

#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

static const char stacks_help[] =
    "usage: memreport stacks CAPTURE [--json] [--top N] [--all-frames] [-o FILE] [-f]\n"
    "The distinct allocation stacks of a capture's libc heap, most bytes first: bytes and\n"
    "number of allocations made from each, bytes live there at the peak and at the end.\n"
    "Frames are listed leaf first (the caller of malloc first), inlined functions expanded.\n"
    "  --json         machine-readable output\n"
    "  --top N        the N stacks with most bytes (default 20; 0: all)\n"
    "  --all-frames   also show noise frames (allocator internals, start-up code)\n"
    "  -o, --output   write to FILE instead of stdout\n"
    "  -f, --force    overwrite FILE if it exists\n";

// A displayed stack: the frames shown (leaf first) and the merged numbers.
typedef struct shown {
    uint32_t* frames;
    size_t n;
    uint32_t leaf;     // one of the merged callsites (for truncation, name lookups)
    mr_profile_row st; // the merged metrics (its callsite and tid unused)
} shown;

// Adds the metrics of a stack merged into another.
static void add_metrics(mr_profile_row* to, const mr_profile_row* from) {
    to->alloc_bytes += from->alloc_bytes;
    to->alloc_count += from->alloc_count;
    to->live_bytes += from->live_bytes;
    to->end_bytes += from->end_bytes;
    to->end_blocks += from->end_blocks;
}

static int cmp_frames(const void* a, const void* b) {
    const shown *x = a, *y = b;
    size_t n = x->n < y->n ? x->n : y->n;
    for (size_t i = 0; i < n; i++)
        if (x->frames[i] != y->frames[i])
            return x->frames[i] < y->frames[i] ? -1 : 1;
    return (x->n > y->n) - (x->n < y->n);
}

static int cmp_bytes(const void* a, const void* b) {
    const shown *x = a, *y = b;
    if (x->st.alloc_bytes != y->st.alloc_bytes)
        return x->st.alloc_bytes < y->st.alloc_bytes ? 1 : -1;
    if (x->st.alloc_count != y->st.alloc_count)
        return x->st.alloc_count < y->st.alloc_count ? 1 : -1;
    return cmp_frames(a, b);
}

static json_t* frames_json(const mr_symbols* sy, const shown* sh) {
    json_t* arr = json_array();
    for (size_t i = 0; i < sh->n; i++) {
        const mr_symloc* locs;
        size_t nl = mr_symbols_frame_locs(sy, sh->frames[i], &locs);
        const char* module = mr_symbols_frame_module(sy, sh->frames[i]);
        for (size_t j = 0; j < nl; j++) {
            json_t* f = json_object();
            json_object_set_new(f, "function", mr_json_bytes(locs[j].function));
            json_object_set_new(f, "file", mr_json_bytes(locs[j].file));
            json_object_set_new(f, "line", locs[j].line ? json_integer(locs[j].line) : json_null());
            json_object_set_new(f, "module", mr_json_bytes(module));
            json_object_set_new(f, "inlined", json_boolean(locs[j].inlined));
            json_object_set_new(f, "relevant",
                                json_boolean(mr_symbols_frame_relevant(sy, sh->frames[i])));
            json_array_append_new(arr, f);
        }
    }
    return arr;
}

// The report of the first `top` of the n stacks of list (all of them still in the totals).
static json_t* build(const mr_symbols* sy, shown* list, size_t n, size_t top, bool all_frames,
                     const mr_profile* p, const char* path) {
    json_t* o = json_object();
    json_object_set_new(o, "capture", mr_json_bytes(path));
    json_object_set_new(o, "all_frames", json_boolean(all_frames));
    json_object_set_new(o, "bytes_allocated", json_integer((json_int_t)p->alloc_bytes));
    json_object_set_new(o, "allocations", json_integer((json_int_t)p->alloc_count));
    json_object_set_new(o, "peak_bytes", json_integer((json_int_t)p->peak_bytes));
    json_object_set_new(o, "stacks_total", json_integer((json_int_t)n));
    json_t* arr = json_array();
    for (size_t i = 0; i < n && i < top; i++) {
        json_t* s = json_object();
        const mr_profile_row* st = &list[i].st;
        json_object_set_new(s, "bytes", json_integer((json_int_t)st->alloc_bytes));
        json_object_set_new(s, "count", json_integer((json_int_t)st->alloc_count));
        json_object_set_new(s, "peak_bytes", json_integer((json_int_t)st->live_bytes));
        json_object_set_new(s, "leaked_bytes", json_integer((json_int_t)st->end_bytes));
        json_object_set_new(s, "leaked_count", json_integer((json_int_t)st->end_blocks));
        json_object_set_new(s, "truncated",
                            json_boolean(list[i].leaf && mr_symbols_truncated(sy, list[i].leaf)));
        json_object_set_new(s, "frames", frames_json(sy, &list[i]));
        json_array_append_new(arr, s);
    }
    json_object_set_new(o, "stacks", arr);
    return o;
}

static void print_text(FILE* out, json_t* o) {
    char a[32], b[32], c[32], line[2048];
    size_t i, j;
    json_t *s, *f;
#define U64(obj, k) (uint64_t) json_integer_value(json_object_get(obj, k))
    size_t shown_n = json_array_size(json_object_get(o, "stacks"));
    fprintf(out, "%llu distinct allocation stacks, %s in %llu allocations, peak %s\n",
            (unsigned long long)U64(o, "stacks_total"),
            mt_format_bytes(U64(o, "bytes_allocated"), a, sizeof a),
            (unsigned long long)U64(o, "allocations"),
            mt_format_bytes(U64(o, "peak_bytes"), b, sizeof b));
    if (shown_n < U64(o, "stacks_total"))
        fprintf(out, "(top %zu of %llu by bytes allocated; --top 0 shows all)\n", shown_n,
                (unsigned long long)U64(o, "stacks_total"));
    json_array_foreach(json_object_get(o, "stacks"), i, s) {
        fprintf(out, "\n#%zu %s in %llu allocations; at peak %s; leaked %s in %llu%s\n", i + 1,
                mt_format_bytes(U64(s, "bytes"), a, sizeof a), (unsigned long long)U64(s, "count"),
                mt_format_bytes(U64(s, "peak_bytes"), b, sizeof b),
                mt_format_bytes(U64(s, "leaked_bytes"), c, sizeof c),
                (unsigned long long)U64(s, "leaked_count"),
                json_is_true(json_object_get(s, "truncated")) ? " (stack truncated)" : "");
        json_t* frames = json_object_get(s, "frames");
        if (json_array_size(frames) == 0)
            fputs("    (no stack)\n", out);
        json_array_foreach(frames, j, f) {
            fprintf(out, "    %s", json_is_true(json_object_get(f, "inlined")) ? "(inlined) " : "");
            mr_fputs_text(out, mr_sites_format_json_frame(f, line, sizeof line));
            fputc('\n', out);
        }
    }
#undef U64
}

// Merges the stacks that show the same frames (they differ only in hidden frames) in a
// list sorted by frames. Returns the new length.
static size_t merge_same_frames(shown* list, size_t k) {
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

static void free_list(shown* list, size_t n) {
    for (size_t i = 0; i < n; i++)
        free(list[i].frames);
    free(list);
}

// Groups the callsites with allocations by the frames they show (ids the capture does
// not have as "no stack"). Returns the number of distinct stacks in *out (sorted by
// bytes), or -1 when out of memory.
static ptrdiff_t group(const mr_symbols* sy, const mr_profile* p, bool all_frames, shown** out) {
    uint32_t ncs = mr_symbols_callsite_count(sy);
    shown* list = calloc(p->nrows ? p->nrows : 1, sizeof *list);
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
            list[k++] = (shown){.frames = frames, .n = depth, .leaf = cs, .st = p->rows[i]};
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
            if (mr_parse_top(optarg, stacks_help, &a->top))
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
    shown* list = NULL;
    ptrdiff_t n = group(sy, p, a->all_frames, &list);
    if (n < 0) {
        mr_error(path, "out of memory");
        return MR_EXIT_IO;
    }
    json_t* o = build(sy, list, (size_t)n, a->top, a->all_frames, p, path);
    int rc = mr_write_report(&a->opt, o, print_text);
    json_decref(o);
    free_list(list, (size_t)n);
    return rc;
}

// The model's rows at the peak: allocations of the whole run, live at the peak and at the
// end. Returns an exit code.
static int report(const stacks_args* a, const char* path, mt_capture* cap, const mr_symbols* sy) {
    mr_query q = MR_QUERY_INIT(mr_capture_default_heap(cap));
    q.progress = "stacks";
    mr_profile p;
    int e = mr_profile_for(path, cap, &q, &p);
    if (e)
        return e;
    int rc = write_stacks(a, path, sy, &p);
    mr_profile_free(&p);
    return rc;
}

int mr_cmd_stacks(int argc, char** argv) {
    stacks_args a;
    int rc = parse_args(argc, argv, &a);
    if (rc != MR_OPT_NEXT)
        return rc;
    const char* path = mr_opts_input(argc, argv, stacks_help);
    if (!path)
        return MR_EXIT_USAGE;
    mt_capture* cap;
    mr_symbols* sy;
    if ((rc = mr_open_capture_symbols(path, &cap, &sy)))
        return rc;
    rc = report(&a, path, cap, sy);
    mr_symbols_free(sy);
    mt_capture_close(cap);
    return rc;
}
