// SPDX-License-Identifier: MIT
// The function view (reporter/model/functions.h) on the standard fixture capture, whose
// stacks and truth are listed in tests/reports/fixture.c, and on a small recursive stack
// with an inlined function.
#include "functions.h"

#include "../check.h"
#include "../reports/fixture.h"
#include "../tmpdir.h"
#include "memtrace/schema.h"

#include <stdio.h>
#include <string.h>

static const mr_function* find(const mr_functions* f, const char* name) {
    for (size_t i = 0; i < f->n; i++)
        if (!strcmp(f->v[i].name, name))
            return &f->v[i];
    return NULL;
}

// self and total of one function in one metric.
static void check_fn(const mr_functions* f, const char* name, mr_metric m, uint64_t self,
                     uint64_t total) {
    const mr_function* fn = find(f, name);
    CHECK(fn != NULL);
    if (!fn)
        return;
    if (fn->self[m] != self || fn->total[m] != total)
        fprintf(stderr, "%s metric %d: self %llu total %llu\n", name, (int)m,
                (unsigned long long)fn->self[m], (unsigned long long)fn->total[m]);
    CHECK_EQ_I64(fn->self[m], self);
    CHECK_EQ_I64(fn->total[m], total);
}

static void open_capture(const char* path, mt_capture** cap, mr_symbols** sy, mr_profile* p) {
    char err[256] = "", msg[512];
    CHECK_EQ_I64(mt_capture_open(path, cap, err, sizeof err), 0);
    CHECK_EQ_I64(mr_symbols_load(*cap, sy, msg, sizeof msg), 0);
    mr_query q = MR_QUERY_INIT(MT_HEAP_LIBC);
    CHECK_EQ_I64(mr_profile_build(*cap, &q, p, err, sizeof err), 0);
}

// The peak: A (parse_file) 1000, C (operator new, noise, in make_node) 4000, D (cache_put)
// 300, E (prog+0x1234) 64, F (worker, not under main) 5000. Allocated: A 1000, B
// (make_node) 200, C 4000, D 1000 in 3, E 64, F 5050 in 2. At the end: C 4000, D 700 in 2,
// E 64, F 50.
static void test_standard(mt_capture* cap, const mr_symbols* sy, const mr_profile* p) {
    mr_functions f;
    CHECK_EQ_I64(mr_functions_build(p, sy, false, &f), 0);
    CHECK_EQ_I64(f.n, 7); // main load_config parse_file make_node cache_put prog+0x1234 worker
    CHECK(find(&f, "operator new") == NULL);
    CHECK(find(&f, "__libc_start_call_main") == NULL);
    check_fn(&f, "main", MR_METRIC_LIVE_BYTES, 0, 5364);
    check_fn(&f, "load_config", MR_METRIC_LIVE_BYTES, 0, 1000);
    check_fn(&f, "parse_file", MR_METRIC_LIVE_BYTES, 1000, 1000);
    check_fn(&f, "make_node", MR_METRIC_LIVE_BYTES, 4000, 4000);
    check_fn(&f, "cache_put", MR_METRIC_LIVE_BYTES, 300, 300);
    check_fn(&f, "prog+0x1234", MR_METRIC_LIVE_BYTES, 64, 64);
    check_fn(&f, "worker", MR_METRIC_LIVE_BYTES, 5000, 5000);
    check_fn(&f, "main", MR_METRIC_LIVE_BLOCKS, 0, 4);
    check_fn(&f, "make_node", MR_METRIC_ALLOC_BYTES, 4200, 4200);
    check_fn(&f, "main", MR_METRIC_ALLOC_BYTES, 0, 6264);
    check_fn(&f, "worker", MR_METRIC_ALLOC_BYTES, 5050, 5050);
    check_fn(&f, "make_node", MR_METRIC_ALLOC_COUNT, 2, 2);
    check_fn(&f, "main", MR_METRIC_ALLOC_COUNT, 0, 7);
    check_fn(&f, "cache_put", MR_METRIC_ALLOC_COUNT, 3, 3);
    check_fn(&f, "main", MR_METRIC_END_BYTES, 0, 4764);
    check_fn(&f, "cache_put", MR_METRIC_END_BLOCKS, 2, 2);
    check_fn(&f, "worker", MR_METRIC_END_BYTES, 50, 50);
    // Self values add up to the profile's totals.
    uint64_t self = 0;
    for (size_t i = 0; i < f.n; i++)
        self += f.v[i].self[MR_METRIC_LIVE_BYTES];
    CHECK_EQ_I64(self, p->live_bytes);
    const mr_function* main_fn = find(&f, "main");
    CHECK(main_fn && main_fn->file && !strcmp(main_fn->file, "prog.c"));
    mr_functions_free(&f);

    // Every frame: the noise frames are functions too, operator new the leaf of C.
    CHECK_EQ_I64(mr_functions_build(p, sy, true, &f), 0);
    CHECK_EQ_I64(f.n, 9);
    check_fn(&f, "operator new", MR_METRIC_LIVE_BYTES, 4000, 4000);
    check_fn(&f, "make_node", MR_METRIC_LIVE_BYTES, 0, 4000);
    check_fn(&f, "__libc_start_call_main", MR_METRIC_LIVE_BYTES, 0, 10364);
    mr_functions_free(&f);
    (void)cap;
}

// main -> f (frame 2: g inlined into f) -> f (frame 3, another line of f) -> f (frame 2
// again): 100 bytes from the deepest, 10 from the first f. g is the leaf function of both
// (self 110); f appears three times in the first stack and counts once (total 110).
static void make_recursive(const char* path) {
    fx f;
    fx_open(&f, path);
    fx_sql(&f, "INSERT INTO meta VALUES('symbolized','1');"
               "INSERT INTO mapping VALUES(1,'/usr/bin/rec',4096,65536,0,'ab',0,NULL);"
               "INSERT INTO frame VALUES(1,1,4097,4097,'main','prog.c',10,NULL,1),"
               "(2,1,4098,4098,'f','rec.c',5,"
               " '[{\"function\":\"g\",\"file\":\"inl.h\",\"line\":3}]',1),"
               "(3,1,4099,4099,'f','rec.c',6,NULL,1);"
               "INSERT INTO callsite VALUES(1,0,1,1),(2,1,2,2),(3,2,3,3),(4,3,2,4);");
    fx_alloc(&f, 100, 0x1000, 100, 4);
    fx_alloc(&f, 100, 0x2000, 10, 2);
    fx_finish(&f, "complete");
}

static void test_recursive(void) {
    char path[512];
    snprintf(path, sizeof path, "%s/recursive.db", test_tmpdir());
    make_recursive(path);
    mt_capture* cap;
    mr_symbols* sy;
    mr_profile p;
    open_capture(path, &cap, &sy, &p);
    mr_functions f;
    CHECK_EQ_I64(mr_functions_build(&p, sy, false, &f), 0);
    CHECK_EQ_I64(f.n, 3);
    check_fn(&f, "g", MR_METRIC_ALLOC_BYTES, 110, 110);
    check_fn(&f, "f", MR_METRIC_ALLOC_BYTES, 0, 110);
    check_fn(&f, "main", MR_METRIC_ALLOC_BYTES, 0, 110);
    check_fn(&f, "f", MR_METRIC_ALLOC_COUNT, 0, 2);
    const mr_function* g = find(&f, "g");
    CHECK(g && g->file && !strcmp(g->file, "inl.h"));
    mr_functions_free(&f);
    mr_profile_free(&p);
    mr_symbols_free(sy);
    mt_capture_close(cap);
}

int main(void) {
    char path[512];
    snprintf(path, sizeof path, "%s/standard.db", test_tmpdir());
    fx_standard(path);
    mt_capture* cap;
    mr_symbols* sy;
    mr_profile p;
    open_capture(path, &cap, &sy, &p);
    test_standard(cap, sy, &p);
    mr_profile_free(&p);
    mr_symbols_free(sy);
    mt_capture_close(cap);
    test_recursive();
    CHECK_DONE();
}
