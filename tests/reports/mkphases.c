// SPDX-License-Identifier: MIT
// reports_phases_fixture PATH: a capture with functions called from several places, a
// recursion and three phases in time, for the flame graph page's inverted mode, function
// table, sandwich and temporal range (tests/reports/page_views_test.py). ts = seq us.
// Frames: main, parse, build, xalloc, render, walk. Callsites:
//   1 main                      5 main>build>xalloc           9 main>walk
//   2 main>parse                6 main>build>parse           10 main>walk>walk
//   3 main>parse>xalloc         7 main>build>parse>xalloc    11 main>walk>walk>xalloc
//   4 main>build                8 main>render
// Events, live bytes after each:
//   1-7  cs3 1000, cs2 200, cs5 3000, cs7 500, cs4 100, cs9 50, cs11 250   -> 5100 (peak)
//   8-9  free cs5, free cs3                                               -> 2100, 1100
//   10-11 cs8 2000, cs8 1000                                              -> 3100, 4100
//   12-13 free both cs8 blocks                                            -> 2100, 1100
//   14   cs5 1500                                                         -> 2600 (end)
// At the peak, per function: xalloc self 4750; parse self 200, total 1700; build self
// 100, total 3600; walk self 50, total 300 (its recursion counted once); main total 5100.
#include "fixture.h"

#include <stdio.h>

int main(int argc, char** argv) {
    if (argc != 2) {
        fputs("usage: reports_phases_fixture CAPTURE\n", stderr);
        return 1;
    }
    fx f;
    fx_open(&f, argv[1]);
    fx_sql(&f, "INSERT INTO meta VALUES('exe','/usr/bin/phases'),('cmdline','[\"phases\"]'),"
               "('pid','4244'),('symbolized','1');"
               "INSERT INTO thread(tid, name) VALUES(100,'main');"
               "INSERT INTO mapping VALUES(1,'/usr/bin/phases',4096,65536,0,'ab',0,NULL);"
               "INSERT INTO frame VALUES"
               "(1,1,4097,4097,'main','phases.c',1,NULL,1),"
               "(2,1,4098,4098,'parse','phases.c',2,NULL,1),"
               "(3,1,4099,4099,'build','phases.c',3,NULL,1),"
               "(4,1,4100,4100,'xalloc','phases.c',4,NULL,1),"
               "(5,1,4101,4101,'render','phases.c',5,NULL,1),"
               "(6,1,4102,4102,'walk','phases.c',6,NULL,1);"
               "INSERT INTO callsite VALUES(1,0,1,1),(2,1,2,2),(3,2,4,3),(4,1,3,2),(5,4,4,3),"
               "(6,4,2,3),(7,6,4,4),(8,1,5,2),(9,1,6,2),(10,9,6,3),(11,10,4,4);");
    fx_alloc(&f, 100, 0x1000, 1000, 3); // seq 1
    fx_alloc(&f, 100, 0x2000, 200, 2);
    fx_alloc(&f, 100, 0x3000, 3000, 5);
    fx_alloc(&f, 100, 0x4000, 500, 7);
    fx_alloc(&f, 100, 0x5000, 100, 4);
    fx_alloc(&f, 100, 0x6000, 50, 9);
    fx_alloc(&f, 100, 0x7000, 250, 11); // seq 7: the peak, 5100 bytes
    fx_free(&f, 100, 0x3000);
    fx_free(&f, 100, 0x1000);
    fx_alloc(&f, 100, 0x8000, 2000, 8); // seq 10
    fx_alloc(&f, 100, 0x9000, 1000, 8); // seq 11: 4100 bytes, the top of phase 2
    fx_free(&f, 100, 0x8000);
    fx_free(&f, 100, 0x9000);
    fx_alloc(&f, 100, 0xa000, 1500, 5); // seq 14
    fx_finish(&f, "complete");
    return 0;
}
