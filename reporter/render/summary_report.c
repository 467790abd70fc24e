// SPDX-License-Identifier: MIT
// The summary report (summary_report.h): built as one JSON document, printed from it as
// text or as it is.
#include "summary_report.h"

#include "escape.h"
#include "extent.h"
#include "json.h"

#include "memtrace/schema.h"
#include "memtrace/units.h"

#include <stdlib.h>
#include <string.h>

static int add_call_count(void* ud, const char* name, int64_t count) {
    char* key = name ? mr_escape(name, strlen(name), MR_ESCAPE_UTF8) : NULL;
    if (key)
        json_object_set_new(ud, key, json_integer(count));
    free(key);
    return 0;
}

// The calls per entry point; what cannot be read is left out, as a capture may lack them.
static json_t* calls_object(mt_capture* cap) {
    json_t* calls = json_object();
    mt_capture_call_counts(cap, add_call_count, calls);
    return calls;
}

// An imported NPU log has no process: its source log, format and number of steps instead.
static void npu_origin(json_t* o, mt_capture* cap, const mr_heap_totals* r) {
    char* source = mt_capture_meta_text(cap, "source");
    json_object_set_new(o, "source", source ? mr_json_bytes(source) : json_null());
    free(source);
    char* format = mt_capture_meta_text(cap, "format");
    json_object_set_new(
        o, "format",
        json_string(format && !strcmp(format, "npu-log-legacy") ? "legacy" : "current"));
    free(format);
    json_object_set_new(o, "steps", json_integer(mr_extent_of(cap, r->heap).end));
}

static void process_origin(json_t* o, mt_capture* cap, const mr_heap_totals* r) {
    json_object_set_new(o, "pid", json_integer(mt_capture_meta_int(cap, "pid", 0)));
    char* cmd = mt_capture_meta_text(cap, "cmdline");
    json_t* cmdline = mr_json_loads_bytes(cmd);
    free(cmd);
    json_object_set_new(o, "command", json_is_array(cmdline) ? cmdline : json_array());
    if (cmdline && !json_is_array(cmdline))
        json_decref(cmdline);
    int64_t duration = mt_capture_meta_int(cap, "duration_ns", -1);
    json_object_set_new(o, "duration_ns", json_integer(duration >= 0 ? duration : r->last_ts));
}

// One heap of a python process, for its line.
static json_t* heap_object(const mr_heap_totals* h) {
    return json_pack("{s:I, s:I, s:I, s:I, s:I, s:I}", "allocations", (json_int_t)h->allocations,
                     "bytes_allocated", (json_int_t)h->bytes_allocated, "peak_bytes",
                     (json_int_t)h->peak_bytes, "peak_time_ns", (json_int_t)h->peak_ts,
                     "live_bytes", (json_int_t)h->live_bytes, "live_blocks",
                     (json_int_t)h->live_blocks);
}

static json_t* build_summary(const mr_summary* s) {
    mt_capture* cap = s->cap;
    const mr_heap_totals* r = s->totals;
    bool npu = r->heap == MT_HEAP_NPU;
    json_t* o = json_object();
    json_object_set_new(o, "capture", mr_json_bytes(mt_capture_path(cap)));
    json_object_set_new(o, "status",
                        json_string(mt_capture_truncated(cap) ? "truncated" : "complete"));
    if (npu)
        npu_origin(o, cap, r);
    else
        process_origin(o, cap, r);
    if (!npu) // a log's one synthetic thread says nothing
        json_object_set_new(o, "threads", json_integer((json_int_t)s->threads));
    json_object_set_new(o, "events", json_integer((json_int_t)r->events));
    json_object_set_new(o, "allocations", json_integer((json_int_t)r->allocations));
    json_object_set_new(o, "frees", json_integer((json_int_t)r->frees));
    // Start and stop (MEMTRACE_START, MEMTRACE_SIGNAL, --delay): a free that matches no
    // recorded block is of one allocated while recording was off: ignored, not unmatched.
    int64_t windows = mt_capture_meta_int(cap, "recording_windows", -1);
    json_object_set_new(o, "unmatched_frees",
                        json_integer(windows >= 0 ? 0 : (json_int_t)r->unmatched_frees));
    if (windows >= 0) {
        json_object_set_new(o, "recording_windows", json_integer(windows));
        json_object_set_new(o, "ignored_frees", json_integer((json_int_t)r->unmatched_frees));
    }
    // MEMTRACE_MAX_MB: no event after the capture reached it (calls still counted).
    int64_t cut_mb = mt_capture_meta_int(cap, "events_stopped_at_mb", 0);
    if (cut_mb)
        json_object_set_new(o, "events_stopped_at_mb", json_integer(cut_mb));
    // memtrace_report_alloc calls whose size was beyond any address space: not recorded.
    int64_t ignored = mt_capture_meta_int(cap, "reports_ignored", 0);
    if (ignored > 0)
        json_object_set_new(o, "reports_ignored", json_integer(ignored));
    json_object_set_new(o, "bytes_allocated", json_integer((json_int_t)r->bytes_allocated));
    json_object_set_new(o, "peak_bytes", json_integer((json_int_t)r->peak_bytes));
    // An imported NPU heap counts time in allocation steps, not nanoseconds.
    json_object_set_new(o, npu ? "peak_step" : "peak_time_ns", json_integer(r->peak_ts));
    json_object_set_new(o, "time_unit", json_string(npu ? "step" : "ns"));
    // The program's leaks: what the C runtime holds for itself is counted apart.
    uint64_t held_bytes = s->runtime_held ? s->held_bytes : 0,
             held_blocks = s->runtime_held ? s->held_blocks : 0;
    json_object_set_new(o, "leaked_bytes", json_integer((json_int_t)(r->live_bytes - held_bytes)));
    json_object_set_new(o, "leaked_allocations",
                        json_integer((json_int_t)(r->live_blocks - held_blocks)));
    if (!npu) // the tracer counts calls per entry point; a log has none
        json_object_set_new(o, "calls", calls_object(cap));
    // Set when the program died of a fatal signal and the tracer saved the capture first.
    int64_t sig = mt_capture_meta_int(cap, "terminated_by_signal", 0);
    if (sig)
        json_object_set_new(o, "terminated_by_signal", json_integer(sig));
    // memtrace --pid: recording began in a running process, whose older blocks' frees are
    // the unmatched ones (not errors); what is left was live at the detach or the exit.
    if (mt_capture_meta_int(cap, "attached", 0))
        json_object_set_new(o, "attached", json_true());
    if (s->scanned) { // the leak scan's kinds of the leaked blocks, and those live after it
        json_t* kinds = json_object();
        uint64_t left = r->live_bytes - held_bytes, left_blocks = r->live_blocks - held_blocks;
        for (int k = MT_LEAK_DEFINITE; k <= MT_LEAK_COUNT_; k++) {
            int kind = k < MT_LEAK_COUNT_ ? k : MT_LEAK_UNCLASSIFIED;
            uint64_t b = kind ? s->kind_bytes[kind] : left,
                     n = kind ? s->kind_blocks[kind] : left_blocks;
            json_object_set_new(
                kinds, mt_leak_kind_name(kind),
                json_pack("{s:I, s:I}", "bytes", (json_int_t)b, "blocks", (json_int_t)n));
            left -= b < left ? b : left;
            left_blocks -= n < left_blocks ? n : left_blocks;
        }
        json_object_set_new(o, "leak_kinds", kinds);
    } else if (s->no_scan) {
        json_object_set_new(o, "no_leak_kinds", mr_json_bytes(s->no_scan));
    }
    if (s->runtime_held) {
        json_object_set_new(o, "runtime_held_bytes", json_integer((json_int_t)s->held_bytes));
        json_object_set_new(o, "runtime_held_allocations",
                            json_integer((json_int_t)s->held_blocks));
    }
    if (s->mmap) // the program's anonymous mappings; its file mappings are only counted
        json_object_set_new(
            o, "mmap",
            json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:I}", "allocations",
                      (json_int_t)s->mmap->allocations, "peak_bytes",
                      (json_int_t)s->mmap->peak_bytes, "peak_time_ns", (json_int_t)s->mmap->peak_ts,
                      "live_bytes", (json_int_t)s->mmap->live_bytes, "live_mappings",
                      (json_int_t)s->mmap->live_blocks, "file_mappings",
                      (json_int_t)mt_capture_meta_int(cap, "mmap_file_count", 0), "file_bytes",
                      (json_int_t)mt_capture_meta_int(cap, "mmap_file_bytes", 0)));
    if (s->libc) // a python process's libc heap: malloc and its kin
        json_object_set_new(o, "libc", heap_object(s->libc));
    if (s->python) // CPython's own allocators (PyMem_Malloc, PyObject_Malloc)
        json_object_set_new(o, "python", heap_object(s->python));
    if (s->pool) { // the program's own pool (memtrace_report_alloc), under its name
        json_t* pool = heap_object(s->pool);
        json_object_set_new(pool, "name", mr_json_bytes(s->pool_name));
        json_object_set_new(o, "pool", pool);
    }
    if (s->total) // the program's heaps together: the process's own view
        json_object_set_new(o, "total",
                            json_pack("{s:I, s:I, s:I, s:s}", "peak_bytes",
                                      (json_int_t)s->total->peak_bytes, "peak_time_ns",
                                      (json_int_t)s->total->peak_ts, "live_bytes",
                                      (json_int_t)s->total->live_bytes, "heaps",
                                      s->total_of ? s->total_of : "libc and python"));
    char* python = mt_capture_meta_text(cap, "python_allocators");
    if (python) // the CPython seen, and whether its allocators were recorded
        json_object_set_new(o, "python_allocators", mr_json_bytes(python));
    free(python);
    return o;
}

// Where the capture came from: the NPU log it was imported from, or the traced command.
static void print_origin(FILE* out, json_t* s, bool steps) {
    char a[32];
    size_t i;
    json_t* v;
    if (steps) {
        fputs("source log:   ", out);
        mr_escape_fputs_text(out, json_string_value(json_object_get(s, "source")));
        fprintf(out, "\nformat:       NPU memory-usage log (%s)\n",
                json_string_value(json_object_get(s, "format")));
        fprintf(out, "steps:        %lld\n",
                (long long)json_integer_value(json_object_get(s, "steps")));
    } else {
        fputs("command:     ", out);
        json_array_foreach(json_object_get(s, "command"), i, v) {
            fputc(' ', out);
            mr_escape_fputs_text(out, json_string_value(v));
        }
        fprintf(out, "\npid:          %lld\n",
                (long long)json_integer_value(json_object_get(s, "pid")));
        fprintf(out, "duration:     %s\n",
                mt_units_format_duration(json_integer_value(json_object_get(s, "duration_ns")), a,
                                         sizeof a));
    }
}

// The program's anonymous mappings (the mmap heap), and its file mappings counted.
static void print_mmap(FILE* out, json_t* m) {
    char a[32], b[32], c[32];
#define MINT(k) (unsigned long long)json_integer_value(json_object_get(m, k))
    mt_units_format_bytes(MINT("peak_bytes"), a, sizeof a);
    mt_units_format_duration(json_integer_value(json_object_get(m, "peak_time_ns")), b, sizeof b);
    fprintf(out, "mmap:         peak %s at %s, live at the end %s in %llu mapping%s\n", a, b,
            mt_units_format_bytes(MINT("live_bytes"), c, sizeof c), MINT("live_mappings"),
            MINT("live_mappings") == 1 ? "" : "s");
    fprintf(out, "file mmaps:   %llu (%s, not in the mmap heap)\n", MINT("file_mappings"),
            mt_units_format_bytes(MINT("file_bytes"), a, sizeof a));
#undef MINT
}

// One heap of a process with several (heap_object's): "libc", "python" or "pool" (shown
// under the name the program gave it).
static void print_heap(FILE* out, json_t* s, const char* key) {
    json_t* h = json_object_get(s, key);
    if (!h)
        return;
    const char* name = json_string_value(json_object_get(h, "name"));
    name = name ? name : key;
    char a[32], b[32], c[32];
#define HINT(k) (unsigned long long)json_integer_value(json_object_get(h, k))
    mr_escape_fputs_text(out, name);
    fprintf(out, ":%*speak %s at %s, live at the end %s in %llu block%s (%llu allocations, --heap ",
            strlen(name) < 13 ? (int)(13 - strlen(name)) : 1, "",
            mt_units_format_bytes(HINT("peak_bytes"), a, sizeof a),
            mt_units_format_duration((int64_t)HINT("peak_time_ns"), b, sizeof b),
            mt_units_format_bytes(HINT("live_bytes"), c, sizeof c), HINT("live_blocks"),
            HINT("live_blocks") == 1 ? "" : "s", HINT("allocations"));
    mr_escape_fputs_text(out, name);
    fputs(")\n", out);
#undef HINT
}

// A process with several heaps: each of them, all together, and the CPython seen.
static void print_python(FILE* out, json_t* s) {
    print_heap(out, s, "libc");
    print_heap(out, s, "python");
    print_heap(out, s, "pool");
    json_t* t = json_object_get(s, "total");
    char a[32], b[32], c[32];
    if (t)
        fprintf(out, "total:        peak %s at %s, live at the end %s (%s)\n",
                mt_units_format_bytes(
                    (uint64_t)json_integer_value(json_object_get(t, "peak_bytes")), a, sizeof a),
                mt_units_format_duration(json_integer_value(json_object_get(t, "peak_time_ns")), b,
                                         sizeof b),
                mt_units_format_bytes(
                    (uint64_t)json_integer_value(json_object_get(t, "live_bytes")), c, sizeof c),
                json_string_value(json_object_get(t, "heaps")));
    const char* seen = json_string_value(json_object_get(s, "python_allocators"));
    if (seen) {
        fputs("pymalloc:     ", out);
        mr_escape_fputs_text(out, seen);
        fputc('\n', out);
    }
}

static void print_text(FILE* out, json_t* s) {
    char a[32], b[32], c[32];
    fputs("capture:      ", out);
    mr_escape_fputs_text(out, json_string_value(json_object_get(s, "capture")));
    fprintf(out, " (%s)\n", json_string_value(json_object_get(s, "status")));
    bool steps = !strcmp(json_string_value(json_object_get(s, "time_unit")), "step");
    print_origin(out, s, steps);
    mr_extent_format_time(
        json_integer_value(json_object_get(s, steps ? "peak_step" : "peak_time_ns")), steps, b,
        sizeof b);
#define INT(k) (unsigned long long)json_integer_value(json_object_get(s, k))
    if (!steps)
        fprintf(out, "threads:      %llu\n", INT("threads"));
    fprintf(out, "events:       %llu\n", INT("events"));
    fprintf(out, "allocations:  %llu (%s in total)\n", INT("allocations"),
            mt_units_format_bytes(INT("bytes_allocated"), a, sizeof a));
    fprintf(out, "frees:        %llu\n", INT("frees"));
    if (json_is_true(json_object_get(s, "attached")))
        fprintf(out,
                "attached:     to a running process; %llu frees of blocks allocated before "
                "were ignored\n",
                INT("unmatched_frees"));
    if (json_object_get(s, "recording_windows"))
        fprintf(out,
                "recording:    %llu window%s (start and stop); %llu frees of blocks allocated "
                "while stopped were ignored\n",
                INT("recording_windows"), INT("recording_windows") == 1 ? "" : "s",
                INT("ignored_frees"));
    if (json_object_get(s, "events_stopped_at_mb"))
        fprintf(out,
                "cut:          events stopped when the capture reached %llu MiB "
                "(MEMTRACE_MAX_MB); later calls were only counted\n",
                INT("events_stopped_at_mb"));
    if (json_object_get(s, "reports_ignored"))
        fprintf(out,
                "ignored:      %llu memtrace_report_alloc call%s of over 2^56 bytes (more than "
                "any address space), not recorded\n",
                INT("reports_ignored"), INT("reports_ignored") == 1 ? "" : "s");
    fprintf(out, "peak:         %s at %s\n", mt_units_format_bytes(INT("peak_bytes"), c, sizeof c),
            b);
    // The program's leaks, then what the C runtime holds for itself (runtime_held.h).
    unsigned long long held = INT("runtime_held_bytes"),
                       held_blocks = INT("runtime_held_allocations");
    unsigned long long own_blocks = INT("leaked_allocations");
    fprintf(out, "leaked:       %s in %llu block%s",
            mt_units_format_bytes(INT("leaked_bytes"), a, sizeof a), own_blocks,
            own_blocks == 1 ? "" : "s");
    if (held_blocks)
        fprintf(out, " (+%s in %llu block%s held by the C runtime)",
                mt_units_format_bytes(held, c, sizeof c), held_blocks, held_blocks == 1 ? "" : "s");
    fputc('\n', out);
    const char* kind;
    json_t* k;
    json_object_foreach(json_object_get(s, "leak_kinds"), kind, k) {
        unsigned long long n = (unsigned long long)json_integer_value(json_object_get(k, "blocks"));
        if (!n && !strcmp(kind, "unclassified"))
            continue;
        char name[32];
        snprintf(name, sizeof name, "%s:", kind);
        for (char* u = name; *u; u++)
            *u = *u == '_' ? ' ' : *u;
        fprintf(out, "  %-16s %s in %llu block%s\n", name,
                mt_units_format_bytes((uint64_t)json_integer_value(json_object_get(k, "bytes")), a,
                                      sizeof a),
                n, n == 1 ? "" : "s");
    }
    const char* no_scan = json_string_value(json_object_get(s, "no_leak_kinds"));
    if (no_scan) {
        fputs("  no leak kinds (not classified): ", out);
        mr_escape_fputs_text(out, no_scan);
        fputc('\n', out);
    }
    json_t* m = json_object_get(s, "mmap");
    if (m)
        print_mmap(out, m);
    print_python(out, s);
#undef INT
    if (steps)
        return;
    const char* key;
    json_t* v;
    bool any = false; // a capture made by no tracer (bench/scale's) counts no call
    json_object_foreach(json_object_get(s, "calls"), key, v) {
        if (json_integer_value(v)) {
            fputs(any ? " " : "calls:        ", out);
            mr_escape_fputs_text(out, key);
            fprintf(out, "=%lld", (long long)json_integer_value(v));
            any = true;
        }
    }
    if (any)
        fputc('\n', out);
}

int mr_summary_report_write(const mr_report_to* to, const mr_summary* s) {
    json_t* sum = build_summary(s);
    int rc = mr_json_write_report(to, sum, print_text);
    json_decref(sum);
    return rc;
}
