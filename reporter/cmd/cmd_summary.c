// SPDX-License-Identifier: MIT
// memreport summary: the totals of a capture (status, counts, peak, leaks, calls per
// entry point), as text for people or JSON for scripts.
#include "commands.h"
#include "options.h"
#include "procs.h"
#include "replay.h"
#include "summary_report.h"
#include "u64map.h"

#include "memtrace/schema.h"

#include <getopt.h>

static const char summary_help[] =
    "usage: memreport summary CAPTURE [--heap NAME] [--json] [-o FILE] [-f]\n"
    "       memreport summary CAPTURE... | DIR [--json] [-o FILE] [-f]\n"
    "Totals of the libc heap of a capture: status, events, allocations, frees, bytes\n"
    "allocated, peak live bytes and when, bytes and blocks still live at the end (leaks;\n"
    "what the C runtime holds for itself, such as stdio buffers, is told apart), and the\n"
    "number of calls made to each allocator entry point. For a capture imported\n"
    "from an NPU log: its source log, format and number of steps instead of the process,\n"
    "and times in steps.\n" MR_HELP_PROCS
    "In that case: each process (pid, parent pid, command, events, bytes allocated, peak,\n"
    "leaked), indented under its parent, then the total over the processes (their peaks\n"
    "summed: each process's own peak).\n"
    "  --heap NAME    the heap to report: libc (the default) or mmap (MEMTRACE_MMAP=1)\n"
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

// Adds which part of the leaked blocks the C runtime holds for itself. Returns 0 or an
// exit code.
static int add_runtime_held(mr_summary* sum, mt_capture* cap, const mr_heapmap* live) {
    sum->runtime_held = true;
    return mr_runtime_held_at_end(cap, live, &sum->held_bytes, &sum->held_blocks);
}

// The mmap heap (MEMTRACE_MMAP=1) run to its end into *m, when the capture has one and the
// report is of another heap. Returns 1 if so, 0 if not, or an exit code after the reason.
static int replay_mmap_heap(mt_capture* cap, int shown, mr_replay* m) {
    int id = mr_capture_heap_named(cap, "mmap");
    if (!id || id == shown)
        return 0;
    if (mr_replay_init(m, cap, id)) {
        mr_error(mt_capture_path(cap), "out of memory");
        return -MR_EXIT_IO;
    }
    int e = mr_replay_run(m, UINT64_MAX, NULL, NULL);
    if (e) {
        mr_error(mt_capture_path(cap), "%s", m->err[0] ? m->err : "corrupt capture");
        mr_replay_free(m);
        return -mr_exit_code(e);
    }
    return 1;
}

int mr_cmd_summary(int argc, char** argv) {
    enum { OPT_HEAP = 256 };
    static const struct option opts[] = {
        {"json", no_argument, NULL, 'j'},         {"heap", required_argument, NULL, OPT_HEAP},
        {"output", required_argument, NULL, 'o'}, {"force", no_argument, NULL, 'f'},
        {"help", no_argument, NULL, 'h'},         {NULL, 0, NULL, 0}};
    mr_opts opt = MR_OPTS_INIT;
    int c;
    while ((c = getopt_long(argc, argv, "jo:fh", opts, NULL)) != -1) {
        if (c == OPT_HEAP) {
            mr_capture_want_heap(optarg);
            continue;
        }
        int orc = mr_opts_handle(&opt, c, summary_help);
        if (orc != MR_OPT_NEXT)
            return orc;
    }
    if (mr_capture_set_wanted(argc - optind, argv + optind))
        return mr_procs_summary(&opt, argv + optind, argc - optind, summary_help);
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
        rc = mr_exit_code(rc); // out of memory: 3, as every command says it
    } else {
        mr_summary sum = {.cap = cap, .replay = &r, .threads = s.tids.count};
        if (r.heap != MT_HEAP_NPU)
            rc = add_runtime_held(&sum, cap, &r.live);
        mr_replay m;
        int has_mmap = rc ? 0 : replay_mmap_heap(cap, r.heap, &m);
        if (has_mmap < 0)
            rc = -has_mmap;
        sum.mmap = has_mmap > 0 ? &m : NULL;
        mr_report_to to = mr_opts_report_to(&opt);
        if (!rc)
            rc = mr_summary_report_write(&to, &sum);
        if (has_mmap > 0)
            mr_replay_free(&m);
    }
    mr_u64map_free(&s.tids);
    mr_replay_free(&r);
    mt_capture_close(cap);
    return rc;
}
