// SPDX-License-Identifier: MIT
// Every report on a capture with no events in its heap (a program that never allocated,
// or an NPU import whose log had no allocation): exit 0, empty tables, and no undefined
// behaviour on the empty arrays (qsort(NULL, 0) in stats; run under make test-sanitize).
#include "cmd.h"

#include "../check.h"
#include "../reports/fixture.h"
#include "../tmpdir.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>

int main(void) {
    char cap[512], out[512];
    snprintf(cap, sizeof cap, "%s/empty.db", test_tmpdir());
    snprintf(out, sizeof out, "%s/out", test_tmpdir());
    fx f;
    fx_open(&f, cap);
    fx_sql(&f, "INSERT INTO meta VALUES('symbolized','1');");
    fx_finish(&f, "complete");

    CHECK_EQ_I64(fx_run(mr_cmd_stats, "stats", cap, "--json", "-f", "-o", out, NULL), 0);
    json_t* s = json_load_file(out, 0, NULL);
    CHECK(json_is_array(json_object_get(s, "threads")));
    CHECK_EQ_I64(json_array_size(json_object_get(s, "threads")), 0);
    CHECK_EQ_I64(json_array_size(json_object_get(s, "by_peak")), 0);
    CHECK_EQ_I64(json_integer_value(json_object_get(s, "allocations")), 0);
    json_decref(s);
    CHECK_EQ_I64(fx_run(mr_cmd_stats, "stats", cap, "-f", "-o", out, NULL), 0);
    CHECK_EQ_I64(fx_run(mr_cmd_summary, "summary", cap, "-f", "-o", out, NULL), 0);
    CHECK_EQ_I64(fx_run(mr_cmd_leaks, "leaks", cap, "-f", "-o", out, NULL), 0);
    CHECK_EQ_I64(fx_run(mr_cmd_stacks, "stacks", cap, "-f", "-o", out, NULL), 0);
    CHECK_EQ_I64(fx_run(mr_cmd_flamegraph, "flamegraph", cap, "-f", "-o", out, NULL), 0);
    CHECK_DONE();
}
