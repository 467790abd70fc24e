// SPDX-License-Identifier: MIT
// memreport import: an NPU compiler memory-usage log into a capture (npu/npu_import.c).
#include "cmd.h"
#include "npu.h"
#include "opts.h"
#include "output_file.h"

#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static const char import_help[] =
    "usage: memreport import LOG [-o CAPTURE] [-f]\n"
    "Imports an NPU compiler memory-usage log (OV_NPU_LOG_LEVEL=LOG_TRACE\n"
    "IE_NPU_LOG_FILTER=\"vpux-compiler|memory-usage-info\") into a capture: one event per\n"
    "'Buffer size to allocate' / 'Free buffer of size' line (time = allocation step), counters\n"
    "for max allocated, used and free memory, function regions and fragmentation flags,\n"
    "read with the rules of upstream's plot_memory_usage.py. The 2025 format without\n"
    "function prefixes is read too.\n"
    "  -o, --output   the capture to write (default: LOG with its extension replaced by .db)\n"
    "  -f, --force    overwrite the capture if it exists\n";

int mr_cmd_import(int argc, char** argv) {
    static const struct option opts[] = {{"output", required_argument, NULL, 'o'},
                                         {"force", no_argument, NULL, 'f'},
                                         {"help", no_argument, NULL, 'h'},
                                         {NULL, 0, NULL, 0}};
    mr_opts o = {.output = NULL}; // no output named: beside the log
    int c;
    while ((c = getopt_long(argc, argv, "o:fh", opts, NULL)) != -1) {
        int rc = mr_opts_handle(&o, c, import_help);
        if (rc != MR_OPT_NEXT)
            return rc;
    }
    const char* output = o.output;
    bool force = o.force;
    const char* path = mr_opts_input(argc, argv, import_help);
    if (!path)
        return MR_EXIT_USAGE;
    struct stat st;
    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
        mr_messages_error(path, "is a directory, not an NPU log");
        return MR_EXIT_BAD_INPUT;
    }
    char* def = output ? NULL : mr_output_file_path_with_ext(path, ".db");
    if (!output && !(output = def)) {
        mr_messages_error(path, "out of memory");
        return MR_EXIT_IO;
    }
    if (strcmp(output, "-") == 0 || strcmp(output, path) == 0) {
        mr_messages_error(output, "cannot write the capture over the log or to stdout");
        free(def);
        return MR_EXIT_USAGE;
    }
    // The output first: a refused or unwritable output fails before minutes of parsing.
    // mr_output_file gives the temporary name and the refuse-or-force check; SQLite then writes
    // the file at that name (replacing the empty placeholder) and commit renames it.
    if (mr_output_file_in_place(output)) { // SQLite needs a file it can seek and rename
        mr_messages_error(output,
                          "a capture is an SQLite file: cannot write it to a device or a pipe");
        free(def);
        return MR_EXIT_IO;
    }
    mr_output_file out;
    int xrc = mr_output_file_open(&out, output, force);
    if (xrc) {
        free(def);
        return xrc;
    }
    char err[512];
    mr_npu_log log;
    int rc = mr_npu_parse_file(path, true, &log, err, sizeof err);
    if (rc) {
        mr_messages_error(path, "%s", err);
        mr_output_file_abort(&out);
        free(def);
        return mr_npu_exit_code(rc);
    }
    rc = mr_npu_write_capture(out.tmp, &log, path, err, sizeof err);
    if (rc) {
        mr_messages_error(output, "%s", err);
        mt_capture_remove_sidecars(out.tmp);
        mr_output_file_abort(&out);
        xrc = MR_EXIT_IO;
    } else {
        xrc = mr_output_file_commit(&out);
    }
    mr_npu_log_free(&log);
    free(def);
    return xrc;
}
