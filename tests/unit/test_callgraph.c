// SPDX-License-Identifier: MIT
// The call graph (reporter/model/callgraph.h) on hand-built stacks with a recursive
// function and an inlined one, whose every call is worked out below, and on the standard
// fixture (tests/reports/fixture.c), where without recursion each function's callers add
// up to its total, and so do its callees plus its self, in every metric.
#include "callgraph.h"

#include "../check.h"
#include "../reports/fixture.h"
#include "../tmpdir.h"
#include "memtrace/schema.h"

#include <stdio.h>
#include <string.h>

static void open_capture(const char* path, mt_capture** cap, mr_symbols** sy, mr_profile* p) {
    char err[256] = "", msg[512];
    CHECK_EQ_I64(mt_capture_open(path, cap, err, sizeof err), 0);
    CHECK_EQ_I64(mr_symbols_load(*cap, sy, msg, sizeof msg), 0);
    mr_query q = MR_QUERY_INIT(MT_HEAP_LIBC);
    CHECK_EQ_I64(mr_profile_build(*cap, &q, p, err, sizeof err), 0);
}

static uint32_t fn_index(const mr_functions* f, const char* name) {
    if (!strcmp(name, "(root)"))
        return MR_CALLGRAPH_ROOT;
    for (size_t i = 0; i < f->n; i++)
        if (!strcmp(f->v[i].name, name))
            return (uint32_t)i;
    fprintf(stderr, "no function %s\n", name);
    CHECK(0);
    return MR_CALLGRAPH_ROOT - 1;
}

static const mr_call* find_call(const mr_callgraph* g, uint32_t caller, uint32_t callee) {
    for (size_t i = 0; i < g->n; i++)
        if (g->v[i].caller == caller && g->v[i].callee == callee)
            return &g->v[i];
    return NULL;
}

// One call's allocated bytes and count.
static void check_call(const mr_callgraph* g, const mr_functions* f, const char* caller,
                       const char* callee, uint64_t bytes, uint64_t count) {
    const mr_call* c = find_call(g, fn_index(f, caller), fn_index(f, callee));
    if (!c || c->value[MR_METRIC_ALLOC_BYTES] != bytes || c->value[MR_METRIC_ALLOC_COUNT] != count)
        fprintf(stderr, "%s -> %s: %s %llu in %llu\n", caller, callee, c ? "has" : "missing",
                c ? (unsigned long long)c->value[MR_METRIC_ALLOC_BYTES] : 0ULL,
                c ? (unsigned long long)c->value[MR_METRIC_ALLOC_COUNT] : 0ULL);
    CHECK(c != NULL);
    if (!c)
        return;
    CHECK_EQ_I64(c->value[MR_METRIC_ALLOC_BYTES], bytes);
    CHECK_EQ_I64(c->value[MR_METRIC_ALLOC_COUNT], count);
}

// Frames: 1 main, 2 a, 3 b, 4 c, 5 f (recursive), 6 h with g inlined into it. Stacks
// (root first) and allocations:
//   main a c       100      main b c      200     main a   10
//   main b f f c  1000      main b f f     50     main h[g] 7    no stack 3
//   main b f f f f   5
// The calls: root->main 1372 in 7; main->a 110 in 2; main->b 1255 in 4; main->h 7; h->g 7
// (g inlined: its caller is the function it is inlined into); a->c 100; b->c 200; b->f
// 1055 in 3; f->f 1055 in 3 (once per stack, though the last stack shows it three
// times); f->c 1000; root->(no stack) 3.
static void make_graph(const char* path) {
    fx f;
    fx_open(&f, path);
    fx_sql(&f, "INSERT INTO meta VALUES('symbolized','1');"
               "INSERT INTO mapping VALUES(1,'/usr/bin/cg',4096,65536,0,'ab',0,NULL);"
               "INSERT INTO frame VALUES(1,1,4097,4097,'main','cg.c',1,NULL,1),"
               "(2,1,4098,4098,'a','cg.c',2,NULL,1),(3,1,4099,4099,'b','cg.c',3,NULL,1),"
               "(4,1,4100,4100,'c','cg.c',4,NULL,1),(5,1,4101,4101,'f','cg.c',5,NULL,1),"
               "(6,1,4102,4102,'h','cg.c',6,"
               " '[{\"function\":\"g\",\"file\":\"g.h\",\"line\":3}]',1);"
               "INSERT INTO callsite VALUES(1,0,1,1),(2,1,2,2),(3,2,4,3),(4,1,3,2),"
               "(5,4,4,3),(6,4,5,3),(7,6,5,4),(8,7,4,5),(9,1,6,2),(10,7,5,5),(11,10,5,6);");
    fx_alloc(&f, 100, 0x1000, 100, 3);
    fx_alloc(&f, 100, 0x2000, 200, 5);
    fx_alloc(&f, 100, 0x3000, 10, 2);
    fx_alloc(&f, 100, 0x4000, 1000, 8);
    fx_alloc(&f, 100, 0x5000, 50, 7);
    fx_alloc(&f, 100, 0x6000, 7, 9);
    fx_alloc(&f, 100, 0x7000, 3, 0);
    fx_alloc(&f, 100, 0x8000, 5, 11);
    fx_finish(&f, "complete");
}

static void test_graph(void) {
    char path[512];
    snprintf(path, sizeof path, "%s/callgraph.db", test_tmpdir());
    make_graph(path);
    mt_capture* cap;
    mr_symbols* sy;
    mr_profile p;
    open_capture(path, &cap, &sy, &p);
    mr_functions f;
    mr_callgraph g;
    CHECK_EQ_I64(mr_functions_build(&p, sy, false, &f), 0);
    CHECK_EQ_I64(mr_callgraph_build(&p, sy, false, &f, &g), 0);
    check_call(&g, &f, "(root)", "main", 1372, 7);
    check_call(&g, &f, "(root)", "(no stack)", 3, 1);
    check_call(&g, &f, "main", "a", 110, 2);
    check_call(&g, &f, "main", "b", 1255, 4);
    check_call(&g, &f, "main", "h", 7, 1);
    check_call(&g, &f, "h", "g", 7, 1);
    check_call(&g, &f, "a", "c", 100, 1);
    check_call(&g, &f, "b", "c", 200, 1);
    check_call(&g, &f, "b", "f", 1055, 3);
    check_call(&g, &f, "f", "f", 1055, 3);
    check_call(&g, &f, "f", "c", 1000, 1);
    CHECK_EQ_I64(g.n, 11);
    // Sorted by caller, then callee.
    for (size_t i = 1; i < g.n; i++)
        CHECK(g.v[i - 1].caller < g.v[i].caller ||
              (g.v[i - 1].caller == g.v[i].caller && g.v[i - 1].callee < g.v[i].callee));
    mr_callgraph_free(&g);
    mr_functions_free(&f);
    mr_profile_free(&p);
    mr_symbols_free(sy);
    mt_capture_close(cap);
}

// Without recursion: callers add up to the total, callees plus self too.
static void test_sums(bool all_frames) {
    char path[512];
    snprintf(path, sizeof path, "%s/standard.db", test_tmpdir());
    fx_standard(path);
    mt_capture* cap;
    mr_symbols* sy;
    mr_profile p;
    open_capture(path, &cap, &sy, &p);
    mr_functions f;
    mr_callgraph g;
    CHECK_EQ_I64(mr_functions_build(&p, sy, all_frames, &f), 0);
    CHECK_EQ_I64(mr_callgraph_build(&p, sy, all_frames, &f, &g), 0);
    CHECK(g.n > 0);
    for (size_t i = 0; i < f.n; i++)
        for (int m = 0; m < MR_NMETRICS; m++) {
            uint64_t callers = 0, callees = f.v[i].self[m];
            for (size_t k = 0; k < g.n; k++) {
                callers += g.v[k].callee == i ? g.v[k].value[m] : 0;
                callees += g.v[k].caller == i ? g.v[k].value[m] : 0;
            }
            if (callers != f.v[i].total[m] || callees != f.v[i].total[m])
                fprintf(stderr, "%s metric %d: total %llu callers %llu callees+self %llu\n",
                        f.v[i].name, m, (unsigned long long)f.v[i].total[m],
                        (unsigned long long)callers, (unsigned long long)callees);
            CHECK_EQ_I64(callers, f.v[i].total[m]);
            CHECK_EQ_I64(callees, f.v[i].total[m]);
        }
    // The roots' calls add up to the profile's totals.
    uint64_t roots = 0;
    for (size_t k = 0; k < g.n; k++)
        roots += g.v[k].caller == MR_CALLGRAPH_ROOT ? g.v[k].value[MR_METRIC_LIVE_BYTES] : 0;
    CHECK_EQ_I64(roots, p.live_bytes);
    mr_callgraph_free(&g);
    mr_functions_free(&f);
    mr_profile_free(&p);
    mr_symbols_free(sy);
    mt_capture_close(cap);
}

int main(void) {
    test_graph();
    test_sums(false);
    test_sums(true);
    CHECK_DONE();
}
