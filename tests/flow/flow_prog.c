// SPDX-License-Identifier: MIT
// A traced program for memreport flow (flow_test.py) whose lines allocate known bytes along
// known call paths (built -O0 -fno-inline with frame pointers, no stdio so nothing else
// allocates under main). Phases, each after a pause so their times are distinct (the test
// reads them from the capture; nothing depends on how long they take):
//   1. main -> reader -> make_buf: 3 x 1000, kept to the end
//   -- "after reading": 3000 bytes live
//   2. main -> parser -> make_buf: 2 x 2000, freed after the peak; parser itself: 500 (kept)
//   3. main -> pass_a -> pass_b -> pass_c -> make_buf: 1200, kept (a chain of lines that
//      allocate nothing: one box)
//   -- the peak: 3000 + 4500 + 1200 = 8700 bytes live; make_buf's malloc line holds 8200
//   4. the frees of phase 2: 4700 bytes live
// Every call below is on a line of its own, so each caller line is known to the test by
// the marker comment at its end (FLOW: name).
#include <stdlib.h>
#include <string.h>
#include <time.h>

static char* kept[3];
static char* parsed[2];
static char* parser_own;
static char* chained;

__attribute__((noinline)) static char* make_buf(size_t n) {
    char* p = malloc(n); // FLOW: make_buf malloc
    if (p)
        memset(p, 1, n);
    return p;
}

__attribute__((noinline)) static void reader(void) {
    for (int i = 0; i < 3; i++)
        kept[i] = make_buf(1000); // FLOW: reader call
}

__attribute__((noinline)) static void parser(void) {
    for (int i = 0; i < 2; i++)
        parsed[i] = make_buf(2000); // FLOW: parser call
    parser_own = malloc(500);       // FLOW: parser malloc
}

__attribute__((noinline)) static void pass_c(void) {
    chained = make_buf(1200); // FLOW: pass_c call
}

__attribute__((noinline)) static void pass_b(void) {
    pass_c(); // FLOW: pass_b call
}

__attribute__((noinline)) static void pass_a(void) {
    pass_b(); // FLOW: pass_a call
}

static void pause_briefly(void) {
    struct timespec ts = {0, 2000000}; // 2 ms
    nanosleep(&ts, NULL);
}

int main(void) {
    reader(); // FLOW: main reader
    pause_briefly();
    parser(); // FLOW: main parser
    pause_briefly();
    pass_a(); // FLOW: main pass_a
    pause_briefly();
    for (int i = 0; i < 2; i++)
        free(parsed[i]);
    return kept[0] && parser_own && chained ? 0 : 1;
}
