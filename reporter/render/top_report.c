// SPDX-License-Identifier: MIT
// The top report (top_report.h): built as one JSON document, printed from it as text or
// as it is.
#include "top_report.h"

#include "cxx_names.h"
#include "escape.h"
#include "json.h"
#include "messages.h"
#include "sites.h"

#include "memtrace/units.h"

#include <stdlib.h>
#include <string.h>

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

const char* mr_top_report_metric_name(mr_metric m) {
    return metric_name(m)->name;
}

// One line of a list: a function (or a pseudo-function such as (self)) and its values.
typedef struct entry {
    const char *name, *file;
    const char* process;  // --by-process: "COMMAND (pid N)", else NULL
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
    if (!c)
        c = strcmp(x->file ? x->file : "", y->file ? y->file : "");
    return c ? c : strcmp(x->process ? x->process : "", y->process ? y->process : "");
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
        if (v[i].process)
            json_object_set_new(o, "process", mr_json_bytes(v[i].process));
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
static size_t focus_entries(const mr_top_report* t, bool callers, entry* v) {
    mr_metric m = t->metric;
    const mr_function* f = &t->functions->v[t->focus];
    size_t n = 0;
    if (!callers && f->self[m])
        v[n++] = (entry){.name = "(self)", .total = f->self[m]};
    for (size_t i = 0; i < t->graph->n; i++) {
        const mr_call* c = &t->graph->v[i];
        uint32_t other = callers ? c->caller : c->callee;
        if ((callers ? c->callee : c->caller) != t->focus || !c->value[m])
            continue;
        bool root = other == MR_CALLGRAPH_ROOT;
        v[n++] = (entry){.name = root ? "(root)" : t->functions->v[other].name,
                         .file = root ? NULL : t->functions->v[other].file,
                         .total = c->value[m]};
    }
    return n;
}

// The whole report, text and JSON alike, as JSON. NULL when out of memory.
static json_t* build_report(const mr_top_report* t) {
    mr_metric m = t->metric;
    json_t* o = json_object();
    json_object_set_new(o, "capture", mr_json_bytes(t->capture));
    json_object_set_new(o, "metric", json_string(metric_name(m)->name));
    json_object_set_new(o, "unit", json_string(metric_name(m)->unit));
    json_object_set_new(o, "time_unit", json_string(t->steps ? "step" : "ns"));
    if (m == MR_METRIC_LIVE_BYTES) {
        json_object_set_new(o, "moment", json_string(t->at_time ? "time" : "peak"));
        json_object_set_new(
            o, "moment_ts",
            json_integer((json_int_t)(t->processes ? t->joint_ts : t->profile->moment_ts)));
    }
    if (m == MR_METRIC_ALLOC_BYTES || m == MR_METRIC_ALLOC_COUNT || t->range_given) {
        json_object_set_new(o, "range_from", time_json(t->query->from));
        json_object_set_new(o, "range_to", time_json(t->query->to));
    }
    json_object_set_new(o, "thread", t->tid ? json_integer(t->tid) : json_null());
    if (t->processes) { // live bytes: when the processes together held the most
        json_object_set_new(o, "processes", json_integer((json_int_t)t->processes));
        json_object_set_new(o, "by_process", json_boolean(t->process_of != NULL));
    }
    json_object_set_new(o, "all_frames", json_boolean(t->all_frames));
    uint64_t total = profile_total(t->profile, m);
    json_object_set_new(o, "total", json_integer((json_int_t)total));
    const mr_functions* fns = t->functions;
    entry* v = malloc((fns->n + (t->graph ? t->graph->n : 0) + 1) * sizeof *v);
    if (!v) {
        json_decref(o);
        return NULL;
    }
    if (!t->graph) {
        size_t n = 0;
        for (size_t i = 0; i < fns->n; i++)
            if (fns->v[i].total[m])
                v[n++] = (entry){.name = fns->v[i].name,
                                 .file = fns->v[i].file,
                                 .process = t->process_of ? t->process_of[i] : NULL,
                                 .self = fns->v[i].self[m],
                                 .total = fns->v[i].total[m]};
        json_object_set_new(o, "sort", json_string(t->sort_total ? "total" : "self"));
        if (fns->passed) { // only where it happened, so C captures' reports read as before
            json_t* passed = json_array();
            json_array_append_new(passed, json_string(MR_SITES_PLUMBING));
            json_object_set_new(o, "passed", passed);
        }
        json_object_set_new(o, "functions_total", json_integer((json_int_t)n));
        json_object_set_new(o, "functions", entries_json(v, n, t->top, true, t->sort_total, total));
    } else {
        const mr_function* f = &fns->v[t->focus];
        entry e = {.name = f->name, .file = f->file, .self = f->self[m], .total = f->total[m]};
        json_t* focus = entries_json(&e, 1, 1, true, false, total);
        json_object_set(o, "function", json_array_get(focus, 0));
        json_decref(focus);
        if (t->callers)
            json_object_set_new(
                o, "callers",
                entries_json(v, focus_entries(t, true, v), t->top, false, true, e.total));
        if (t->callees)
            json_object_set_new(
                o, "callees",
                entries_json(v, focus_entries(t, false, v), t->top, false, true, e.total));
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
        mt_units_format_duration((int64_t)json_integer_value(t), buf, len);
    return buf;
}

// "bytes live at the peak (12.3 ms)", "allocations from 1 s to the end", ...
static void print_what(FILE* out, json_t* o) {
    const char* metric = json_string_value(json_object_get(o, "metric"));
    char a[64], b[64];
    json_t* procs = json_object_get(o, "processes");
    if (procs && !strcmp(metric, "live")) {
        fprintf(out, "bytes live when the %llu processes together held the most (%s)",
                U64(o, "processes"), time_text(o, json_object_get(o, "moment_ts"), a, sizeof a));
    } else if (!strcmp(metric, "live")) {
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
    if (procs && strcmp(metric, "live"))
        fprintf(out, " in %llu processes", U64(o, "processes"));
}

static void print_name(FILE* out, json_t* e) {
    mr_cxx_names_fputs(out, json_string_value(json_object_get(e, "function")));
    json_t* file = json_object_get(e, "file");
    if (json_is_string(file)) {
        fputs(" (", out);
        mr_escape_fputs_text(out, json_string_value(file));
        fputc(')', out);
    }
    json_t* process = json_object_get(e, "process");
    if (json_is_string(process)) {
        fputs(" in ", out);
        mr_escape_fputs_text(out, json_string_value(process));
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
    mr_escape_fputs_text(out, json_string_value(json_object_get(o, "capture")));
    fputs(": ", out);
    print_what(out, o);
    bool bytes = !strcmp(json_string_value(json_object_get(o, "unit")), "bytes");
    fprintf(out, ": %llu%s%s%s\n", U64(o, "total"), bytes ? " B (" : "",
            bytes ? mt_units_format_bytes(U64(o, "total"), a, sizeof a) : "", bytes ? ")" : "");
    json_t *fns = json_object_get(o, "functions"), *e;
    size_t i;
    if (fns) {
        bool by_self = !strcmp(json_string_value(json_object_get(o, "sort")), "self");
        fputs(by_self ? "by self: what each function allocated itself (total: with what it calls)"
                      : "by total: what each function and what it calls allocated (self: itself)",
              out);
        fputc('\n', out);
        json_t* passed = json_object_get(o, "passed");
        for (i = 0; i < json_array_size(passed); i++) {
            fputs("past ", out);
            mr_escape_fputs_text(out, json_string_value(json_array_get(passed, i)));
            fputs(": what its functions allocate is their callers' self\n", out);
        }
        if (json_array_size(fns) < U64(o, "functions_total"))
            fprintf(out, "(top %zu of %llu functions; --top 0 shows all)\n", json_array_size(fns),
                    U64(o, "functions_total"));
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

int mr_top_report_write(const mr_report_to* to, const mr_top_report* r) {
    return mr_json_write_new_report(to, build_report(r), r->capture, print_text);
}
