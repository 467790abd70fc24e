// SPDX-License-Identifier: MIT
// The diff report (diff_report.h): built as one JSON document, printed from it as text,
// as CSV or as it is.
#include "diff_report.h"

#include "cxx_names.h"
#include "escape.h"
#include "json.h"
#include "messages.h"
#include "output_file.h"
#include "sites.h"

#include "memtrace/units.h"

#include <stdlib.h>
#include <string.h>

static const char* status_of(const mr_diff_row* r) {
    if (!r->in[MR_DIFF_BASE])
        return "added";
    if (!r->in[MR_DIFF_NEW])
        return "removed";
    for (int m = 0; m < MR_DIFF_NMETRICS; m++)
        if (mr_diff_delta(r, (mr_diff_metric)m))
            return "changed";
    return "unchanged";
}

static json_t* triple(uint64_t base, uint64_t next, int64_t delta) {
    return json_pack("{s:I,s:I,s:I}", "base", (json_int_t)base, "new", (json_int_t)next, "delta",
                     (json_int_t)delta);
}

static void add_metrics(json_t* o, const mr_diff_row* r) {
    for (int m = 0; m < MR_DIFF_NMETRICS; m++)
        json_object_set_new(o, mr_diff_metric_name((mr_diff_metric)m),
                            triple(r->v[MR_DIFF_BASE][m], r->v[MR_DIFF_NEW][m],
                                   mr_diff_delta(r, (mr_diff_metric)m)));
}

// counted in functions_total, stacks_total).
static json_t* build_report(const mr_diff_report* d) {
    const mr_diff *fns = d->functions, *stacks = d->stacks;
    size_t top = d->top;
    json_t* o = json_object();
    json_object_set_new(o, "base_capture", mr_json_bytes(d->base_capture));
    json_object_set_new(o, "new_capture", mr_json_bytes(d->new_capture));
    json_object_set_new(o, "device", json_string(d->npu ? "npu" : "cpu"));
    json_t* totals = json_object();
    add_metrics(totals, d->totals);
    if (d->held) {
        uint64_t b = d->held[MR_DIFF_BASE], n = d->held[MR_DIFF_NEW];
        json_object_set_new(totals, mr_diff_metric_name(MR_DIFF_RUNTIME_HELD_BYTES),
                            triple(b, n, n >= b ? (int64_t)(n - b) : -(int64_t)(b - n)));
    }
    json_object_set_new(o, "totals", totals);
    json_t* arr;
    if (d->processes) { // every process, those of one run only named so
        arr = json_array();
        for (size_t i = 0; i < d->processes->n; i++) {
            const mr_diff_row* r = &d->processes->rows[i];
            json_t* p = json_object();
            json_object_set_new(p, "process", mr_json_bytes(r->key[0]));
            json_object_set_new(p, "status",
                                json_string(!r->in[MR_DIFF_BASE]  ? "only_in_new"
                                            : !r->in[MR_DIFF_NEW] ? "only_in_base"
                                                                  : status_of(r)));
            add_metrics(p, r);
            json_array_append_new(arr, p);
        }
        json_object_set_new(o, "processes", arr);
    }
    size_t k0 = d->processes ? 1 : 0; // a function's key: (process,) name, file
    arr = json_array();
    for (size_t i = 0; i < fns->n && i < top; i++) {
        const mr_diff_row* r = &fns->rows[i];
        json_t* f = json_object();
        if (k0)
            json_object_set_new(f, "process", mr_json_bytes(r->key[0]));
        json_object_set_new(f, "function", mr_json_bytes(r->key[k0]));
        json_object_set_new(f, "file", mr_json_bytes(r->key[k0 + 1]));
        json_object_set_new(f, "status", json_string(status_of(r)));
        add_metrics(f, r);
        json_array_append_new(arr, f);
    }
    json_object_set_new(o, "functions", arr);
    json_object_set_new(o, "functions_total", json_integer((json_int_t)fns->n));
    if (d->passed) { // as top says it, only where it happened
        json_t* passed = json_array();
        json_array_append_new(passed, json_string(MR_SITES_PLUMBING));
        json_object_set_new(o, "passed", passed);
    }
    arr = json_array();
    for (size_t i = 0; i < stacks->n && i < top; i++) {
        const mr_diff_row* r = &stacks->rows[i];
        json_t* s = json_object();
        json_t* names = json_array();
        for (size_t k = 0; k < r->nkey; k++)
            json_array_append_new(names, mr_json_bytes(r->key[k]));
        json_object_set_new(s, "stack", names);
        json_object_set_new(s, "status", json_string(status_of(r)));
        add_metrics(s, r);
        json_array_append_new(arr, s);
    }
    json_object_set_new(o, "stacks", arr);
    json_object_set_new(o, "stacks_total", json_integer((json_int_t)stacks->n));
    return o;
}

#define METRIC(obj, name, which)                                                                   \
    json_integer_value(json_object_get(json_object_get(obj, name), which))

// "+1.50 MiB", "-512 B", "+3" (a count), "0" for no change.
static char* signed_amount(int64_t d, bool bytes, char* buf, size_t len) {
    uint64_t mag = d < 0 ? (uint64_t)-d : (uint64_t)d;
    char a[32];
    if (bytes)
        mt_units_format_bytes(mag, a, sizeof a);
    else
        snprintf(a, sizeof a, "%llu", (unsigned long long)mag);
    snprintf(buf, len, "%s%s", d > 0 ? "+" : d < 0 ? "-" : "", d ? a : "0");
    return buf;
}

static void print_totals(FILE* out, json_t* totals) {
    fprintf(out, "%-18s %14s %14s %14s\n", "", "base", "new", "change");
    static const mr_diff_metric shown[] = {MR_DIFF_PEAK_BYTES, MR_DIFF_ALLOC_BYTES,
                                           MR_DIFF_ALLOCATIONS, MR_DIFF_LEAKED_BYTES,
                                           MR_DIFF_RUNTIME_HELD_BYTES};
    for (size_t i = 0; i < sizeof shown / sizeof *shown; i++) {
        mr_diff_metric m = shown[i];
        const char* name = mr_diff_metric_name(m);
        if (!json_object_get(totals, name))
            continue;
        bool bytes = mr_diff_metric_is_bytes(m);
        json_int_t b = METRIC(totals, name, "base"), n = METRIC(totals, name, "new"),
                   d = METRIC(totals, name, "delta");
        char sb[32], sn[32], sd[48], pct[32] = "";
        if (bytes) {
            mt_units_format_bytes((uint64_t)b, sb, sizeof sb);
            mt_units_format_bytes((uint64_t)n, sn, sizeof sn);
        } else {
            snprintf(sb, sizeof sb, "%lld", (long long)b);
            snprintf(sn, sizeof sn, "%lld", (long long)n);
        }
        if (b && d)
            snprintf(pct, sizeof pct, " (%+.1f%%)", 100.0 * (double)d / (double)b);
        fprintf(out, "%-18s %14s %14s %14s%s\n", name, sb, sn,
                signed_amount(d, bytes, sd, sizeof sd), pct);
    }
}

// A stack's row is cut past this many bytes of names: its innermost frames, where the
// change is, come first ("site < caller < ... < main"), so a cut loses the outermost. Its
// functions are named without their parameters (the JSON has them whole).
#define STACK_ROW_MAX 240

static void print_stack(FILE* out, json_t* stack) {
    size_t len = 0, n = json_array_size(stack);
    for (size_t k = n; k-- > 0;) {
        const char* name = json_string_value(json_array_get(stack, k));
        char* shown = name ? mr_cxx_names_display_dup(name) : NULL;
        const char* fn = shown ? shown : name ? name : "??";
        size_t flen = mr_cxx_names_params_at(fn);
        if (k + 1 < n && len + flen > STACK_ROW_MAX) {
            free(shown);
            fputs(" < ...", out);
            return;
        }
        fputs(k + 1 < n ? " < " : "", out);
        char* part = strndup(fn, flen);
        mr_escape_fputs_text(out, part ? part : fn);
        free(part);
        free(shown);
        len += flen + 3;
    }
}

// One changed row: the four changes, then its name.
static void print_row(FILE* out, json_t* r) {
    char c[MR_DIFF_NMETRICS][48];
    for (int m = 0; m < MR_DIFF_NMETRICS; m++)
        signed_amount(METRIC(r, mr_diff_metric_name((mr_diff_metric)m), "delta"),
                      mr_diff_metric_is_bytes((mr_diff_metric)m), c[m], sizeof c[m]);
    fprintf(out, "  %12s %12s %8s %12s  ", c[0], c[1], c[2], c[3]);
    json_t* stack = json_object_get(r, "stack");
    if (stack) {
        print_stack(out, stack);
    } else if (json_object_get(r, "function")) {
        mr_cxx_names_fputs(out, json_string_value(json_object_get(r, "function")));
        const char* file = json_string_value(json_object_get(r, "file"));
        if (file) {
            fputs(" (", out);
            mr_escape_fputs_text(out, file);
            fputc(')', out);
        }
    }
    const char* process = json_string_value(json_object_get(r, "process"));
    if (process && !stack) {
        fputs(json_object_get(r, "function") ? " in " : "", out);
        mr_escape_fputs_text(out, process);
    }
    const char* status = json_string_value(json_object_get(r, "status"));
    if (!strcmp(status, "added") || !strcmp(status, "removed"))
        fprintf(out, " [%s]", !strcmp(status, "added") ? "new" : "gone");
    else if (!strncmp(status, "only_in_", 8))
        fprintf(out, " [only in %s]", status + 8);
    fputc('\n', out);
}

// The changed rows of a list; unchanged ones are counted, not shown.
// What a function's self took from the plumbing it passed, as top says it.
static void print_passed(FILE* out, json_t* o) {
    json_t* passed = json_object_get(o, "passed");
    for (size_t i = 0; i < json_array_size(passed); i++) {
        fputs("past ", out);
        mr_escape_fputs_text(out, json_string_value(json_array_get(passed, i)));
        fputs(": what its functions allocate is their callers' self\n", out);
    }
}

static void print_list(FILE* out, json_t* o, const char* what) {
    json_t* list = json_object_get(o, what);
    char total_key[32];
    snprintf(total_key, sizeof total_key, "%s_total", what);
    size_t total = (size_t)json_integer_value(json_object_get(o, total_key)), shown = 0, i;
    if (!strcmp(what, "processes"))
        total = json_array_size(list);
    json_t* r;
    json_array_foreach(list, i, r) {
        if (strcmp(json_string_value(json_object_get(r, "status")), "unchanged") != 0) {
            if (!shown++) {
                fprintf(out, "\n%s, largest change first:\n", what);
                if (!strcmp(what, "functions"))
                    print_passed(out, o);
                fprintf(out, "  %12s %12s %8s %12s  %s\n", "peak", "allocated", "allocs", "leaked",
                        !strcmp(what, "stacks")      ? "stack (innermost first)"
                        : !strcmp(what, "processes") ? "process"
                                                     : "function (file)");
            }
            print_row(out, r);
        }
    }
    if (!shown)
        fprintf(out, "\nno %s changed (%zu compared)\n", what, total);
    else if (json_array_size(list) < total)
        fprintf(out, "(the first %zu of %zu %s; --top 0 shows all)\n", json_array_size(list), total,
                what);
}

static void print_text(FILE* out, json_t* o) {
    fputs("base: ", out);
    mr_escape_fputs_text(out, json_string_value(json_object_get(o, "base_capture")));
    fputs("\nnew:  ", out);
    mr_escape_fputs_text(out, json_string_value(json_object_get(o, "new_capture")));
    fputs("\n\n", out);
    print_totals(out, json_object_get(o, "totals"));
    if (json_object_get(o, "processes")) {
        fputs("(peak_bytes of processes: each process at its own peak, added; memreport\n"
              "summary DIR gives the most they held at one moment)\n",
              out);
        print_list(out, o, "processes");
    }
    print_list(out, o, "functions");
    print_list(out, o, "stacks");
}

// ---- CSV (msMemScope's memory_compare columns)

static void csv_number(FILE* out, json_t* metric, const char* which, bool present) {
    fputc(',', out);
    if (present)
        fprintf(out, "%lld", (long long)json_integer_value(json_object_get(metric, which)));
    else
        fputs("N/A", out);
}

static void csv_row(FILE* out, const char* event, const char* name, const char* device, json_t* r) {
    const char* status = json_string_value(json_object_get(r, "status"));
    bool in_base = !status || (strcmp(status, "added") && strcmp(status, "only_in_new"));
    bool in_new = !status || (strcmp(status, "removed") && strcmp(status, "only_in_base"));
    json_t* peak = json_object_get(r, "peak_bytes");
    fprintf(out, "%s,", event);
    mr_escape_fputs_csv(out, name);
    fprintf(out, ",%s", device);
    csv_number(out, peak, "base", in_base);
    csv_number(out, peak, "new", in_new);
    csv_number(out, json_object_get(r, "allocated_bytes"), "new", in_new);
    csv_number(out, peak, "delta", true);
    fputs("\r\n", out);
}

static void print_csv(FILE* out, json_t* o) {
    const char* device = json_string_value(json_object_get(o, "device"));
    fputs("Event,Name,Device ID,Base,Compare,Allocated Memory(byte),Diff Memory(byte)\r\n", out);
    csv_row(out, "TOTAL", "(all)", device, json_object_get(o, "totals"));
    size_t i;
    json_t* r;
    json_array_foreach(json_object_get(o, "processes"), i, r) {
        csv_row(out, "PROCESS", json_string_value(json_object_get(r, "process")), device, r);
    }
    json_array_foreach(json_object_get(o, "functions"), i, r) {
        const char* file = json_string_value(json_object_get(r, "file"));
        const char* fn = json_string_value(json_object_get(r, "function"));
        char* name = malloc(strlen(fn) + (file ? strlen(file) + 4 : 1));
        if (!name)
            continue;
        sprintf(name, file ? "%s (%s)" : "%s", fn, file);
        csv_row(out, "FUNCTION", name, device, r);
        free(name);
    }
    json_array_foreach(json_object_get(o, "stacks"), i, r) {
        char* name = NULL;
        size_t len = 0, k;
        FILE* mem = open_memstream(&name, &len);
        json_t* f;
        json_array_foreach(json_object_get(r, "stack"), k, f) {
            fprintf(mem, "%s%s", k ? ";" : "", json_string_value(f));
        }
        if (fclose(mem) == 0)
            csv_row(out, "STACK", name, device, r);
        free(name);
    }
}

int mr_diff_report_write(const mr_report_to* to, const mr_diff_report* r) {
    json_t* report = build_report(r);
    if (!report) {
        mr_messages_error(r->new_capture, "out of memory");
        return MR_EXIT_IO;
    }
    int rc;
    if (!r->csv) {
        rc = mr_json_write_report(to, report, print_text);
    } else {
        mr_output_file out;
        rc = mr_output_file_open(&out, to->output, to->force);
        if (!rc) {
            print_csv(out.fp, report);
            rc = mr_output_file_commit(&out);
        }
    }
    json_decref(report);
    return rc;
}
