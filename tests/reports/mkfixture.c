// SPDX-License-Identifier: MIT
// reports_fixture [--hostile] PATH: writes the standard report-test capture (fixture.c), or
// the one with hostile names, to PATH, for tests driven from scripts (the browser test).
#include "fixture.h"

#include <stdio.h>
#include <string.h>

int main(int argc, char** argv) {
    if (argc == 3 && !strcmp(argv[1], "--hostile")) {
        fx_hostile(argv[2]);
        return 0;
    }
    if (argc != 2) {
        fputs("usage: reports_fixture [--hostile] CAPTURE\n", stderr);
        return 1;
    }
    fx_standard(argv[1]);
    return 0;
}
