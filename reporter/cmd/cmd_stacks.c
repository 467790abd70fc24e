// SPDX-License-Identifier: MIT
// memreport stacks: every distinct allocation stack of the libc heap with the bytes and
// number of allocations made there, the bytes it held live at the peak and at the end,
// fully symbolized (inlined frames expanded), as text or JSON. Noise frames are hidden
// unless --all-frames; stacks that differ only in hidden frames are merged.
#include "commands.h"
#include "escape.h"
#include "options.h"
#include "output.h"
#include "replay.h"
#include "sites.h"
#include "stack_json.h"
#include "symbols.h"

#include "memtrace/schema.h"
#include "memtrace/units.h"

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

typedef struct site_stats {
    uint64_t bytes, count, peak_bytes, leaked_bytes, leaked_count;
} site_stats;

typedef struct stacks_state {
    site_stats* per_cs; // indexed by leaf callsite id
    uint32_t ncs;
} stacks_state;

// Events naming a callsite the capture does not have are counted as "no stack".
static uint32_t slot(const stacks_state* st, uint32_t cs) {
    return cs < st->ncs ? cs : 0;
}

static int count_alloc(mr_replay* r, const mt_event* ev, const mr_block* freed, void* ud) {
    (void)r;
    (void)freed;
    stacks_state* st = ud;
    if (mt_kind_is_alloc(ev->kind)) {
        site_stats* s = &st->per_cs[slot(st, ev->callsite)];
        s->bytes += ev->size;
        s->count++;
    }
    return 0;
}

// Adds the live blocks of a replay to per_cs (peak: true -> peak_bytes, else leaks).
static void add_live(stacks_state* st, const mr_replay* r, bool peak) {
    const mr_block* b;
    for (size_t i = 0; mr_heapmap_next(&r->live, &i, &b);) {
        site_stats* s = &st->per_cs[slot(st, b->callsite)];
        if (peak) {
            s->peak_bytes += b->size;
        } else {
            s->leaked_bytes += b->size;
            s->leaked_count++;
        }
    }
}

// A displayed stack: the frames shown (leaf first) and the merged numbers.
typedef struct shown {
    uint32_t* frames;
    size_t n;
    uint32_t leaf; // one of the merged callsites (for truncation, name lookups)
    site_stats st;
} shown;

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
    if (x->st.bytes != y->st.bytes)
        return x->st.bytes < y->st.bytes ? 1 : -1;
    if (x->st.count != y->st.count)
        return x->st.count < y->st.count ? 1 : -1;
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
                     const mr_replay* r, const char* path) {
    json_t* o = json_object();
    json_object_set_new(o, "capture", mr_json_bytes(path));
    json_object_set_new(o, "all_frames", json_boolean(all_frames));
    json_object_set_new(o, "bytes_allocated", json_integer((json_int_t)r->bytes_allocated));
    json_object_set_new(o, "allocations", json_integer((json_int_t)r->allocations));
    json_object_set_new(o, "peak_bytes", json_integer((json_int_t)r->peak_bytes));
    json_object_set_new(o, "stacks_total", json_integer((json_int_t)n));
    json_t* arr = json_array();
    for (size_t i = 0; i < n && i < top; i++) {
        json_t* s = json_object();
        json_object_set_new(s, "bytes", json_integer((json_int_t)list[i].st.bytes));
        json_object_set_new(s, "count", json_integer((json_int_t)list[i].st.count));
        json_object_set_new(s, "peak_bytes", json_integer((json_int_t)list[i].st.peak_bytes));
        json_object_set_new(s, "leaked_bytes", json_integer((json_int_t)list[i].st.leaked_bytes));
        json_object_set_new(s, "leaked_count", json_integer((json_int_t)list[i].st.leaked_count));
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

// Groups the callsites with allocations by the frames they show. Returns the number of
// distinct stacks in *out (sorted by bytes), or -1 when out of memory.
static ptrdiff_t group(const mr_symbols* sy, const stacks_state* st, bool all_frames, shown** out) {
    size_t n = 0;
    for (uint32_t cs = 0; cs < st->ncs; cs++)
        n += st->per_cs[cs].count > 0;
    shown* list = calloc(n ? n : 1, sizeof *list);
    if (!list)
        return -1;
    size_t k = 0;
    uint32_t* buf = malloc(MR_SITES_MAX_DEPTH * sizeof *buf);
    if (!buf) {
        free(list);
        return -1;
    }
    for (uint32_t cs = 0; cs < st->ncs; cs++) {
        if (!st->per_cs[cs].count)
            continue;
        size_t depth = cs ? mr_symbols_stack(sy, cs, all_frames, buf, MR_SITES_MAX_DEPTH) : 0;
        if (depth > MR_SITES_MAX_DEPTH)
            depth = MR_SITES_MAX_DEPTH;
        list[k].frames = malloc((depth ? depth : 1) * sizeof *buf);
        if (!list[k].frames) {
            for (size_t i = 0; i < k; i++)
                free(list[i].frames);
            free(list);
            free(buf);
            return -1;
        }
        memcpy(list[k].frames, buf, depth * sizeof *buf);
        list[k].n = depth;
        list[k].leaf = cs;
        list[k].st = st->per_cs[cs];
        k++;
    }
    free(buf);
    // Merge stacks that show the same frames (they differ only in hidden frames).
    qsort(list, k, sizeof *list, cmp_frames);
    size_t m = 0;
    for (size_t i = 0; i < k; i++) {
        if (m && cmp_frames(&list[m - 1], &list[i]) == 0) {
            site_stats* d = &list[m - 1].st;
            d->bytes += list[i].st.bytes;
            d->count += list[i].st.count;
            d->peak_bytes += list[i].st.peak_bytes;
            d->leaked_bytes += list[i].st.leaked_bytes;
            d->leaked_count += list[i].st.leaked_count;
            free(list[i].frames);
        } else {
            list[m++] = list[i];
        }
    }
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

// Live bytes per stack at the peak: a second replay that stops at the peak's event.
// Returns an exit code.
static int add_peak(const char* path, mt_capture* cap, stacks_state* st, uint64_t peak_seq) {
    mr_replay at_peak;
    if (mr_replay_init(&at_peak, cap, mr_capture_default_heap(cap))) {
        mr_error(path, "out of memory");
        return MR_EXIT_IO;
    }
    int rc = 0;
    if (mr_replay_run(&at_peak, peak_seq, NULL, NULL) != 0) {
        mr_error(path, "%s", at_peak.err[0] ? at_peak.err : "corrupt capture");
        rc = MR_EXIT_BAD_INPUT;
    } else {
        add_live(st, &at_peak, true);
    }
    mr_replay_free(&at_peak);
    return rc;
}

// Groups the counted callsites into shown stacks and writes the report. Returns an exit
// code.
static int write_stacks(const stacks_args* a, const char* path, const mr_symbols* sy,
                        const stacks_state* st, const mr_replay* r) {
    shown* list = NULL;
    ptrdiff_t n = group(sy, st, a->all_frames, &list);
    if (n < 0) {
        mr_error(path, "out of memory");
        return MR_EXIT_IO;
    }
    json_t* o = build(sy, list, (size_t)n, a->top, a->all_frames, r, path);
    int rc = mr_write_report(&a->opt, o, print_text);
    json_decref(o);
    for (ptrdiff_t i = 0; i < n; i++)
        free(list[i].frames);
    free(list);
    return rc;
}

// Counts allocations per callsite and the bytes live at the end in one replay, the bytes
// live at the peak in a second one, then reports. Returns an exit code.
static int report(const stacks_args* a, const char* path, mt_capture* cap, const mr_symbols* sy,
                  stacks_state* st) {
    mr_replay r;
    if (mr_replay_init(&r, cap, mr_capture_default_heap(cap))) {
        mr_error(path, "out of memory");
        return MR_EXIT_IO;
    }
    int rc;
    if (mr_replay_run(&r, UINT64_MAX, count_alloc, st) != 0) {
        mr_error(path, "%s", r.err[0] ? r.err : "corrupt capture");
        rc = MR_EXIT_BAD_INPUT;
    } else {
        add_live(st, &r, false);
        rc = r.peak_seq ? add_peak(path, cap, st, r.peak_seq) : 0;
        if (rc == 0)
            rc = write_stacks(a, path, sy, st, &r);
    }
    mr_replay_free(&r);
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
    stacks_state st = {.ncs = mr_symbols_callsite_count(sy)};
    st.per_cs = calloc(st.ncs, sizeof *st.per_cs);
    if (!st.per_cs) {
        mr_error(path, "out of memory");
        rc = MR_EXIT_IO;
    } else {
        rc = report(&a, path, cap, sy, &st);
    }
    free(st.per_cs);
    mr_symbols_free(sy);
    mt_capture_close(cap);
    return rc;
}
