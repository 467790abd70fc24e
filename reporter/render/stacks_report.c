// SPDX-License-Identifier: MIT
// The stacks report (stacks_report.h): built as one JSON document, printed from it as text
// or as it is.
#include "stacks_report.h"

#include "escape.h"
#include "json.h"
#include "procs_json.h"
#include "stack_json.h"

#include "memtrace/units.h"

static json_t* frames_json(const mr_symbols* sy, const mr_stacks_entry* sh) {
    if (sh->process)
        sy = sh->process->sym;
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
    if (sh->process) // the process is the outermost frame, as in the flame graph
        json_array_append_new(arr, mr_procs_json_frame(sh->process));
    return arr;
}

// Each process of several captures with its totals.
static json_t* processes_json(const mr_stacks_report* r) {
    json_t* arr = json_array();
    for (size_t i = 0; i < r->set->n; i++) {
        json_t* o = mr_procs_json_process(&r->set->procs[i]);
        const mr_profile* p = &r->profiles[i];
        json_object_set_new(o, "bytes_allocated", json_integer((json_int_t)p->alloc_bytes));
        json_object_set_new(o, "allocations", json_integer((json_int_t)p->alloc_count));
        json_object_set_new(o, "peak_bytes", json_integer((json_int_t)p->peak_bytes));
        json_array_append_new(arr, o);
    }
    return arr;
}

// The report of the first `top` of the n stacks of list (all of them still in the totals).
static json_t* build(const mr_stacks_report* r) {
    const mr_symbols* sy = r->sym;
    const mr_stacks_entry* list = r->stacks;
    const mr_profile* p = r->profile;
    size_t n = r->n;
    json_t* o = json_object();
    json_object_set_new(o, "capture", mr_json_bytes(r->capture));
    json_object_set_new(o, "all_frames", json_boolean(r->all_frames));
    json_object_set_new(o, "bytes_allocated", json_integer((json_int_t)p->alloc_bytes));
    json_object_set_new(o, "allocations", json_integer((json_int_t)p->alloc_count));
    json_object_set_new(o, "peak_bytes", json_integer((json_int_t)p->peak_bytes));
    json_object_set_new(o, "stacks_total", json_integer((json_int_t)n));
    if (r->set) // the peak is then the sum of each process's own
        json_object_set_new(o, "processes", processes_json(r));
    json_t* arr = json_array();
    for (size_t i = 0; i < n && i < r->top; i++) {
        json_t* s = json_object();
        const mr_profile_row* st = &list[i].st;
        json_object_set_new(s, "bytes", json_integer((json_int_t)st->alloc_bytes));
        json_object_set_new(s, "count", json_integer((json_int_t)st->alloc_count));
        json_object_set_new(s, "peak_bytes", json_integer((json_int_t)st->live_bytes));
        json_object_set_new(s, "leaked_bytes", json_integer((json_int_t)st->end_bytes));
        json_object_set_new(s, "leaked_count", json_integer((json_int_t)st->end_blocks));
        const mr_symbols* esy = list[i].process ? list[i].process->sym : sy;
        json_object_set_new(s, "truncated",
                            json_boolean(list[i].leaf && mr_symbols_truncated(esy, list[i].leaf)));
        json_object_set_new(s, "frames", frames_json(sy, &list[i]));
        json_array_append_new(arr, s);
    }
    json_object_set_new(o, "stacks", arr);
    return o;
}

static void print_text(FILE* out, json_t* o) {
    char a[32], b[32], c[32];
    size_t i, j;
    json_t *s, *f;
#define U64(obj, k) (uint64_t) json_integer_value(json_object_get(obj, k))
    size_t shown_n = json_array_size(json_object_get(o, "stacks"));
    json_t* procs = json_object_get(o, "processes");
    fprintf(out, "%llu distinct allocation stacks, %s in %llu allocations, %s %s\n",
            (unsigned long long)U64(o, "stacks_total"),
            mt_units_format_bytes(U64(o, "bytes_allocated"), a, sizeof a),
            (unsigned long long)U64(o, "allocations"), procs ? "sum of peaks" : "peak",
            mt_units_format_bytes(U64(o, "peak_bytes"), b, sizeof b));
    json_array_foreach(procs, i, s) {
        fputs("  ", out);
        mr_escape_fputs_text(out, json_string_value(json_object_get(s, "process")));
        fprintf(out, ": %s in %llu allocations, peak %s\n",
                mt_units_format_bytes(U64(s, "bytes_allocated"), a, sizeof a),
                (unsigned long long)U64(s, "allocations"),
                mt_units_format_bytes(U64(s, "peak_bytes"), b, sizeof b));
    }
    if (shown_n < U64(o, "stacks_total"))
        fprintf(out, "(top %zu of %llu by bytes allocated; --top 0 shows all)\n", shown_n,
                (unsigned long long)U64(o, "stacks_total"));
    json_array_foreach(json_object_get(o, "stacks"), i, s) {
        fprintf(out, "\n#%zu %s in %llu allocations; at peak %s; leaked %s in %llu%s\n", i + 1,
                mt_units_format_bytes(U64(s, "bytes"), a, sizeof a),
                (unsigned long long)U64(s, "count"),
                mt_units_format_bytes(U64(s, "peak_bytes"), b, sizeof b),
                mt_units_format_bytes(U64(s, "leaked_bytes"), c, sizeof c),
                (unsigned long long)U64(s, "leaked_count"),
                json_is_true(json_object_get(s, "truncated")) ? " (stack truncated)" : "");
        json_t* frames = json_object_get(s, "frames");
        if (json_array_size(frames) == 0)
            fputs("    (no stack)\n", out);
        json_array_foreach(frames, j, f) {
            fprintf(out, "    %s", json_is_true(json_object_get(f, "inlined")) ? "(inlined) " : "");
            mr_stack_json_fputs_frame(out, f, true);
            fputc('\n', out);
        }
    }
#undef U64
}

int mr_stacks_report_write(const mr_report_to* to, const mr_stacks_report* r) {
    json_t* o = build(r);
    int rc = mr_json_write_report(to, o, print_text);
    json_decref(o);
    return rc;
}
