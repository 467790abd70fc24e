// SPDX-License-Identifier: MIT
// What a legend calls each process of a tree (reporter/render/procs_report.h,
// mr_procs_report_legend_names): its program, and the arguments that tell it from the others of the
// same program, cut in the middle keeping where they differ, always valid UTF-8.
#include "procs_report.h"

#include "../check.h"

#include <stdlib.h>
#include <string.h>

#define N 6

static mr_process proc(const char* cmdline, const char* name) {
    return (mr_process){.cmdline = (char*)cmdline, .name = name, .pid = 1};
}

static void names_of(mr_process* procs, size_t n, char** prog, char** args) {
    mr_capture_set s = {.procs = procs, .n = n};
    CHECK_EQ_I64(mr_procs_report_legend_names(&s, prog, args), 0);
}

static void free_names(char** prog, char** args, size_t n) {
    for (size_t i = 0; i < n; i++) {
        free(prog[i]);
        free(args[i]);
    }
}

// Compilers of one command but their file, and a unique make: the files alone; make whole.
static void test_compilers(void) {
    mr_process p[] = {
        proc("[\"make\",\"-j2\"]", "1.make.db"),
        proc("[\"/usr/lib/gcc/cc1\",\"-quiet\",\"-O2\",\"foo.c\",\"-o\",\"/tmp/a.s\"]", "2.cc1.db"),
        proc("[\"/usr/lib/gcc/cc1\",\"-quiet\",\"-O2\",\"bar.c\",\"-o\",\"/tmp/b.s\"]", "3.cc1.db"),
        proc("[\"/usr/lib/gcc/cc1\",\"-quiet\",\"-O2\",\"bar.c\",\"-o\",\"/tmp/b.s\"]", "4.cc1.db"),
        proc(NULL, "5.x.db"),
    };
    char *prog[5], *args[5];
    names_of(p, 5, prog, args);
    CHECK_EQ_STR(prog[0], "make");
    CHECK_EQ_STR(args[0], "-j2");
    CHECK_EQ_STR(prog[1], "cc1");
    CHECK_EQ_STR(args[1], "foo.c /tmp/a.s");
    CHECK_EQ_STR(args[2], "bar.c /tmp/b.s");
    // The same command twice: what tells it from the third (the pid tells the two apart).
    CHECK_EQ_STR(args[3], "bar.c /tmp/b.s");
    CHECK_EQ_STR(prog[4], "5.x.db"); // no command: the capture's name
    CHECK_EQ_STR(args[4], "");
    free_names(prog, args, 5);
}

// Long arguments differing in a path component: that component onwards, after what fits of
// the start; a long program name cut in the middle; a cut never splits a character.
static void test_cuts(void) {
    mr_process p[N] = {
        proc("[\"/bin/a-program-whose-name-is-long\",\"--input=/srv/a-long-directory/run-3/"
             "data.csv\"]",
             "1.db"),
        proc("[\"/bin/a-program-whose-name-is-long\",\"--input=/srv/a-long-directory/run-10/"
             "data.csv\"]",
             "2.db"),
        proc("[\"t\",\"--a-rather-long-option=\\u00e9\\u00e9\\u00e9\\u00e9\\u00e9\\u00e9\\u00e9"
             "\\u00e9\\u00e9\\u00e9\\u00e9\\u00e9\\u00e9\\u00e9\\u00e9\\u00e9\\u00e9\"]",
             "3.db"),
        proc("[\"u\",\"\\u00e9\\u00e9\\u00e9\\u00e9\\u00e9\\u00e9\\u00e9\\u00e9\\u00e9\\u00e9"
             "\\u00e9\\u00e9\\u00e9\\u00e9\\u00e9\\u00e9\\u00e91\"]",
             "4.db"),
        proc("[\"u\",\"\\u00e9\\u00e9\\u00e9\\u00e9\\u00e9\\u00e9\\u00e9\\u00e9\\u00e9\\u00e9"
             "\\u00e9\\u00e9\\u00e9\\u00e9\\u00e9\\u00e9\\u00e92\"]",
             "5.db"),
        proc("[\"v\",\"--same-start-and-then-a-long-stretch-that-differs-at-once-A\"]", "6.db"),
    };
    char *prog[N], *args[N];
    names_of(p, N, prog, args);
    CHECK_EQ_STR(prog[0], "a-progra\xe2\x80\xa6-is-long");
    CHECK_EQ_STR(args[0], "--input=\xe2\x80\xa6run-3/data.csv");
    CHECK_EQ_STR(args[1], "--input\xe2\x80\xa6run-10/data.csv");
    // A program of its own: the start and the end of its arguments.
    CHECK_EQ_STR(args[5], "--same-star\xe2\x80\xa6s-at-once-A");
    CHECK(strlen(args[2]) <= 22 + 3 && strstr(args[2], "\xe2\x80\xa6"));
    // Each its last character whole, and what differs (1 and 2) in sight.
    CHECK(strstr(args[3], "1") && strstr(args[4], "2"));
    for (size_t i = 0; i < N; i++)
        for (const char* c = args[i]; *c; c++) // no character cut: no bare continuation byte
            CHECK(((unsigned char)*c & 0xc0) != 0x80 || ((unsigned char)c[-1] & 0x80));
    free_names(prog, args, N);
}

// Differing from the first byte (or all but the first few): the start and the end, as a
// command of its own.
static void test_differ_at_once(void) {
    mr_process p[] = {
        proc("[\"x\",\"</script><script>window.__pwned=2</script>\"]", "1.db"),
        proc("[\"x\",\"<img src=x onerror=window.__pwned=1>\"]", "2.db"),
    };
    char *prog[2], *args[2];
    names_of(p, 2, prog, args);
    CHECK_EQ_STR(args[0], "</script><s\xe2\x80\xa6=2</script>");
    CHECK_EQ_STR(args[1], "<img src=x \xe2\x80\xa6.__pwned=1>");
    free_names(prog, args, 2);
}

int main(void) {
    test_compilers();
    test_cuts();
    test_differ_at_once();
    CHECK_DONE();
}
