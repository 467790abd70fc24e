// SPDX-License-Identifier: MIT
// memreport summary: the totals of a capture (status, counts, peak, leaks, calls per
// entry point), as text for people or JSON for scripts.
#include "aggregates.h"
#include "cmd.h"
#include "extent.h"
#include "leak_kinds.h"
#include "load.h"
#include "opts.h"
#include "procs.h"
#include "summary_report.h"

#include "memtrace/schema.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>

static const char summary_help[] =
    "usage: memreport summary CAPTURE [--heap NAME] [--json] [-o FILE] [-f]\n"
    "       memreport summary CAPTURE... | DIR [--json] [-o FILE] [-f]\n"
    "Totals of the heap of a capture: status, events, allocations, frees, bytes\n"
    "allocated, peak live bytes and when, bytes and blocks still live at the end (leaks;\n"
    "what the C runtime holds for itself, such as stdio buffers, is told apart), and the\n"
    "number of calls made to each allocator entry point. For a capture imported\n"
    "from an NPU log: its source log, format and number of steps instead of the process,\n"
    "and times in steps.\n" MR_HELP_PROCS
    "In that case: each process (pid, parent pid, command, events, bytes allocated, peak,\n"
    "leaked), indented under its parent, then the total over the processes: the peak is the\n"
    "most they held at one moment; the sum of each process's own peak is named as such.\n"
    "A Python process (heap python) is reported as its libc and python heaps together,\n"
    "followed by a line for each of them and one for the total.\n"
    "  --heap NAME    the heap to report: libc (the default; a Python process: libc and\n"
    "                 python together), python (CPython's own allocators) or mmap\n"
    "                 (MEMTRACE_MMAP=1)\n"
    "  --json         machine-readable output\n"
    "  -o, --output   write to FILE instead of stdout\n"
    "  -f, --force    overwrite FILE if it exists\n";

// The mmap heap's aggregates (MEMTRACE_MMAP=1) into *m (*found set), when the capture has
// that heap and the report is of another. Returns 0 or an exit code after the reason.
static int mmap_heap(mt_capture* cap, int shown, mr_aggregates* m, bool* found) {
    *found = false;
    int id = mr_extent_heap_named(cap, "mmap");
    if (!id || id == shown)
        return 0;
    int rc = mr_load_aggregates(cap, id, "summary", m);
    *found = rc == 0;
    return rc;
}

// The heaps of a process with a python or pool heap (libc, python, pool, all together) into
// h[0..4), each left unread where the capture has none or it is the heap reported
// (`shown`); got[i] says which were read (to be freed). Returns 0 or an exit code (after
// the reason).
static int program_heaps(mt_capture* cap, int shown, mr_aggregates h[4], bool got[4]) {
    int ids[4] = {MT_HEAP_LIBC, mr_extent_heap_named(cap, "python"),
                  mr_extent_has_heap(cap, MT_HEAP_POOL) ? MT_HEAP_POOL : 0, MT_HEAP_PROGRAM};
    for (int i = 0; (ids[1] || ids[2]) && i < 4; i++) {
        if (!ids[i] && i < 3)
            continue;
        int rc = ids[i] == shown ? 0 : mr_load_aggregates(cap, ids[i], "summary", &h[i]);
        if (rc)
            return rc;
        got[i] = ids[i] != shown;
    }
    return 0;
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
            mr_extent_want_heap(optarg);
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
    int rc = mr_load_capture(path, &cap);
    if (rc)
        return rc;
    int heap = mr_extent_default_heap(cap);
    mr_aggregates a;
    if (!(rc = mr_load_aggregates(cap, heap, "summary", &a))) {
        mr_summary sum = {.cap = cap, .totals = &a.peak.heap, .threads = a.nthreads};
        sum.runtime_held = heap != MT_HEAP_NPU;
        if (sum.runtime_held)
            rc = mr_load_runtime_held(cap, &a, &sum.held_bytes, &sum.held_blocks);
        if (!rc && heap != MT_HEAP_NPU)
            rc = mr_load_leak_totals(cap, &sum.scanned, sum.kind_bytes, sum.kind_blocks);
        char why[256];
        if (!rc && heap != MT_HEAP_NPU && !sum.scanned &&
            mr_leak_kinds_scan_skipped(cap, why, sizeof why))
            sum.no_scan = why;
        mr_aggregates m;
        bool has_mmap = false;
        if (!rc)
            rc = mmap_heap(cap, heap, &m, &has_mmap);
        sum.mmap = has_mmap ? &m.peak.heap : NULL;
        mr_aggregates py[4];
        bool got[4] = {false, false, false, false};
        if (!rc)
            rc = program_heaps(cap, heap, py, got);
        char* pool_name = mr_extent_heap_name(cap, MT_HEAP_POOL);
        char total_of[128];
        bool python = mr_extent_heap_named(cap, "python") != 0;
        if (got[0] || got[1] || got[2] || got[3]) {
            sum.libc = got[0] ? &py[0].peak.heap : NULL;
            sum.python = got[1] ? &py[1].peak.heap : NULL;
            sum.pool = got[2] ? &py[2].peak.heap : NULL;
            sum.pool_name = pool_name ? pool_name : "pool";
            sum.total = got[3] ? &py[3].peak.heap : &a.peak.heap;
            if (python && pool_name)
                snprintf(total_of, sizeof total_of, "libc, python and %s", sum.pool_name);
            else
                snprintf(total_of, sizeof total_of, "libc and %s",
                         pool_name ? sum.pool_name : "python");
            sum.total_of = total_of;
        }
        mr_report_to to = mr_opts_report_to(&opt);
        if (!rc)
            rc = mr_summary_report_write(&to, &sum);
        for (int i = 0; i < 4; i++)
            if (got[i])
                mr_aggregates_free(&py[i]);
        free(pool_name);
        if (has_mmap)
            mr_aggregates_free(&m);
        mr_aggregates_free(&a);
    }
    mt_capture_close(cap);
    return rc;
}
