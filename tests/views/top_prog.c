// SPDX-License-Identifier: MIT
// A traced program for memreport top (top_test.py) whose functions allocate known bytes
// along known call paths (built -O0 -fno-inline with frame pointers, no stdio so nothing
// else allocates under main). Phases, each after a pause so the times between them are
// distinct (the test reads them from the capture; nothing depends on how long they take):
//   1. reader -> make_buf: 3 x 1000, kept to the end (leaked)
//   2. parser -> make_buf: 2 x 2000, freed after the peak; parser itself: 500, leaked
//   3. walk(3) -> walk(2) -> walk(1) -> walk(0) -> make_buf: 300; each walk level: 40
//      itself (160 in 4); all freed after the peak
//   -- the peak: 3000 + 4500 + 460 = 7960 bytes live
//   4. the frees of phases 2 and 3 (500 of parser's stay): 3500 bytes live
//   5. tidy: 10 bytes freed at once; other_tidy -> tidy of top_prog_b.c: 20, freed at once
//   6. a thread: churner -> churn -> make_buf: 100 x 64, each freed at once (main's own
//      allocations in pthread_create come here too: its totals are checked before)
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static char* kept[3];
static char* parsed[2];
static char* parser_own;
static char* walked[5];

__attribute__((noinline)) static char* make_buf(size_t n) {
    char* p = malloc(n);
    if (p)
        memset(p, 1, n);
    return p;
}

__attribute__((noinline)) static void reader(void) {
    for (int i = 0; i < 3; i++)
        kept[i] = make_buf(1000);
}

__attribute__((noinline)) static void parser(void) {
    for (int i = 0; i < 2; i++)
        parsed[i] = make_buf(2000);
    parser_own = malloc(500);
}

__attribute__((noinline)) static void walk(int depth) {
    walked[depth + 1] = malloc(40);
    if (depth > 0)
        walk(depth - 1);
    else
        walked[0] = make_buf(300);
}

__attribute__((noinline)) static void churn(void) {
    for (int i = 0; i < 100; i++) {
        char* volatile p = make_buf(64);
        free(p);
    }
}

__attribute__((noinline)) static void tidy(void) {
    char* volatile p = malloc(10);
    free(p);
}

void other_tidy(void); // top_prog_b.c

static void* churner(void* arg) {
    churn();
    return arg;
}

static void pause_briefly(void) {
    struct timespec ts = {0, 2000000}; // 2 ms
    nanosleep(&ts, NULL);
}

int main(void) {
    reader();
    pause_briefly();
    parser();
    pause_briefly();
    walk(3);
    pause_briefly();
    for (int i = 0; i < 2; i++)
        free(parsed[i]);
    for (int i = 0; i < 5; i++)
        free(walked[i]);
    pause_briefly();
    tidy();
    other_tidy();
    pthread_t t; // after a pause: --at the last free of phase 4 sees no thread yet
    if (pthread_create(&t, NULL, churner, NULL) || pthread_join(t, NULL))
        return 1;
    return kept[0][0] + kept[2][999] == 2 && parser_own ? 0 : 1;
}
