// SPDX-License-Identifier: MIT
// The stats report (stats_report.h): built as one JSON document, printed from it as text
// or as it is.
#include "stats_report.h"

#include "cxx_names.h"
#include "escape.h"
#include "extent.h"
#include "json.h"
#include "messages.h"
#include "procs_json.h"
#include "procs_report.h"
#include "stack_json.h"

#include "memtrace/units.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DESC_BY(field)                                                                             \
    static int by_##field(const void* a, const void* b) {                                          \
        const mr_stats_row *x = a, *y = b;                                                         \
        if (x->field != y->field)                                                                  \
            return x->field < y->field ? 1 : -1;                                                   \
        if (x->callsite != y->callsite)                                                            \
            return x->callsite < y->callsite ? -1 : 1;                                             \
        return x->process < y->process ? -1 : x->process > y->process; /* in the set's order */    \
    }
DESC_BY(count)
DESC_BY(bytes)
DESC_BY(temporary)
DESC_BY(at_peak)

static json_t* site_json(const mr_symbols* sites, const mr_stats_row* r, bool all_frames) {
    json_t* o = json_object();
    json_object_set_new(o, "site", mr_json_bytes(r->label));
    json_object_set_new(o, "stacks", json_integer(r->nstacks));
    json_object_set_new(o, "peak_bytes", json_integer((json_int_t)r->at_peak));
    json_object_set_new(o, "bytes_allocated", json_integer((json_int_t)r->bytes));
    json_object_set_new(o, "allocations", json_integer((json_int_t)r->count));
    json_object_set_new(o, "temporary", json_integer((json_int_t)r->temporary));
    json_t* stack =
        mr_stack_json_make(r->process ? r->process->sym : sites, r->callsite, all_frames);
    if (r->process) { // the process is the outermost frame, as in stacks and the flame graph
        json_array_append_new(stack, mr_procs_json_frame(r->process));
        char* label = mr_procs_report_label(r->process);
        json_object_set_new(o, "process", label ? mr_json_bytes(label) : json_null());
        free(label);
    }
    json_object_set_new(o, "stack", stack);
    return o;
}

static json_t* top_sites(const mr_symbols* sites, mr_stats_row* rows, size_t n, size_t top,
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

// The four top-N tables, each sorted on its own field.
static void add_top_tables(json_t* o, const mr_stats_report* s) {
    const mr_symbols* sites = s->sym;
    mr_stats_row* rows = s->rows;
    size_t n = s->nrows, top = s->top;
    json_object_set_new(
        o, "by_peak",
        top_sites(sites, rows, n, top, by_at_peak, offsetof(mr_stats_row, at_peak), s->all_frames));
    json_object_set_new(
        o, "by_bytes",
        top_sites(sites, rows, n, top, by_bytes, offsetof(mr_stats_row, bytes), s->all_frames));
    json_object_set_new(
        o, "by_count",
        top_sites(sites, rows, n, top, by_count, offsetof(mr_stats_row, count), s->all_frames));
    json_object_set_new(o, "temporary_by_site",
                        top_sites(sites, rows, n, top, by_temporary,
                                  offsetof(mr_stats_row, temporary), s->all_frames));
}

static json_t* size_histogram(const mr_stats_report* s) {
    json_t* hist = json_array();
    for (unsigned b = 0; b < MR_STATS_NBUCKETS; b++) {
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

static json_t* thread_json(const mr_stats_thread* th, json_t* names) {
    char key[16];
    snprintf(key, sizeof key, "%u", th->tid);
    json_t* t = json_object();
    if (th->process) {
        char* label = mr_procs_report_label(th->process);
        json_object_set_new(t, "process", label ? mr_json_bytes(label) : json_null());
        free(label);
    }
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

// Totals per thread, by tid (each thread named from its own process's capture).
static json_t* thread_table(mt_capture* cap, const mr_stats_report* s) {
    json_t* names = NULL;
    const mr_process* named = NULL;
    json_t* threads = json_array();
    for (size_t i = 0; i < s->nthreads; i++) {
        const mr_stats_thread* th = &s->threads[i];
        if (!names || th->process != named) {
            json_decref(names);
            names = json_object();
            named = th->process;
            mt_capture_threads(named ? named->cap : cap, mr_json_add_thread, names);
        }
        json_array_append_new(threads, thread_json(th, names));
    }
    json_decref(names);
    return threads;
}

// Several captures: each process with its totals.
static json_t* processes_json(const mr_stats_report* s) {
    json_t* a = json_array();
    for (size_t i = 0; i < s->set->n; i++)
        json_array_append_new(a, mr_procs_json_process(&s->set->procs[i]));
    return a;
}

static json_t* build_report(mr_stats_report* s) {
    mt_capture* cap = s->cap;
    const mr_profile* p = s->profile;
    json_t* o = json_object();
    json_object_set_new(o, "capture", mr_json_bytes(s->set ? s->first : mt_capture_path(cap)));
    bool truncated = mt_capture_truncated(cap);
    for (size_t i = 0; s->set && i < s->set->n; i++)
        truncated |= mt_capture_truncated(s->set->procs[i].cap);
    json_object_set_new(o, "status", json_string(truncated ? "truncated" : "complete"));
    if (s->set)
        json_object_set_new(o, "processes", processes_json(s));
    json_object_set_new(o, "allocations", json_integer((json_int_t)p->alloc_count));
    json_object_set_new(o, "bytes_allocated", json_integer((json_int_t)p->alloc_bytes));
    json_object_set_new(o, "frees", json_integer((json_int_t)s->frees));
    // An imported NPU heap counts time in allocation steps, not nanoseconds. Several
    // processes peak each at its own time: their peak is the most they held together, and
    // the sum of their own peaks (what the sites show) is named as one.
    bool steps = s->steps;
    json_object_set_new(o, "peak_bytes",
                        json_integer((json_int_t)(s->set ? s->joint_peak : p->peak_bytes)));
    json_object_set_new(o, steps ? "peak_step" : "peak_time_ns",
                        json_integer(s->set ? s->joint_ts : p->peak_ts));
    if (s->set)
        json_object_set_new(o, "sum_of_peaks_bytes", json_integer((json_int_t)p->peak_bytes));
    json_object_set_new(o, "time_unit", json_string(steps ? "step" : "ns"));
    json_object_set_new(o, "temporary", json_integer((json_int_t)s->temporary));
    json_object_set_new(o, "rows", json_string(s->by_label ? "sites" : "stacks"));
    if (s->by_label) {
        json_t* w = json_array();
        for (size_t i = 0; i < s->nwrappers; i++)
            json_array_append_new(w, mr_json_bytes(s->wrappers[i]));
        json_object_set_new(o, "wrappers", w);
    }
    add_top_tables(o, s);
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
        char v[32];
        if (as_bytes)
            mt_units_format_bytes(INT(s, field), v, sizeof v);
        else
            snprintf(v, sizeof v, "%llu", INT(s, field));
        // The site frame, then the next two frames towards main for context; a row of
        // several stacks shows the site's function only, where they all meet.
        unsigned long long nstacks = INT(s, "stacks");
        json_t* stack = json_object_get(s, "stack");
        size_t k, shown = 0;
        json_t* f;
        bool found = false, process_shown = false;
        const char* site_name = json_string_value(json_object_get(s, "site"));
        json_array_foreach(stack, k, f) {
            const char* fn = json_string_value(json_object_get(f, "function"));
            if (!found && (!fn || !site_name || strcmp(fn, site_name) != 0))
                continue;
            found = true;
            process_shown |= json_is_true(json_object_get(f, "process"));
            if (shown == 0)
                fprintf(out, "  %12s  ", v);
            else
                fprintf(out, "  %12s    from ", "");
            mr_stack_json_fputs_frame(out, f, nstacks <= 1);
            if (nstacks > 1)
                fprintf(out, ", %llu stacks", nstacks);
            fputc('\n', out);
            if (++shown == 3 || nstacks > 1)
                break;
        }
        if (!shown) {
            fprintf(out, "  %12s  ", v);
            if (site_name)
                mr_cxx_names_fputs(out, site_name);
            else
                fputs("??", out);
            fputc('\n', out);
        }
        const char* process = json_string_value(json_object_get(s, "process"));
        if (process && !process_shown) {
            fprintf(out, "  %12s    in ", "");
            mr_escape_fputs_text(out, process);
            fputc('\n', out);
        }
    }
}

// What a row is: a stack, or a site with the bytes of the wrappers it called, which top
// counts as the wrappers' own (their self).
static void print_what(FILE* out, json_t* o) {
    if (strcmp(json_string_value(json_object_get(o, "rows")), "sites") != 0) {
        fputs("rows: allocation stacks\n", out);
        return;
    }
    fputs("rows: sites, the innermost function of a stack that is not an allocation wrapper,\n"
          "counting what its wrappers allocated for it (",
          out);
    json_t* w = json_object_get(o, "wrappers");
    size_t i;
    json_t* name;
    if (!json_array_size(w))
        fputs("none here", out);
    json_array_foreach(w, i, name) {
        if (i == 8) {
            fprintf(out, " and %zu more", json_array_size(w) - i);
            break;
        }
        fputs(i ? ", " : "wrappers: ", out);
        mr_cxx_names_fputs(out, json_string_value(name));
    }
    fputs(")\n", out);
}

static void print_text(FILE* out, json_t* o) {
    char a[32], b[32], c[32];
    unsigned long long allocs = INT(o, "allocations");
    fprintf(out, "allocations: %llu (%s), frees: %llu, temporary: %llu (%.1f%%)\n", allocs,
            mt_units_format_bytes(INT(o, "bytes_allocated"), a, sizeof a), INT(o, "frees"),
            INT(o, "temporary"),
            allocs ? 100.0 * (double)INT(o, "temporary") / (double)allocs : 0.0);
    bool steps = !strcmp(json_string_value(json_object_get(o, "time_unit")), "step");
    bool procs = json_object_get(o, "processes") != NULL;
    fprintf(out, "peak: %s at %s%s\n", mt_units_format_bytes(INT(o, "peak_bytes"), a, sizeof a),
            mr_extent_format_time((int64_t)INT(o, steps ? "peak_step" : "peak_time_ns"), steps, b,
                                  sizeof b),
            procs ? " (the most the processes held at one moment)" : "");
    if (procs)
        fprintf(out, "sum of peaks: %s (each process's own peak, as the sites below)\n",
                mt_units_format_bytes(INT(o, "sum_of_peaks_bytes"), a, sizeof a));
    print_what(out, o);
    print_sites(out, o, "by_peak",
                procs ? "top sites by bytes live at their process's own peak:"
                      : "top sites by bytes live at the peak:",
                "peak_bytes", true);
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
            snprintf(range, sizeof range, "%s - <%s",
                     mt_units_format_bytes(INT(h, "min"), a, sizeof a),
                     mt_units_format_bytes(INT(h, "max") + 1, b, sizeof b));
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
                INT(h, "allocations"),
                mt_units_format_bytes(INT(h, "bytes_allocated"), a, sizeof a), INT(h, "frees"),
                mt_units_format_bytes(INT(h, "live_bytes"), c, sizeof c));
        free(shown);
    }
}

int mr_stats_report_write(const mr_report_to* to, mr_stats_report* r) {
    return mr_json_write_new_report(to, build_report(r),
                                    r->set ? r->first : mt_capture_path(r->cap), print_text);
}
