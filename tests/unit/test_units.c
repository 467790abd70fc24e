// SPDX-License-Identifier: MIT
// Units and times shared by every report: 1024-based sizes labelled KiB/MiB/GiB/TiB (the
// NPU plot alone keeps upstream's KB/MB/GB), the one parser of time arguments (--at) with
// its messages, and how far a native or an imported NPU capture reaches in time.
#include "cmd.h"
#include "extent.h"
#include "load.h"
#include "opts.h"
#include "when.h"

#include "../check.h"
#include "../reports/fixture.h"
#include "../tmpdir.h"
#include "memtrace/units.h"

#include <fcntl.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <unistd.h>

static void test_bytes(void) {
    static const struct {
        uint64_t bytes;
        const char* text;
        const char* unit;
    } cases[] = {{0, "0 B", "B"},
                 {1023, "1023 B", "B"},
                 {1024, "1.00 KiB", "KiB"},
                 {4000, "3.91 KiB", "KiB"},
                 {15630856, "14.91 MiB", "MiB"}, // the example
                 {3ull << 30, "3.00 GiB", "GiB"},
                 {5ull << 40, "5.00 TiB", "TiB"},
                 {UINT64_MAX, "16777216.00 TiB", "TiB"}};
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char buf[32];
        CHECK_EQ_STR(mt_units_format_bytes(cases[i].bytes, buf, sizeof buf), cases[i].text);
        CHECK_EQ_STR(mt_units_for_bytes(cases[i].bytes).name, cases[i].unit);
    }
    CHECK_EQ_I64(mt_units_for_bytes(5ull << 40).scale, 1ull << 40);
    // Upstream's NPU plotter: the same 1024 multiples, its own names, nothing above GB.
    CHECK_EQ_STR(mt_units_npu_for_bytes(1023).name, "B");
    CHECK_EQ_STR(mt_units_npu_for_bytes(1024).name, "KB");
    CHECK_EQ_STR(mt_units_npu_for_bytes(3u << 20).name, "MB");
    CHECK_EQ_STR(mt_units_npu_for_bytes(5ull << 40).name, "GB");
    CHECK_EQ_I64(mt_units_npu_for_bytes(5ull << 40).scale, 1ull << 30);
}

// What a call printed on stderr (the caller frees).
static char* err_path(void) {
    static char path[512];
    snprintf(path, sizeof path, "%s/stderr.txt", test_tmpdir());
    return path;
}
static int saved_stderr = -1;
static void capture_stderr(void) {
    fflush(stderr);
    saved_stderr = dup(2);
    int fd = open(err_path(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    dup2(fd, 2);
    close(fd);
}
static char* restore_stderr(void) {
    fflush(stderr);
    dup2(saved_stderr, 2);
    close(saved_stderr);
    return fx_read(err_path());
}

static void parses(const char* value, int64_t want, bool step) {
    mr_time t = {-1, !step};
    capture_stderr();
    int rc = mr_opts_parse_time("--at", value, &t);
    char* err = restore_stderr();
    CHECK_EQ_I64(rc, 0);
    CHECK_EQ_I64(t.value, want);
    CHECK_EQ_I64(t.step, step);
    CHECK_EQ_STR(err, ""); // nothing said on success
    free(err);
}

// Refused as a usage error with exactly `message` on stderr.
static void refused(const char* value, const char* message) {
    mr_time t;
    capture_stderr();
    int rc = mr_opts_parse_time("--at", value, &t);
    char* err = restore_stderr();
    CHECK_EQ_I64(rc, MR_EXIT_USAGE);
    CHECK_EQ_STR(err, message);
    free(err);
}

#define EXPECTED                                                                                   \
    "expected a time with its unit, ns, us, ms or s (e.g. 20ms, 1.5s), or step N for an "          \
    "imported NPU log\n"

static void test_parse(void) {
    parses("20ms", 20000000, false);
    parses("1.5s", 1500000000, false);
    parses("250 us", 250000, false);
    parses("100ns", 100, false);
    parses("0ns", 0, false);
    parses("0.5us", 500, false);
    parses("step 3", 3, true);
    parses("step3", 3, true);
    parses("step 0", 0, true);
    // A bare number has no unit: refused, never taken as ns (an empty graph, silently).
    refused("5", "memreport: --at 5: no unit: " EXPECTED);
    refused("1.5", "memreport: --at 1.5: no unit: " EXPECTED);
    refused("5 parsecs", "memreport: --at 5 parsecs: unknown unit 'parsecs': " EXPECTED);
    refused("1e3s", "memreport: --at 1e3s: unknown unit 'e3s': " EXPECTED);
    refused("5S", "memreport: --at 5S: unknown unit 'S': " EXPECTED);
    refused("soon", "memreport: --at soon: not a time: " EXPECTED);
    refused("-5ms", "memreport: --at -5ms: not a time: " EXPECTED);
    refused("inf s", "memreport: --at inf s: not a time: " EXPECTED);
    refused("", "memreport: --at : not a time: " EXPECTED);
    refused("99999999999s", "memreport: --at 99999999999s: too large a time\n");
    refused("step", "memreport: --at step: not a step: expected step N, N a whole number\n");
    refused("step -1", "memreport: --at step -1: not a step: expected step N, N a whole number\n");
    refused("step 1.5",
            "memreport: --at step 1.5: not a step: expected step N, N a whole number\n");
    refused("step 99999999999999999999",
            "memreport: --at step 99999999999999999999: not a step: expected step N, N a whole "
            "number\n");
}

// mr_when_check_time: rc, *ts and stderr.
static void in_capture(const char* value, mr_extent extent, int want_rc, int64_t want_ts,
                       const char* message) {
    mr_time t;
    CHECK_EQ_I64(mr_opts_parse_time("--at", value, &t), 0);
    int64_t ts = -1;
    capture_stderr();
    int rc = mr_when_check_time("--at", value, t, "app.db", extent, &ts);
    char* err = restore_stderr();
    CHECK_EQ_I64(rc, want_rc);
    CHECK_EQ_I64(ts, want_ts);
    CHECK_EQ_STR(err, message);
    free(err);
}

static void test_in_capture(void) {
    mr_extent native = {1234000000, false}, npu = {5, true};
    in_capture("1.234s", native, 0, 1234000000, ""); // the very end is inside
    in_capture("0ns", native, 0, 0, "");
    in_capture("99s", native, MR_EXIT_USAGE, -1,
               "memreport: --at 99s: past the end of app.db (duration 1.234 s)\n");
    in_capture("1234000001ns", native, MR_EXIT_USAGE, -1,
               "memreport: --at 1234000001ns: past the end of app.db (duration 1.234 s)\n");
    in_capture("step 3", native, MR_EXIT_USAGE, -1,
               "memreport: --at step 3: app.db is timed in ns, not steps: expected a time with "
               "a unit (e.g. 20ms, 1.5s)\n");
    in_capture("step 4", npu, 0, 4, "");
    in_capture("step 5", npu, MR_EXIT_USAGE, -1,
               "memreport: --at step 5: past the end of app.db (5 steps: step 0 to step 4)\n");
    in_capture("3ns", npu, MR_EXIT_USAGE, -1,
               "memreport: --at 3ns: app.db is an imported NPU log, timed in allocation steps: "
               "expected step N (0 to 4)\n");
    char buf[32];
    CHECK_EQ_STR(mr_extent_format_time(3, true, buf, sizeof buf), "step 3");
    CHECK_EQ_STR(mr_extent_format_time(2500000, false, buf, sizeof buf), "2.5 ms");
}

static mr_extent extent_of(const char* path) {
    mt_capture* cap = NULL;
    mr_extent e = {-1, false};
    CHECK_EQ_I64(mr_load_capture(path, &cap), 0);
    if (cap)
        e = mr_extent_of(cap, mr_extent_default_heap(cap));
    mt_capture_close(cap);
    return e;
}

static void test_extent(void) {
    // Native: the recorded duration (events at 1, 2, 3 us; the fixture records 4 us).
    char cap[512];
    snprintf(cap, sizeof cap, "%s/native.db", test_tmpdir());
    fx f;
    fx_open(&f, cap);
    fx_alloc(&f, 1, 0x1000, 10, 0);
    fx_alloc(&f, 1, 0x2000, 10, 0);
    fx_free(&f, 1, 0x1000);
    fx_finish(&f, "complete");
    mr_extent e = extent_of(cap);
    CHECK_EQ_I64(e.end, 4000);
    CHECK(!e.steps);
    // A capture cut short has no duration: its last event ends it.
    sqlite3* db;
    CHECK_EQ_I64(sqlite3_open(cap, &db), SQLITE_OK);
    CHECK_EQ_I64(sqlite3_exec(db, "DELETE FROM meta WHERE key='duration_ns'", NULL, NULL, NULL),
                 SQLITE_OK);
    sqlite3_close(db);
    e = extent_of(cap);
    CHECK_EQ_I64(e.end, 3000);

    // An imported NPU log: its steps as upstream counts them (the sample has 5: 0 to 4; its
    // last frees are stamped step 5, after the last step).
    char npu[512];
    snprintf(npu, sizeof npu, "%s/sample.db", test_tmpdir());
    CHECK_EQ_I64(fx_run(mr_cmd_import, "import", NPU_FIXTURES "/sample.log", "-o", npu, NULL), 0);
    e = extent_of(npu);
    CHECK_EQ_I64(e.end, 5);
    CHECK(e.steps);
}

int main(void) {
    test_bytes();
    test_parse();
    test_in_capture();
    test_extent();
    CHECK_DONE();
}
