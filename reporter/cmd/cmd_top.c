// SPDX-License-Identifier: MIT
// memreport top: which function holds the memory. The function view of the model
// (functions.h) as a table of self and total per function, or, with --callers/--callees,
// one function's callers and callees from the call graph (callgraph.h) with their shares:
// heaptrack's top allocators and caller/callee lists, speedscope's sandwich view. The
// report is built as JSON (top_json) and printed from it as text or JSON.
#include "callgraph.h"
#include "commands.h"
#include "escape.h"
#include "functions.h"
#include "options.h"
#include "output.h"
#include "profile.h"
#include "symbols.h"

#include "memtrace/units.h"

#include <getopt.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static const char top_help[] =
    "usage: memreport top CAPTURE [--metric M] [--at TIME] [--range FROM..TO] [--thread TID]\n"
    "         [--sort self|total] [--top N] [--all-frames] [--callers NAME] [--callees NAME]\n"
    "         [--json] [-o FILE] [-f]\n"
    "Which functions hold the memory: per function, its self bytes (allocated by the\n"
    "function itself, the leaf of the stack) and its total bytes (by it and everything it\n"
    "calls, counted once per stack when it recurses), most self first. Inlined functions\n"
    "are functions of their own; a function is a name and a source file.\n"
    "  --metric M         live: bytes live at the peak (or --at), the default; allocated:\n"
    "                     bytes allocated over the run (or --range); count: allocations over\n"
    "                     the run (or --range); leaked: bytes still live at the end\n"
    "  --at TIME          live at TIME (e.g. 20ms, 1.5s; step N for an NPU log) instead of\n"
    "                     at the peak (--metric live)\n"
    "  --range FROM..TO   only the allocations made between FROM and TO (allocated, count);\n"
    "                     live: at the highest point between them instead of the run's peak;\n"
    "                     either side may be left out: 1s.., ..500ms\n" MR_HELP_TIMES
    "  --thread TID       only the blocks and allocations of thread TID\n"
    "  --sort KEY         self (default) or total\n"
    "  --top N            the first N functions, callers or callees (default 20; 0: all)\n"
    "  --all-frames       noise frames (allocator internals, start-up code) are functions too\n"
    "  --callers NAME     the functions that call NAME, each with the part of NAME's total\n"
    "                     that came through it and its share of that total; (root): stacks\n"
    "                     that start at NAME\n"
    "  --callees NAME     the functions NAME calls, likewise, and NAME's self as (self)\n"
    "                     NAME: a function's exact name, 'name (file)', or a unique part of a\n"
    "                     name; under recursion the shares may add up to more than 100%\n"
    "  -j, --json         machine-readable output\n"
    "  -o, --output FILE  write to FILE instead of stdout\n"
    "  -f, --force        overwrite FILE if it exists\n";

typedef struct top_args {
    mr_opts opt;
    mr_when when;
    mr_metric metric;
    bool sort_total, all_frames;
    size_t top;
    const char *callers, *callees; // NULL unless given
} top_args;

static const struct metric_name {
    mr_metric metric;
    const char *name, *unit;
} metric_names[] = {{MR_METRIC_LIVE_BYTES, "live", "bytes"},
                    {MR_METRIC_ALLOC_BYTES, "allocated", "bytes"},
                    {MR_METRIC_ALLOC_COUNT, "count", "allocations"},
                    {MR_METRIC_END_BYTES, "leaked", "bytes"}};

static const struct metric_name* metric_name(mr_metric m) {
    for (size_t i = 0; i < sizeof metric_names / sizeof *metric_names; i++)
        if (metric_names[i].metric == m)
            return &metric_names[i];
    return &metric_names[0];
}

// ---- options

static int parse_option(int c, top_args* a) {
    switch (c) {
    case 'a':
        return mr_parse_at(optarg, &a->when) ? MR_EXIT_USAGE : MR_OPT_NEXT;
    case 'r':
        return mr_parse_range(optarg, top_help, &a->when) ? MR_EXIT_USAGE : MR_OPT_NEXT;
    case 'm':
        return mr_parse_metric(optarg, top_help, true, &a->metric) ? MR_EXIT_USAGE : MR_OPT_NEXT;
    case 'T':
        return mr_parse_thread(optarg, top_help, &a->when.tid) ? MR_EXIT_USAGE : MR_OPT_NEXT;
    case 't':
        return mr_parse_top(optarg, top_help, &a->top) ? MR_EXIT_USAGE : MR_OPT_NEXT;
    case 's':
        if (strcmp(optarg, "self") && strcmp(optarg, "total"))
            return mr_usage_error(top_help, "top: --sort: expected self or total, got '%s'",
                                  optarg);
        a->sort_total = !strcmp(optarg, "total");
        return MR_OPT_NEXT;
    case 'A':
        a->all_frames = true;
        return MR_OPT_NEXT;
    case 'c':
        a->callers = optarg;
        return MR_OPT_NEXT;
    case 'C':
        a->callees = optarg;
        return MR_OPT_NEXT;
    default:
        return mr_opts_handle(&a->opt, c, top_help);
    }
}

// Options that mean nothing together are refused rather than ignored.
static int check_args(const top_args* a) {
    const char* metric = metric_name(a->metric)->name;
    if (a->when.at_arg && a->metric != MR_METRIC_LIVE_BYTES)
        return mr_usage_error(top_help, "top: --at applies to --metric live, not %s", metric);
    bool range = a->when.from_arg || a->when.to_arg;
    if (range && a->metric == MR_METRIC_END_BYTES)
        return mr_usage_error(top_help, "top: --range does not apply to --metric leaked");
    if (a->callers && a->callees && strcmp(a->callers, a->callees))
        return mr_usage_error(top_help,
                              "top: --callers and --callees name two functions: give one");
    return MR_OPT_NEXT;
}

static int parse_args(int argc, char** argv, top_args* a) {
    static const struct option opts[] = {
        {"metric", required_argument, NULL, 'm'},  {"at", required_argument, NULL, 'a'},
        {"range", required_argument, NULL, 'r'},   {"thread", required_argument, NULL, 'T'},
        {"sort", required_argument, NULL, 's'},    {"top", required_argument, NULL, 't'},
        {"all-frames", no_argument, NULL, 'A'},    {"callers", required_argument, NULL, 'c'},
        {"callees", required_argument, NULL, 'C'}, {"json", no_argument, NULL, 'j'},
        {"output", required_argument, NULL, 'o'},  {"force", no_argument, NULL, 'f'},
        {"help", no_argument, NULL, 'h'},          {NULL, 0, NULL, 0}};
    *a = (top_args){.opt = MR_OPTS_INIT,
                    .when = MR_WHEN_INIT,
                    .metric = MR_METRIC_LIVE_BYTES,
                    .top = MR_TOP_DEFAULT};
    int c;
    while ((c = getopt_long(argc, argv, "jo:fh", opts, NULL)) != -1) {
        int rc = parse_option(c, a);
        if (rc != MR_OPT_NEXT)
            return rc;
    }
    return check_args(a);
}

// ---- naming one function (--callers, --callees)

// True when s reads "name (file)" for f.
static bool is_display_name(const mr_function* f, const char* s) {
    size_t n = strlen(f->name);
    if (!f->file || strncmp(s, f->name, n) || strncmp(s + n, " (", 2))
        return false;
    size_t k = strlen(f->file);
    return !strncmp(s + n + 2, f->file, k) && !strcmp(s + n + 2 + k, ")");
}

// The functions matching `name` one way: 0 exact (name or "name (file)"), 1 part of the
// name, 2 part of the name in any case. Returns their number, indexes in idx.
static size_t match(const mr_functions* fns, const char* name, int how, size_t* idx) {
    size_t n = 0;
    for (size_t i = 0; i < fns->n; i++) {
        const mr_function* f = &fns->v[i];
        bool m = how == 0   ? !strcmp(f->name, name) || is_display_name(f, name)
                 : how == 1 ? strstr(f->name, name) != NULL
                            : strcasestr(f->name, name) != NULL;
        if (m)
            idx[n++] = i;
    }
    return n;
}

// "a (file), b, ... and N more" for an error line, names escaped for a terminal.
static void list_names(const mr_functions* fns, const size_t* idx, size_t n, char* buf,
                       size_t len) {
    size_t used = 0;
    buf[0] = 0;
    for (size_t i = 0; i < n && i < 8 && used < len; i++) {
        const mr_function* f = &fns->v[idx[i]];
        char* name = mr_escape(f->name, strlen(f->name), MR_ESCAPE_TERMINAL);
        char* file = f->file ? mr_escape(f->file, strlen(f->file), MR_ESCAPE_TERMINAL) : NULL;
        used +=
            (size_t)snprintf(buf + used, len - used, "%s%s%s%s%s", i ? ", " : "", name ? name : "?",
                             file ? " (" : "", file ? file : "", file ? ")" : "");
        free(name);
        free(file);
    }
    if (n > 8 && used < len)
        snprintf(buf + used, len - used, " and %zu more", n - 8);
}

// The function `name` names (top_help's NAME). Returns 0 with its index, or the usage exit
// code after saying which functions it could mean.
static int find_function(const mr_functions* fns, const char* option, const char* name,
                         size_t* out) {
    size_t* idx = malloc((fns->n ? fns->n : 1) * sizeof *idx);
    if (!idx) {
        mr_error(NULL, "out of memory");
        return MR_EXIT_IO;
    }
    size_t n = match(fns, name, 0, idx);
    if (n == 0)
        n = match(fns, name, 1, idx);
    int rc = MR_EXIT_OK;
    char names[1024];
    char* shown = mr_escape(name, strlen(name), MR_ESCAPE_TERMINAL);
    if (n == 1) {
        *out = idx[0];
    } else if (n > 1) {
        list_names(fns, idx, n, names, sizeof names);
        rc = mr_usage_error(top_help, "top: %s '%s' is ambiguous: %zu functions match: %s", option,
                            shown ? shown : "?", n, names);
    } else if ((n = match(fns, name, 2, idx)) > 0) {
        list_names(fns, idx, n, names, sizeof names);
        rc = mr_usage_error(top_help, "top: %s '%s': no such function; did you mean: %s", option,
                            shown ? shown : "?", names);
    } else {
        rc = mr_usage_error(top_help,
                            "top: %s '%s': no such function ('memreport top CAPTURE --top 0' "
                            "lists them)",
                            option, shown ? shown : "?");
    }
    free(shown);
    free(idx);
    return rc;
}

// ---- the report

// What the report is made of.
typedef struct top_view {
    const top_args* a;
    const char* path;
    const mr_query* q;
    const mr_profile* p;
    bool steps;
    const mr_functions* fns;
    const mr_callgraph* graph; // NULL without --callers/--callees
    size_t focus;
} top_view;

// One line of a list: a function (or a pseudo-function such as (self)) and its values.
typedef struct entry {
    const char *name, *file;
    uint64_t self, total; // a caller or callee has its value in total
    uint64_t key, tie;    // sorted by key, then tie, largest first, then by name
} entry;

static int cmp_entries(const void* a, const void* b) {
    const entry *x = a, *y = b;
    if (x->key != y->key)
        return x->key < y->key ? 1 : -1;
    if (x->tie != y->tie)
        return x->tie < y->tie ? 1 : -1;
    int c = strcmp(x->name, y->name);
    return c ? c : strcmp(x->file ? x->file : "", y->file ? y->file : "");
}

static uint64_t profile_total(const mr_profile* p, mr_metric m) {
    switch (m) {
    case MR_METRIC_ALLOC_BYTES:
        return p->alloc_bytes;
    case MR_METRIC_ALLOC_COUNT:
        return p->alloc_count;
    case MR_METRIC_END_BYTES:
        return p->end_bytes;
    default:
        return p->live_bytes;
    }
}

static json_t* percent_json(uint64_t v, uint64_t of) {
    return json_real(of ? 100.0 * (double)v / (double)of : 0.0);
}

static json_t* time_json(int64_t t) {
    return t == INT64_MIN || t == INT64_MAX ? json_null() : json_integer((json_int_t)t);
}

// The first `top` of n entries as a JSON array, sorted here by self (by total when
// by_total, and always for a list of callers or callees); percents of `of`.
static json_t* entries_json(entry* v, size_t n, size_t top, bool table, bool by_total,
                            uint64_t of) {
    by_total = by_total || !table;
    for (size_t i = 0; i < n; i++) {
        v[i].key = by_total ? v[i].total : v[i].self;
        v[i].tie = by_total ? v[i].self : v[i].total;
    }
    if (n > 1)
        qsort(v, n, sizeof *v, cmp_entries);
    json_t* arr = json_array();
    for (size_t i = 0; i < n && i < top; i++) {
        json_t* o = json_object();
        json_object_set_new(o, "function", mr_json_bytes(v[i].name));
        json_object_set_new(o, "file", mr_json_bytes(v[i].file));
        if (table) {
            json_object_set_new(o, "self", json_integer((json_int_t)v[i].self));
            json_object_set_new(o, "self_percent", percent_json(v[i].self, of));
        }
        json_object_set_new(o, table ? "total" : "value", json_integer((json_int_t)v[i].total));
        json_object_set_new(o, table ? "total_percent" : "percent", percent_json(v[i].total, of));
        json_array_append_new(arr, o);
    }
    return arr;
}

// The callers (or callees, with (self)) of the focus with a value in the metric.
static size_t focus_entries(const top_view* t, bool callers, entry* v) {
    mr_metric m = t->a->metric;
    const mr_function* f = &t->fns->v[t->focus];
    size_t n = 0;
    if (!callers && f->self[m])
        v[n++] = (entry){.name = "(self)", .total = f->self[m]};
    for (size_t i = 0; i < t->graph->n; i++) {
        const mr_call* c = &t->graph->v[i];
        uint32_t other = callers ? c->caller : c->callee;
        if ((callers ? c->callee : c->caller) != t->focus || !c->value[m])
            continue;
        bool root = other == MR_CALLGRAPH_ROOT;
        v[n++] = (entry){.name = root ? "(root)" : t->fns->v[other].name,
                         .file = root ? NULL : t->fns->v[other].file,
                         .total = c->value[m]};
    }
    return n;
}

// The whole report, text and JSON alike, as JSON. NULL when out of memory.
static json_t* top_json(const top_view* t) {
    const top_args* a = t->a;
    mr_metric m = a->metric;
    json_t* o = json_object();
    json_object_set_new(o, "capture", mr_json_bytes(t->path));
    json_object_set_new(o, "metric", json_string(metric_name(m)->name));
    json_object_set_new(o, "unit", json_string(metric_name(m)->unit));
    json_object_set_new(o, "time_unit", json_string(t->steps ? "step" : "ns"));
    if (m == MR_METRIC_LIVE_BYTES) {
        json_object_set_new(o, "moment", json_string(a->when.at_arg ? "time" : "peak"));
        json_object_set_new(o, "moment_ts", json_integer((json_int_t)t->p->moment_ts));
    }
    if (m == MR_METRIC_ALLOC_BYTES || m == MR_METRIC_ALLOC_COUNT || a->when.from_arg ||
        a->when.to_arg) {
        json_object_set_new(o, "range_from", time_json(t->q->from));
        json_object_set_new(o, "range_to", time_json(t->q->to));
    }
    json_object_set_new(o, "thread", a->when.tid ? json_integer(a->when.tid) : json_null());
    json_object_set_new(o, "all_frames", json_boolean(a->all_frames));
    uint64_t total = profile_total(t->p, m);
    json_object_set_new(o, "total", json_integer((json_int_t)total));
    entry* v = malloc((t->fns->n + (t->graph ? t->graph->n : 0) + 1) * sizeof *v);
    if (!v) {
        json_decref(o);
        return NULL;
    }
    if (!t->graph) {
        size_t n = 0;
        for (size_t i = 0; i < t->fns->n; i++)
            if (t->fns->v[i].total[m])
                v[n++] = (entry){.name = t->fns->v[i].name,
                                 .file = t->fns->v[i].file,
                                 .self = t->fns->v[i].self[m],
                                 .total = t->fns->v[i].total[m]};
        json_object_set_new(o, "sort", json_string(a->sort_total ? "total" : "self"));
        json_object_set_new(o, "functions_total", json_integer((json_int_t)n));
        json_object_set_new(o, "functions", entries_json(v, n, a->top, true, a->sort_total, total));
    } else {
        const mr_function* f = &t->fns->v[t->focus];
        entry e = {.name = f->name, .file = f->file, .self = f->self[m], .total = f->total[m]};
        json_t* focus = entries_json(&e, 1, 1, true, false, total);
        json_object_set(o, "function", json_array_get(focus, 0));
        json_decref(focus);
        if (a->callers)
            json_object_set_new(
                o, "callers",
                entries_json(v, focus_entries(t, true, v), a->top, false, true, e.total));
        if (a->callees)
            json_object_set_new(
                o, "callees",
                entries_json(v, focus_entries(t, false, v), a->top, false, true, e.total));
    }
    free(v);
    return o;
}

// ---- text

#define U64(obj, k) ((unsigned long long)json_integer_value(json_object_get(obj, k)))
#define PCT(obj, k) json_real_value(json_object_get(obj, k))

static const char* time_text(json_t* o, json_t* t, char* buf, size_t len) {
    if (!strcmp(json_string_value(json_object_get(o, "time_unit")), "step"))
        snprintf(buf, len, "step %lld", (long long)json_integer_value(t));
    else
        mt_format_duration((int64_t)json_integer_value(t), buf, len);
    return buf;
}

// "bytes live at the peak (12.3 ms)", "allocations from 1 s to the end", ...
static void print_what(FILE* out, json_t* o) {
    const char* metric = json_string_value(json_object_get(o, "metric"));
    char a[64], b[64];
    if (!strcmp(metric, "live")) {
        bool peak = !strcmp(json_string_value(json_object_get(o, "moment")), "peak");
        json_t *from = json_object_get(o, "range_from"), *to = json_object_get(o, "range_to");
        if (peak && (from || to)) { // the highest point within --range
            fprintf(out, "bytes live at the highest point from %s ",
                    json_is_null(from) ? "the start" : time_text(o, from, a, sizeof a));
            fprintf(out, "to %s (%s)", json_is_null(to) ? "the end" : time_text(o, to, a, sizeof a),
                    time_text(o, json_object_get(o, "moment_ts"), b, sizeof b));
        } else {
            fprintf(out, "bytes live %s%s%s", peak ? "at the peak (" : "at ",
                    time_text(o, json_object_get(o, "moment_ts"), a, sizeof a), peak ? ")" : "");
        }
    } else if (!strcmp(metric, "leaked")) {
        fputs("bytes leaked (live at the end)", out);
    } else {
        json_t *from = json_object_get(o, "range_from"), *to = json_object_get(o, "range_to");
        fprintf(out, "%s", !strcmp(metric, "count") ? "allocations" : "bytes allocated");
        if (json_is_null(from) && json_is_null(to))
            fputs(" over the run", out);
        else
            fprintf(out, " from %s to %s",
                    json_is_null(from) ? "the start" : time_text(o, from, a, sizeof a),
                    json_is_null(to) ? "the end" : time_text(o, to, b, sizeof b));
    }
    if (!json_is_null(json_object_get(o, "thread")))
        fprintf(out, " in thread %llu", U64(o, "thread"));
}

static void print_name(FILE* out, json_t* e) {
    mr_fputs_text(out, json_string_value(json_object_get(e, "function")));
    json_t* file = json_object_get(e, "file");
    if (json_is_string(file)) {
        fputs(" (", out);
        mr_fputs_text(out, json_string_value(file));
        fputc(')', out);
    }
    fputc('\n', out);
}

static void print_list(FILE* out, json_t* list, const char* title, json_t* focus,
                       const char* unit) {
    size_t i;
    json_t* e;
    fprintf(out, "\n%s of ", title);
    print_name(out, focus);
    fprintf(out, "%14s  %6s  %s\n", unit, "share", !strcmp(title, "callers") ? "caller" : "callee");
    json_array_foreach(list, i, e) {
        fprintf(out, "%14llu  %5.1f%%  ", U64(e, "value"), PCT(e, "percent"));
        print_name(out, e);
    }
    if (json_array_size(list) == 0)
        fputs("  (none)\n", out);
}

static void print_text(FILE* out, json_t* o) {
    char a[32];
    mr_fputs_text(out, json_string_value(json_object_get(o, "capture")));
    fputs(": ", out);
    print_what(out, o);
    bool bytes = !strcmp(json_string_value(json_object_get(o, "unit")), "bytes");
    fprintf(out, ": %llu%s%s%s\n", U64(o, "total"), bytes ? " B (" : "",
            bytes ? mt_format_bytes(U64(o, "total"), a, sizeof a) : "", bytes ? ")" : "");
    json_t *fns = json_object_get(o, "functions"), *e;
    size_t i;
    if (fns) {
        if (json_array_size(fns) < U64(o, "functions_total"))
            fprintf(out, "(top %zu of %llu functions by %s; --top 0 shows all)\n",
                    json_array_size(fns), U64(o, "functions_total"),
                    json_string_value(json_object_get(o, "sort")));
        fprintf(out, "%14s  %6s  %14s  %6s  %s\n", "self", "self%", "total", "total%", "function");
        json_array_foreach(fns, i, e) {
            fprintf(out, "%14llu  %5.1f%%  %14llu  %5.1f%%  ", U64(e, "self"),
                    PCT(e, "self_percent"), U64(e, "total"), PCT(e, "total_percent"));
            print_name(out, e);
        }
        return;
    }
    json_t* f = json_object_get(o, "function");
    print_name(out, f);
    fprintf(out, "  self %llu (%.1f%%), total %llu (%.1f%%)\n", U64(f, "self"),
            PCT(f, "self_percent"), U64(f, "total"), PCT(f, "total_percent"));
    const char* unit = json_string_value(json_object_get(o, "unit"));
    if (json_object_get(o, "callers"))
        print_list(out, json_object_get(o, "callers"), "callers", f, unit);
    if (json_object_get(o, "callees"))
        print_list(out, json_object_get(o, "callees"), "callees", f, unit);
}

#undef U64
#undef PCT

// ---- the command

// Builds the views the arguments ask for and writes the report. Returns an exit code.
static int write_top(top_view* t, const mr_symbols* sy) {
    const top_args* a = t->a;
    mr_functions fns;
    mr_callgraph graph = {0};
    if (mr_functions_build(t->p, sy, a->all_frames, &fns)) {
        mr_error(t->path, "out of memory");
        return MR_EXIT_IO;
    }
    t->fns = &fns;
    const char* name = a->callers ? a->callers : a->callees;
    int rc = MR_EXIT_OK;
    if (name)
        rc = find_function(&fns, a->callers ? "--callers" : "--callees", name, &t->focus);
    if (!rc && name && mr_callgraph_build(t->p, sy, a->all_frames, &fns, &graph)) {
        mr_error(t->path, "out of memory");
        rc = MR_EXIT_IO;
    }
    t->graph = name ? &graph : NULL;
    json_t* o = rc ? NULL : top_json(t);
    if (!rc && !o) {
        mr_error(t->path, "out of memory");
        rc = MR_EXIT_IO;
    }
    if (!rc)
        rc = mr_write_report(&a->opt, o, print_text);
    json_decref(o);
    mr_callgraph_free(&graph);
    mr_functions_free(&fns);
    return rc;
}

int mr_cmd_top(int argc, char** argv) {
    top_args a;
    int rc = parse_args(argc, argv, &a);
    if (rc != MR_OPT_NEXT)
        return rc;
    const char* path = mr_opts_input(argc, argv, top_help);
    if (!path)
        return MR_EXIT_USAGE;
    mt_capture* cap;
    mr_symbols* sy;
    if ((rc = mr_open_capture_symbols(path, &cap, &sy)))
        return rc;
    mr_query q;
    mr_profile p = {0};
    top_view t = {.a = &a, .path = path, .q = &q, .p = &p};
    if (!(rc = mr_query_for(&a.when, path, cap, &q, &t.steps))) {
        q.progress = "top";
        if (!(rc = mr_profile_for(path, cap, &q, &p)))
            rc = write_top(&t, sy);
    }
    mr_profile_free(&p);
    mr_symbols_free(sy);
    mt_capture_close(cap);
    return rc;
}
