// SPDX-License-Identifier: MIT
// memreport summary: the totals of a capture (status, counts, peak, leaks, calls per
// entry point), as text for people or JSON for scripts.
#include "commands.h"
#include "escape.h"
#include "options.h"
#include "output.h"
#include "replay.h"
#include "runtime_held.h"
#include "u64map.h"

#include "memtrace/schema.h"
#include "memtrace/units.h"

#include <getopt.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

static const char summary_help[] =
    "usage: memreport summary CAPTURE [--json] [-o FILE] [-f]\n"
    "Totals of the libc heap of a capture: status, events, allocations, frees, bytes\n"
    "allocated, peak live bytes and when, bytes and blocks still live at the end (leaks;\n"
    "what the C runtime holds for itself, such as stdio buffers, is told apart), and the\n"
    "number of calls made to each allocator entry point. For a capture imported\n"
    "from an NPU log: its source log, format and number of steps instead of the process,\n"
    "and times in steps.\n"
    "  --json         machine-readable output\n"
    "  -o, --output   write to FILE instead of stdout\n"
    "  -f, --force    overwrite FILE if it exists\n";

typedef struct summary_state {
    mr_u64map tids; // distinct thread ids (the values are unused)
} summary_state;

static int count_thread(mr_replay* r, const mt_event* ev, const mr_block* freed, void* ud) {
    (void)r;
    (void)freed;
    summary_state* s = ud;
    if (mr_u64map_get(&s->tids, ev->tid))
        return 0;
    return mr_u64map_put(&s->tids, ev->tid, 0); // 0 or -ENOMEM
}

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
static void npu_origin(json_t* o, mt_capture* cap, mr_replay* r) {
    char* source = mt_capture_meta_text(cap, "source");
    json_object_set_new(o, "source", source ? mr_json_bytes(source) : json_null());
    free(source);
    char* format = mt_capture_meta_text(cap, "format");
    json_object_set_new(
        o, "format",
        json_string(format && !strcmp(format, "npu-log-legacy") ? "legacy" : "current"));
    free(format);
    json_object_set_new(o, "steps", json_integer(mr_capture_extent(cap, r->heap).end));
}

static void process_origin(json_t* o, mt_capture* cap, mr_replay* r) {
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

static json_t* build_summary(mt_capture* cap, mr_replay* r, size_t threads) {
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
        json_object_set_new(o, "threads", json_integer((json_int_t)threads));
    json_object_set_new(o, "events", json_integer((json_int_t)r->events));
    json_object_set_new(o, "allocations", json_integer((json_int_t)r->allocations));
    json_object_set_new(o, "frees", json_integer((json_int_t)r->frees));
    json_object_set_new(o, "unmatched_frees", json_integer((json_int_t)r->unmatched_frees));
    json_object_set_new(o, "bytes_allocated", json_integer((json_int_t)r->bytes_allocated));
    json_object_set_new(o, "peak_bytes", json_integer((json_int_t)r->peak_bytes));
    // An imported NPU heap counts time in allocation steps, not nanoseconds.
    json_object_set_new(o, npu ? "peak_step" : "peak_time_ns", json_integer(r->peak_ts));
    json_object_set_new(o, "time_unit", json_string(npu ? "step" : "ns"));
    json_object_set_new(o, "leaked_bytes", json_integer((json_int_t)r->live_bytes));
    json_object_set_new(o, "leaked_allocations", json_integer((json_int_t)r->live.count));
    if (!npu) // the tracer counts calls per entry point; a log has none
        json_object_set_new(o, "calls", calls_object(cap));
    // Set when the program died of a fatal signal and the tracer saved the capture first.
    int64_t sig = mt_capture_meta_int(cap, "terminated_by_signal", 0);
    if (sig)
        json_object_set_new(o, "terminated_by_signal", json_integer(sig));
    return o;
}

static void print_text(FILE* out, json_t* s) {
    char a[32], b[32], c[32];
    fputs("capture:      ", out);
    mr_fputs_text(out, json_string_value(json_object_get(s, "capture")));
    fprintf(out, " (%s)\n", json_string_value(json_object_get(s, "status")));
    bool steps = !strcmp(json_string_value(json_object_get(s, "time_unit")), "step");
    size_t i;
    json_t* v;
    if (steps) {
        fputs("source log:   ", out);
        mr_fputs_text(out, json_string_value(json_object_get(s, "source")));
        fprintf(out, "\nformat:       NPU memory-usage log (%s)\n",
                json_string_value(json_object_get(s, "format")));
        fprintf(out, "steps:        %lld\n",
                (long long)json_integer_value(json_object_get(s, "steps")));
    } else {
        fputs("command:     ", out);
        json_array_foreach(json_object_get(s, "command"), i, v) {
            fputc(' ', out);
            mr_fputs_text(out, json_string_value(v));
        }
        fprintf(out, "\npid:          %lld\n",
                (long long)json_integer_value(json_object_get(s, "pid")));
        fprintf(
            out, "duration:     %s\n",
            mt_format_duration(json_integer_value(json_object_get(s, "duration_ns")), a, sizeof a));
    }
    mr_format_time(json_integer_value(json_object_get(s, steps ? "peak_step" : "peak_time_ns")),
                   steps, b, sizeof b);
#define INT(k) (unsigned long long)json_integer_value(json_object_get(s, k))
    if (!steps)
        fprintf(out, "threads:      %llu\n", INT("threads"));
    fprintf(out, "events:       %llu\n", INT("events"));
    fprintf(out, "allocations:  %llu (%s in total)\n", INT("allocations"),
            mt_format_bytes(INT("bytes_allocated"), a, sizeof a));
    fprintf(out, "frees:        %llu\n", INT("frees"));
    fprintf(out, "peak:         %s at %s\n", mt_format_bytes(INT("peak_bytes"), c, sizeof c), b);
    // The program's leaks, then what the C runtime holds for itself (runtime_held.h).
    unsigned long long held = INT("runtime_held_bytes"),
                       held_blocks = INT("runtime_held_allocations");
    unsigned long long own_blocks = INT("leaked_allocations") - held_blocks;
    fprintf(out, "leaked:       %s in %llu block%s",
            mt_format_bytes(INT("leaked_bytes") - held, a, sizeof a), own_blocks,
            own_blocks == 1 ? "" : "s");
    if (held_blocks)
        fprintf(out, " (+%s in %llu block%s held by the C runtime)",
                mt_format_bytes(held, c, sizeof c), held_blocks, held_blocks == 1 ? "" : "s");
    fputc('\n', out);
#undef INT
    if (steps)
        return;
    fputs("calls:       ", out);
    const char* key;
    json_object_foreach(json_object_get(s, "calls"), key, v) {
        if (json_integer_value(v)) {
            fputc(' ', out);
            mr_fputs_text(out, key);
            fprintf(out, "=%lld", (long long)json_integer_value(v));
        }
    }
    fputc('\n', out);
}

// Adds which part of the leaked blocks the C runtime holds for itself (runtime_held.h);
// the stacks are read only when blocks are left. Returns 0 or an exit code.
static int add_runtime_held(json_t* o, mt_capture* cap, const mr_heapmap* live) {
    uint64_t bytes = 0, blocks = 0;
    mr_symbols* sym = NULL;
    int rc = live->count ? mr_symbols_load(cap, &sym) : MR_EXIT_OK;
    if (!rc && sym && mr_runtime_held_sum(sym, live, &bytes, &blocks)) {
        mr_error(mt_capture_path(cap), "out of memory");
        rc = MR_EXIT_IO;
    }
    mr_symbols_free(sym);
    json_object_set_new(o, "runtime_held_bytes", json_integer((json_int_t)bytes));
    json_object_set_new(o, "runtime_held_allocations", json_integer((json_int_t)blocks));
    return rc;
}

int mr_cmd_summary(int argc, char** argv) {
    static const struct option opts[] = {{"json", no_argument, NULL, 'j'},
                                         {"output", required_argument, NULL, 'o'},
                                         {"force", no_argument, NULL, 'f'},
                                         {"help", no_argument, NULL, 'h'},
                                         {NULL, 0, NULL, 0}};
    mr_opts opt = MR_OPTS_INIT;
    int c;
    while ((c = getopt_long(argc, argv, "jo:fh", opts, NULL)) != -1) {
        int orc = mr_opts_handle(&opt, c, summary_help);
        if (orc != MR_OPT_NEXT)
            return orc;
    }
    const char* path = mr_opts_input(argc, argv, summary_help);
    if (!path)
        return MR_EXIT_USAGE;
    mt_capture* cap;
    int rc = mr_open_capture(path, &cap);
    if (rc)
        return rc;
    mr_replay r;
    summary_state s;
    if (mr_replay_init(&r, cap, mr_capture_default_heap(cap)) || mr_u64map_init(&s.tids)) {
        mr_error(path, "out of memory");
        mt_capture_close(cap);
        return MR_EXIT_IO;
    }
    rc = mr_replay_run(&r, UINT64_MAX, count_thread, &s);
    if (rc) {
        mr_error(path, "%s", r.err[0] ? r.err : "corrupt capture");
        rc = MR_EXIT_BAD_INPUT;
    } else {
        json_t* sum = build_summary(cap, &r, s.tids.count);
        if (r.heap != MT_HEAP_NPU)
            rc = add_runtime_held(sum, cap, &r.live);
        if (!rc)
            rc = mr_write_report(&opt, sum, print_text);
        json_decref(sum);
    }
    mr_u64map_free(&s.tids);
    mr_replay_free(&r);
    mt_capture_close(cap);
    return rc;
}
