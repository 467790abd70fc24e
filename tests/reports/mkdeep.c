// SPDX-License-Identifier: MIT
// reports_deep_fixture PATH: a capture shaped like a deep interpreter (python3's flame graph
// is 2,600 px tall), for the flame graph's orientation test. Under main (callsite 1):
//   - a wide chain step_1 .. step_30 (callsites 2..31): each step_K allocates 100 bytes
//     itself and step_30 allocates 6000 more, so these frames hold 9000 of 10000 bytes;
//   - a narrow chain recurse_1 .. recurse_150 (callsites 101..250) whose leaf allocates
//     1000 bytes: 152 rows deep, 10% wide.
// A page that opens at the wrong end of this graph shows only the narrow chain or nothing.
#include "fixture.h"

#include <stdio.h>

enum { WIDE = 30, DEEP = 150, DEEP_BASE = 100 };

int main(int argc, char** argv) {
    if (argc != 2) {
        fputs("usage: reports_deep_fixture CAPTURE\n", stderr);
        return 1;
    }
    fx f;
    fx_open(&f, argv[1]);
    fx_sql(&f, "INSERT INTO meta VALUES('exe','/usr/bin/deep'),('cmdline','[\"deep\"]'),"
               "('pid','4243'),('symbolized','1');"
               "INSERT INTO thread(tid, name) VALUES(100,'main');"
               "INSERT INTO mapping VALUES(1,'/usr/bin/deep',4096,1048576,0,'ab',0,NULL);"
               "INSERT INTO frame VALUES(1,1,4097,4097,'main','deep.c',1,NULL,1);"
               "INSERT INTO callsite VALUES(1,0,1,1);");
    char sql[256];
    // Frame and callsite ids are equal; rel_pc and pc are 4096 + id.
    for (int k = 1; k <= WIDE + DEEP; k++) {
        int id = k <= WIDE ? 1 + k : DEEP_BASE + k - WIDE;
        int parent = k == 1 || k == WIDE + 1 ? 1 : id - 1;
        int depth = k <= WIDE ? 1 + k : 1 + k - WIDE;
        snprintf(sql, sizeof sql,
                 "INSERT INTO frame VALUES(%d,1,%d,%d,'%s_%d','deep.c',%d,NULL,1);"
                 "INSERT INTO callsite VALUES(%d,%d,%d,%d);",
                 id, 4096 + id, 4096 + id, k <= WIDE ? "step" : "recurse", k <= WIDE ? k : k - WIDE,
                 id, id, parent, id, depth);
        fx_sql(&f, sql);
    }
    uint64_t addr = 0x10000;
    for (uint32_t cs = 2; cs <= 1 + WIDE; cs++, addr += 0x1000)
        fx_alloc(&f, 100, addr, 100, cs);
    fx_alloc(&f, 100, addr, 6000, 1 + WIDE);
    fx_alloc(&f, 100, addr + 0x10000, 1000, DEEP_BASE + DEEP);
    fx_finish(&f, "complete");
    return 0;
}
