// SPDX-License-Identifier: MIT
// reports_fixture PATH: writes the standard report-test capture (fixture.c) to PATH, for
// tests driven from scripts (the browser test).
#include "fixture.h"

#include <stdio.h>

int main(int argc, char** argv) {
    if (argc != 2) {
        fputs("usage: reports_fixture CAPTURE\n", stderr);
        return 1;
    }
    fx_standard(argv[1]);
    return 0;
}
