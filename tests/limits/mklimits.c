// SPDX-License-Identifier: MIT
// limits_fixture CASE PATH: writes a capture at the edges of what readers accept
// (docs/capture-format.md, "Limits") through the project's own writer, for check_limits.py.
// Test-only; exits 99 on any setup failure (fixture.c).
#include "fixture.h"

#include "memtrace/schema.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

static void stack(fx* f) {
    fx_sql(f, "INSERT INTO meta VALUES('exe','/usr/bin/prog'),('cmdline','[\"prog\"]'),"
              "('pid','4242'),('symbolized','1');"
              "INSERT INTO thread(tid, name) VALUES(100,'main');"
              "INSERT INTO mapping VALUES(1,'/usr/bin/prog',4096,65536,0,'ab',0,NULL);"
              "INSERT INTO frame VALUES(1,1,4097,4097,'main','prog.c',10,NULL,1),"
              "(2,1,4098,4098,'make_pool','pool.c',20,NULL,1),"
              "(3,1,4099,4099,'make_node','tree.c',30,NULL,1);"
              "INSERT INTO callsite VALUES(1,0,1,1),(2,1,2,2),(3,1,3,2);");
}

// Sizes (all allocations live at the end, so every report sums them all).
static void sizes(fx* f, const char* which) {
    const uint64_t g62 = UINT64_C(1) << 62;
    if (!strcmp(which, "size-over")) { // the tracer never writes a size over 2^63-1
        fx_alloc(f, 100, 0x1000, UINT64_C(1) << 63, 2);
        fx_alloc(f, 100, 0x2000, UINT64_C(1) << 63, 2);
        fx_alloc(f, 100, 0x3000, 100, 3);
    } else if (!strcmp(which, "size-max")) { // exact: 2^63-1 in one block
        fx_alloc(f, 100, 0x1000, (uint64_t)INT64_MAX, 2);
    } else if (!strcmp(which, "size-half")) { // exact: a process's share of 2^63-1 among 2
        fx_alloc(f, 100, 0x1000, g62 - 1, 2);
    } else if (!strcmp(which, "size-sum-max")) { // exact: 2^63-1 in all, two sites
        fx_alloc(f, 100, 0x1000, g62, 2);
        fx_alloc(f, 100, 0x2000, g62 - 1, 3);
    } else { // size-sum-over: each size fine, their sum over 2^63-1
        for (uint64_t i = 1; i <= 3; i++)
            fx_alloc(f, 100, 0x1000 * i, g62, 2);
    }
}

// Times (ns since the capture's start; the tracer's are never negative).
static void times(fx* f, const char* which) {
    const int64_t edge = (INT64_C(1) << 62) - 1;
    int64_t at[3] = {-1500000000, -1000000000, 500000000}; // ts-negative: before the start
    if (!strcmp(which, "ts-extreme")) {                    // the farthest a reader accepts
        at[0] = -edge;
        at[1] = 0;
        at[2] = edge;
    } else if (!strcmp(which, "ts-over")) { // the tracer never writes these
        at[0] = 1000;
        at[1] = INT64_MIN;
        at[2] = INT64_MAX;
    }
    fx_alloc(f, 100, 0x1000, 100, 2);
    f->ev[f->n - 1].ts = at[0];
    fx_alloc(f, 100, 0x2000, 200, 3);
    f->ev[f->n - 1].ts = at[1];
    fx_free(f, 100, 0x1000);
    f->ev[f->n - 1].ts = at[2];
}

int main(int argc, char** argv) {
    static const char* const cases[] = {"size-over",    "size-max",      "size-half",
                                        "size-sum-max", "size-sum-over", "ts-negative",
                                        "ts-extreme",   "ts-over"};
    const char* which = argc == 3 ? argv[1] : "";
    bool known = false;
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
        known |= !strcmp(which, cases[i]);
    if (!known) {
        fputs("usage: limits_fixture CASE CAPTURE\ncases:", stderr);
        for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
            fprintf(stderr, " %s", cases[i]);
        fputc('\n', stderr);
        return 1;
    }
    fx f;
    fx_open(&f, argv[2]);
    stack(&f);
    if (!strncmp(which, "ts-", 3))
        times(&f, which);
    else
        sizes(&f, which);
    fx_finish(&f, "complete");
    return 0;
}
