// SPDX-License-Identifier: MIT
// libFuzzer target: the capture reader and the reports on a capture file made of the
// fuzzer's bytes. Each input is written to a fresh file, opened with mt_capture_open, its
// meta read and every heap's events streamed, then every memreport report that reads a
// native capture runs on it (summary, stacks, leaks, stats, flamegraph, plot) with its
// text going to /dev/null. Whatever the bytes, a report must fail cleanly, never crash.
#include "cmd.h"

#include "../tmpdir.h"
#include "memtrace/capture.h"

#include <fcntl.h>
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int LLVMFuzzerInitialize(int* argc, char*** argv);
int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

static char path[64], wal[80], shm[80], journal[80], out_html[80], out_svg[80], out_json[80];

static void remove_files(void) {
    const char* files[] = {path, wal, shm, journal, out_html, out_svg, out_json};
    for (size_t i = 0; i < sizeof files / sizeof *files; i++)
        unlink(files[i]);
}

int LLVMFuzzerInitialize(int* argc, char*** argv) {
    (void)argc;
    (void)argv;
    // Never read or write the user's symbol cache with fuzzed names.
    setenv("MEMTRACE_SYMBOL_CACHE", "0", 1);
    // The tests' one temporary directory (tmpdir.h), removed with its files at exit.
    snprintf(path, sizeof path, "%s", test_tmppath("cap.db"));
    snprintf(wal, sizeof wal, "%s-wal", path);
    snprintf(shm, sizeof shm, "%s-shm", path);
    snprintf(journal, sizeof journal, "%s-journal", path);
    snprintf(out_html, sizeof out_html, "%s", test_tmppath("flame.html"));
    snprintf(out_svg, sizeof out_svg, "%s", test_tmppath("plot.svg"));
    snprintf(out_json, sizeof out_json, "%s", test_tmppath("plot.json"));
    // Reports print to stdout; libFuzzer's own messages go to stderr.
    int null = open("/dev/null", O_WRONLY);
    if (null < 0 || dup2(null, STDOUT_FILENO) < 0) {
        perror("fuzz_capture: /dev/null");
        exit(1);
    }
    close(null);
    return 0;
}

static void read_capture(void) {
    char err[256];
    mt_capture* cap;
    if (mt_capture_open(path, &cap, err, sizeof err) != 0)
        return;
    static const char* keys[] = {"schema_version", "pid", "exe", "cmdline", "capture_status"};
    for (size_t i = 0; i < sizeof keys / sizeof *keys; i++) {
        free(mt_capture_meta_text(cap, keys[i]));
        (void)mt_capture_meta_int(cap, keys[i], 0);
    }
    (void)mt_capture_truncated(cap);
    for (int heap = 0; heap <= 3; heap++) {
        // A failed open may still hand back the iterator (to read its message): close it.
        mt_event_iter* it = NULL;
        int rc = mt_capture_iter_open(cap, heap, &it);
        mt_event ev;
        if (rc == 0)
            while ((rc = mt_capture_iter_next(it, &ev)) == 1) {
            }
        if (rc < 0 && it)
            (void)mt_capture_iter_error(it);
        mt_capture_iter_close(it);
    }
    mt_capture_close(cap);
}

static void report(int (*cmd)(int, char**), char** argv) {
    int argc = 0;
    while (argv[argc])
        argc++;
    optind = 0; // getopt's full re-initialisation (glibc) for each command
    (void)cmd(argc, argv);
}

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    remove_files();
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0 || write(fd, data, size) != (ssize_t)size) {
        perror("fuzz_capture: writing the input");
        abort();
    }
    close(fd);
    read_capture();
    report(mr_cmd_summary, (char*[]){"summary", "--json", path, NULL});
    report(mr_cmd_stacks, (char*[]){"stacks", "--json", path, NULL});
    report(mr_cmd_leaks, (char*[]){"leaks", "--json", path, NULL});
    report(mr_cmd_stats, (char*[]){"stats", "--json", path, NULL});
    report(mr_cmd_stats, (char*[]){"stats", path, NULL}); // text: names escaped for terminals
    report(mr_cmd_flamegraph, (char*[]){"flamegraph", "-f", "-o", out_html, path, NULL});
    report(mr_cmd_plot,
           (char*[]){"plot", "-f", "-o", out_svg, "--data", out_json, "--sites", "3", path, NULL});
    return 0;
}
