// SPDX-License-Identifier: MIT
// memreport plot: command line and dispatch. A capture (recognised by its SQLite header)
// with an NPU heap, or an NPU log imported on the fly in memory, gets the StaticAllocation
// heap plot (npu/npu_plot.c); any other capture the native time plot (plot_native.c).
#include "cmd.h"
#include "cxx_names.h"
#include "extent.h"
#include "load.h"
#include "opts.h"
#include "output_file.h"
#include "plot.h"
#include "plot_procs.h"
#include "procs.h"

#include "memtrace/input.h"
#include "memtrace/schema.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char plot_help[] =
    "usage: memreport plot CAPTURE-or-LOG [-o FILE.png|FILE.svg] [--data FILE.json] [-f]\n"
    "                      [--sites N | --site NAME ...] [--heap NAME] [--full-names]\n"
    "       memreport plot CAPTURE... | DIR -o FILE.png|FILE.svg [--data FILE.json] [-f]\n"
    "Draws memory over time with cairo, PNG or SVG by the output's extension.\n"
    "An NPU compiler log (or a capture imported from one) gives upstream's StaticAllocation\n"
    "heap plot: max allocated size, its increases (and those due to fragmentation), used and\n"
    "free memory per allocation step, with the function regions. A native capture gives live\n"
    "heap bytes, RSS and VSZ over time with marks, ranges and the peak.\n" MR_HELP_PROCS
    "Their plot stacks each process's live heap on one wall-clock axis (time 0: the first\n"
    "process's start), one band per process, and marks the total's peak; --data gives each\n"
    "process's series on that axis.\n"
    "  -o, --output FILE  the picture (default: the input's name with .png)\n"
    "  --data FILE        also write every plotted series as JSON (exact bytes; a sampled\n"
    "                     capture's are estimates, and its JSON has a \"sampled\" field)\n"
    "  --sites N          native: one row per top-N call site (bytes held, share of live)\n"
    "  --site NAME        native: a row for this function (repeatable)\n"
    "  --full-names       C++ names in the legend as demangled (default: std::string,\n"
    "                     <...>; --data has them whole)\n"
    "  --heap NAME        native: the heap to plot: libc (the default) or mmap\n"
    "                     (MEMTRACE_MMAP=1)\n"
    "  -f, --force        overwrite existing outputs\n";

// Whether path is an SQLite file (a capture), else an NPU log; *err a negative errno with
// the message in msg when it cannot be read.
static bool is_sqlite(const char* path, int* err, char* msg, size_t msglen) {
    char hdr[16];
    int fd = mt_input_open(path, msg, msglen);
    *err = fd < 0 ? fd : 0;
    if (fd < 0)
        return false;
    ssize_t n = read(fd, hdr, sizeof hdr);
    close(fd);
    return n == (ssize_t)sizeof hdr && memcmp(hdr, "SQLite format 3", 16) == 0;
}

static int plot_capture(const mr_plot_args* a) {
    mt_capture* cap;
    int rc = mr_load_capture(a->input, &cap);
    if (rc)
        return rc;
    if (mr_extent_default_heap(cap) == MT_HEAP_NPU)
        rc = mr_plot_npu_capture(cap, a);
    else
        rc = mr_plot_native(cap, a);
    mt_capture_close(cap);
    return rc;
}

// Several captures, or a directory of them: their processes stacked (plot_procs.h).
static int plot_set(const mr_plot_args* a, char* const* paths, int n) {
    if (a->top_sites || a->nsites)
        return mr_opts_usage_error(plot_help, "--sites and --site take one capture, not several");
    mr_capture_set s;
    int rc = mr_procs_open(&s, paths, n, plot_help, false);
    if (rc)
        return rc;
    if (!a->output)
        rc = mr_opts_usage_error(plot_help, "several captures: name the picture with -o FILE");
    for (int i = 0; !rc && i < n; i++)
        if (strcmp(a->output, paths[i]) == 0 || (a->data && strcmp(a->data, paths[i]) == 0)) {
            mr_messages_error(paths[i], "refusing to overwrite the input");
            rc = MR_EXIT_USAGE;
        }
    // An NPU heap's plot is over allocation steps, not time: it does not stack.
    for (size_t i = 0; !rc && i < s.n; i++)
        if (mr_extent_default_heap(s.procs[i].cap) == MT_HEAP_NPU)
            rc = mr_opts_usage_error(plot_help, "%s: an NPU capture is plotted alone",
                                     s.procs[i].path);
    if (!rc)
        rc = mr_plot_procs(&s, a);
    mr_capture_set_free(&s);
    return rc;
}

// One input: a capture or an NPU log, plotted to -o or to INPUT.png beside it.
static int plot_one(mr_plot_args* a) {
    int rc;
    char* def = a->output ? NULL : mr_output_file_path_with_ext(a->input, ".png");
    if (!a->output)
        a->output = def;
    int err;
    char msg[256];
    bool capture = is_sqlite(a->input, &err, msg, sizeof msg);
    if (!a->output) {
        mr_messages_error(a->input, "out of memory");
        rc = MR_EXIT_IO;
    } else if (err) {
        mr_messages_error(a->input, "%s", msg);
        rc = mr_messages_exit_code(err);
    } else if (strcmp(a->output, a->input) == 0 || (a->data && strcmp(a->data, a->input) == 0)) {
        mr_messages_error(a->output, "refusing to overwrite the input");
        rc = MR_EXIT_USAGE;
    } else {
        rc = capture ? plot_capture(a) : mr_plot_npu_log(a);
    }
    free(def);
    return rc;
}

int mr_cmd_plot(int argc, char** argv) {
    enum { OPT_DATA = MR_OPT_FULL_NAMES + 1, OPT_SITES, OPT_SITE, OPT_HEAP };
    static const struct option opts[] = {{"output", required_argument, NULL, 'o'},
                                         {"data", required_argument, NULL, OPT_DATA},
                                         {"sites", required_argument, NULL, OPT_SITES},
                                         {"site", required_argument, NULL, OPT_SITE},
                                         {"heap", required_argument, NULL, OPT_HEAP},
                                         {"full-names", no_argument, NULL, MR_OPT_FULL_NAMES},
                                         {"force", no_argument, NULL, 'f'},
                                         {"help", no_argument, NULL, 'h'},
                                         {NULL, 0, NULL, 0}};
    mr_plot_args a = {0};
    const char** sites = calloc((size_t)argc + 1, sizeof *sites);
    if (!sites)
        return MR_EXIT_IO;
    a.sites = sites;
    int c, rc = -1;
    char* end;
    while (rc < 0 && (c = getopt_long(argc, argv, "o:fh", opts, NULL)) != -1) {
        switch (c) {
        case 'o':
            a.output = optarg;
            break;
        case OPT_DATA:
            a.data = optarg;
            break;
        case OPT_SITES:
            a.top_sites = (int)strtol(optarg, &end, 10);
            if (*end || a.top_sites < 0 || a.top_sites > 50) {
                mr_messages_error(NULL, "--sites takes a number from 0 to 50");
                rc = MR_EXIT_USAGE;
            }
            break;
        case OPT_SITE:
            sites[a.nsites++] = optarg;
            break;
        case OPT_HEAP:
            mr_extent_want_heap(optarg);
            break;
        case MR_OPT_FULL_NAMES:
            mr_cxx_names_set_full(true);
            break;
        case 'f':
            a.force = true;
            break;
        case 'h':
            fputs(plot_help, stdout);
            rc = MR_EXIT_OK;
            break;
        default: // getopt said what is wrong
            mr_opts_usage_hint(plot_help);
            rc = MR_EXIT_USAGE;
            break;
        }
    }
    // Before any work: a name the picture cannot have (x.jpg) is refused, not written as PNG.
    if (rc < 0 && a.output && mr_plot_check_output(a.output))
        rc = MR_EXIT_USAGE;
    if (rc < 0 && mr_capture_set_wanted(argc - optind, argv + optind))
        rc = plot_set(&a, argv + optind, argc - optind);
    if (rc < 0 && !mr_opts_input(argc, argv, plot_help))
        rc = MR_EXIT_USAGE;
    if (rc >= 0) {
        free(sites);
        return rc;
    }
    a.input = argv[optind];
    rc = plot_one(&a);
    free(sites);
    return rc;
}
