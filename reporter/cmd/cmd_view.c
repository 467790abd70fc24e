// SPDX-License-Identifier: MIT
// memreport view: one self-contained page to explore a capture: its header, the memory
// over time with real axes, and the flame graph, functions, top stacks and leaks of the
// moment or time range chosen on it. The page is the flame graph page (render/
// flamegraph_page.h) with the temporal data at bucket edges (model/moments.h); this file
// only reads the command line.
#include "capture_set.h"
#include "cmd.h"
#include "flamegraph_run.h"
#include "opts.h"
#include "procs.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char view_help[] =
    "usage: memreport view CAPTURE [-o FILE] [-f] [--all-frames]\n"
    "       memreport view CAPTURE... | DIR [same options]\n"
    "One self-contained HTML page (no network needed) to explore a capture: a header\n"
    "(command, duration, peak, leaked and its kinds, allocations, threads, heaps), the memory\n"
    "over time (live heap, RSS, VSZ, marks and ranges) with time and byte axes, and below it\n"
    "the flame graph, the functions table (self and total, callers and callees on a click),\n"
    "the top stacks and the leaks (by kind). Click a moment on the timeline for the blocks\n"
    "live then, drag a range for the blocks live at its highest point, allocated within it,\n"
    "or allocated within it and never freed (the Leaks tab); the page keeps the choice in\n"
    "its address, so a link reopens it. A capture with several heaps (a python process's\n"
    "libc and python heaps, MEMTRACE_MMAP=1's mmap heap) holds each heap's page, the header\n"
    "listing them (as memreport summary does) to switch; likewise the 4 threads that\n"
    "allocated most (a heap of at most 10 million events). Moments and ranges snap to 1/500 of\n"
    "the run, where the numbers are exact (the page says which times it shows); the page\n"
    "stays a few MB whatever the number of events.\n" MR_HELP_PROCS
    "The page then holds a page per process, the header listing them in their tree with\n"
    "the most they held together at one moment (as memreport summary DIR says it); the\n"
    "timeline stacks their live heaps on the tree's time axis, a colour each, their sum on\n"
    "top. A click on a process's band opens its page at that moment; a range drawn across\n"
    "them is read in each (beside each name), and a name opens its page on it.\n"
    "  --all-frames        open the page with noise frames (allocator internals, start-up\n"
    "                      code) shown\n"
    "  -o, --output FILE   default: memreport-view-NAME.html in the current directory, NAME\n"
    "                      being the capture's file name without .db\n"
    "  -f, --force         overwrite FILE if it exists\n";

int mr_cmd_view(int argc, char** argv) {
    static const struct option opts[] = {{"output", required_argument, NULL, 'o'},
                                         {"force", no_argument, NULL, 'f'},
                                         {"all-frames", no_argument, NULL, 'A'},
                                         {"help", no_argument, NULL, 'h'},
                                         {NULL, 0, NULL, 0}};
    const char* output = NULL;
    bool force = false, all_frames = false;
    int c;
    while ((c = getopt_long(argc, argv, "o:fh", opts, NULL)) != -1) {
        switch (c) {
        case 'o':
            output = optarg;
            break;
        case 'f':
            force = true;
            break;
        case 'A':
            all_frames = true;
            break;
        case 'h':
            fputs(view_help, stdout);
            return MR_EXIT_OK;
        default: // getopt said what is wrong
            mr_opts_usage_hint(view_help);
            return MR_EXIT_USAGE;
        }
    }
    bool several = mr_capture_set_wanted(argc - optind, argv + optind);
    const char* path = several ? argv[optind] : mr_opts_input(argc, argv, view_help);
    if (!path)
        return MR_EXIT_USAGE;
    char* def = output ? NULL : mr_flamegraph_run_default_output("view", path);
    if (!output && !(output = def)) {
        mr_messages_error(path, "out of memory");
        return MR_EXIT_IO;
    }
    int rc = several ? mr_flamegraph_run_view_procs(argv + optind, argc - optind, output, force,
                                                    all_frames, view_help)
                     : mr_flamegraph_run_view_page(path, output, force, all_frames);
    free(def);
    return rc;
}
