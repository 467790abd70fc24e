// SPDX-License-Identifier: MIT
// memreport stats on the standard fixture capture (truth in tests/reports/fixture.c):
// site rankings, bytes at the peak, the size histogram, temporaries, per-thread totals.
#include "cmd.h"

#include "../check.h"
#include "../reports/fixture.h"
#include "../tmpdir.h"
#include "memtrace/schema.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>

#define GET_INT(o, k) json_integer_value(json_object_get(o, k))
#define GET_STR(o, k) json_string_value(json_object_get(o, k))

// Checks one ranked table: site names and values of `field`, in order.
static void check_table(json_t* r, const char* table, const char* field, size_t n,
                        const char* const* names, const int64_t* values) {
    json_t* a = json_object_get(r, table);
    CHECK_EQ_I64(json_array_size(a), n);
    for (size_t i = 0; i < n && i < json_array_size(a); i++) {
        json_t* s = json_array_get(a, i);
        CHECK_EQ_STR(GET_STR(s, "site"), names[i]);
        CHECK_EQ_I64(GET_INT(s, field), values[i]);
    }
}

// heaptrack's temporaries, case by case (reporter/stats.c, is_temporary): f_a is callsite 2,
// f_b callsite 3, both under main.
static void check_temporaries(void) {
    char cap[256], out[256];
    snprintf(cap, sizeof cap, "%s/temporary.db", test_tmpdir());
    snprintf(out, sizeof out, "%s/temporary.json", test_tmpdir());
    fx f;
    fx_open(&f, cap);
    fx_sql(&f, "INSERT INTO meta VALUES('symbolized','1');"
               "INSERT INTO thread(tid, name) VALUES(1,'main'),(2,'other');"
               "INSERT INTO mapping VALUES(1,'/usr/bin/prog',4096,65536,0,'ab',0,NULL);"
               "INSERT INTO frame VALUES(1,1,4097,4097,'main','prog.c',10,NULL,1),"
               "(2,1,4098,4098,'f_a','prog.c',20,NULL,1),(3,1,4099,4099,'f_b','prog.c',30,NULL,1);"
               "INSERT INTO callsite VALUES(1,0,1,1),(2,1,2,2),(3,1,3,2);");
    fx_alloc(&f, 1, 0x100, 10, 2); // the first allocation: (10, f_a)
    fx_free(&f, 1, 0x100);         // 1: its own block, freed next
    fx_alloc(&f, 1, 0x200, 20, 3);
    fx_alloc(&f, 1, 0x300, 20, 3);
    fx_free(&f, 1, 0x200); // 2: another block, but the same size and stack as the last one
    fx_free(&f, 1, 0x300); // not: a free came in between
    fx_alloc(&f, 1, 0x400, 10, 2);
    fx_alloc(&f, 2, 0x500, 30, 3);
    fx_free(&f, 1, 0x400); // not: another thread allocated in between
    fx_free(&f, 2, 0x500); // not
    fx_alloc(&f, 1, 0x600, 10, 2);
    fx_alloc(&f, 1, 0x700, 40, 3);
    fx_free(&f, 1, 0x700); // 3
    fx_free(&f, 1, 0x600); // 4: after a free, like the first allocation (heaptrack's index 0)
    fx_alloc(&f, 1, 0x800, 50, 3);
    fx_free(&f, 1, 0x9999); // allocated before tracing: skipped, changes nothing
    fx_free(&f, 2, 0x800);  // 5: freed by another thread
    fx_alloc(&f, 1, 0xa00, 60, 2);
    fx_event(&f, MT_KIND_REALLOC_FREE, 1, 0xa00, 0, 2); // 6: realloc's implicit free
    fx_event(&f, MT_KIND_REALLOC, 1, 0xb00, 70, 2);
    fx_free(&f, 1, 0xb00); // 7
    fx_finish(&f, "complete");
    CHECK_EQ_I64(fx_run(mr_cmd_stats, "stats", cap, "--json", "-o", out, NULL), 0);
    json_error_t je;
    json_t* r = json_load_file(out, 0, &je);
    CHECK(r != NULL);
    CHECK_EQ_I64(GET_INT(r, "temporary"), 7);
    static const char* const names[] = {"f_a", "f_b"};
    static const int64_t values[] = {4, 3};
    check_table(r, "temporary_by_site", "temporary", 2, names, values);
    json_t* th = json_object_get(r, "threads");
    CHECK_EQ_I64(GET_INT(json_array_get(th, 0), "temporary"), 6);
    CHECK_EQ_I64(GET_INT(json_array_get(th, 1), "temporary"), 1);
    json_decref(r);
}

int main(void) {
    check_temporaries();
    char cap[256], out[256], txt[256];
    snprintf(cap, sizeof cap, "%s/std.db", test_tmpdir());
    snprintf(out, sizeof out, "%s/stats.json", test_tmpdir());
    snprintf(txt, sizeof txt, "%s/stats.txt", test_tmpdir());
    fx_standard(cap);
    CHECK_EQ_I64(fx_run(mr_cmd_stats, "stats", cap, "--json", "-o", out, NULL), 0);
    json_error_t je;
    json_t* r = json_load_file(out, 0, &je);
    CHECK(r != NULL);
    CHECK_EQ_I64(GET_INT(r, "allocations"), 9);
    CHECK_EQ_I64(GET_INT(r, "bytes_allocated"), 11314);
    CHECK_EQ_I64(GET_INT(r, "frees"), 5);
    CHECK_EQ_I64(GET_INT(r, "peak_bytes"), 10364);
    CHECK_EQ_I64(GET_INT(r, "peak_time_ns"), 7000);
    CHECK_EQ_I64(GET_INT(r, "temporary"), 1);

    // Bytes live at the peak (seq 7), per site; parse_file's block was freed later, and
    // make_node's site is named past the non-relevant operator new.
    static const char* const peak_names[] = {"worker", "make_node", "parse_file", "cache_put",
                                             "prog+0x1234"};
    static const int64_t peak_values[] = {5000, 4000, 1000, 300, 64};
    check_table(r, "by_peak", "peak_bytes", 5, peak_names, peak_values);
    // make_node's two stacks (one through operator new) merge into one row of its name.
    static const char* const bytes_names[] = {"worker", "make_node", "parse_file", "cache_put",
                                              "prog+0x1234"};
    static const int64_t bytes_values[] = {5050, 4200, 1000, 1000, 64};
    check_table(r, "by_bytes", "bytes_allocated", 5, bytes_names, bytes_values);
    CHECK_EQ_I64(GET_INT(json_array_get(json_object_get(r, "by_bytes"), 1), "stacks"), 2);
    CHECK_EQ_I64(GET_INT(json_array_get(json_object_get(r, "by_bytes"), 0), "stacks"), 1);
    static const char* const count_names[] = {"cache_put", "make_node"};
    static const int64_t count_values[] = {3, 2};
    json_t* by_count = json_object_get(r, "by_count");
    CHECK_EQ_I64(json_array_size(by_count), 5);
    for (size_t i = 0; i < 2; i++) {
        CHECK_EQ_STR(GET_STR(json_array_get(by_count, i), "site"), count_names[i]);
        CHECK_EQ_I64(GET_INT(json_array_get(by_count, i), "allocations"), count_values[i]);
    }
    // Temporaries: make_node's 200-byte block only; worker's 5000-byte block is freed after
    // another thread's allocation (heaptrack's rule runs over all threads).
    static const char* const temp_names[] = {"make_node"};
    static const int64_t temp_values[] = {1};
    check_table(r, "temporary_by_site", "temporary", 1, temp_names, temp_values);
    json_t* stack = json_object_get(json_array_get(json_object_get(r, "by_peak"), 1), "stack");
    // Noise frames (operator new) are hidden from the stacks: the leaf is the caller.
    CHECK_EQ_STR(GET_STR(json_array_get(stack, 0), "function"), "make_node");

    // Size histogram: powers of two.
    static const int64_t hist[][3] = {{32, 63, 1},    {64, 127, 2},   {128, 255, 1},
                                      {256, 511, 1},  {512, 1023, 2}, {2048, 4095, 1},
                                      {4096, 8191, 1}};
    json_t* sizes = json_object_get(r, "sizes");
    CHECK_EQ_I64(json_array_size(sizes), 7);
    for (size_t i = 0; i < 7; i++) {
        json_t* h = json_array_get(sizes, i);
        CHECK_EQ_I64(GET_INT(h, "min"), hist[i][0]);
        CHECK_EQ_I64(GET_INT(h, "max"), hist[i][1]);
        CHECK_EQ_I64(GET_INT(h, "count"), hist[i][2]);
    }
    CHECK_EQ_I64(GET_INT(json_array_get(sizes, 4), "bytes"), 1600);

    // Per thread.
    json_t* th = json_object_get(r, "threads");
    CHECK_EQ_I64(json_array_size(th), 2);
    json_t* t0 = json_array_get(th, 0);
    json_t* t1 = json_array_get(th, 1);
    CHECK_EQ_I64(GET_INT(t0, "tid"), 100);
    CHECK_EQ_STR(GET_STR(t0, "name"), "main");
    CHECK_EQ_I64(GET_INT(t0, "allocations"), 7);
    CHECK_EQ_I64(GET_INT(t0, "bytes_allocated"), 6264);
    CHECK_EQ_I64(GET_INT(t0, "frees"), 4);
    CHECK_EQ_I64(GET_INT(t0, "live_bytes"), 4764);
    CHECK_EQ_I64(GET_INT(t0, "live_blocks"), 4);
    CHECK_EQ_I64(GET_INT(t1, "tid"), 200);
    CHECK_EQ_STR(GET_STR(t1, "name"), "worker-1");
    CHECK_EQ_I64(GET_INT(t1, "allocations"), 2);
    CHECK_EQ_I64(GET_INT(t1, "bytes_allocated"), 5050);
    CHECK_EQ_I64(GET_INT(t1, "frees"), 1);
    CHECK_EQ_I64(GET_INT(t1, "live_bytes"), 50);
    json_decref(r);

    // --stacks: a row per stack.
    CHECK_EQ_I64(fx_run(mr_cmd_stats, "stats", cap, "--json", "--stacks", "-f", "-o", out, NULL),
                 0);
    r = json_load_file(out, 0, &je);
    static const char* const stack_names[] = {"worker",    "make_node", "parse_file",
                                              "cache_put", "make_node", "prog+0x1234"};
    static const int64_t stack_values[] = {5050, 4000, 1000, 1000, 200, 64};
    check_table(r, "by_bytes", "bytes_allocated", 6, stack_names, stack_values);
    json_decref(r);

    // --top limits each table.
    CHECK_EQ_I64(fx_run(mr_cmd_stats, "stats", cap, "--json", "--top", "2", "-f", "-o", out, NULL),
                 0);
    r = json_load_file(out, 0, &je);
    CHECK_EQ_I64(json_array_size(json_object_get(r, "by_bytes")), 2);
    json_decref(r);

    // Text output.
    CHECK_EQ_I64(fx_run(mr_cmd_stats, "stats", cap, "-o", txt, NULL), 0);
    char* t = fx_read(txt);
    CHECK(t && strstr(t, "allocations: 9 (11.05 KiB), frees: 5, temporary: 1 (11.1%)\n"));
    CHECK(t && strstr(t, "top sites by bytes live at the peak:\n"
                         "      4.88 KiB  worker (worker.c:7) [prog]\n"));
    CHECK(t && !strstr(t, "from __libc_start_call_main"));
    // A row of several stacks names the function they meet in, without a line.
    CHECK(t && strstr(t, "      4.10 KiB  make_node (tree.c) [prog], 2 stacks\n"));
    CHECK(t && strstr(t, "    4.00 KiB - <8.00 KiB           1  ####################\n"));
    CHECK(t && strstr(t, "  200       worker-1                    2     4.93 KiB            1"));
    if (t && check_failures)
        fputs(t, stderr);
    free(t);
    CHECK_EQ_I64(fx_run(mr_cmd_stats, "stats", cap, "-o", txt, NULL), 3);
    CHECK_EQ_I64(fx_run(mr_cmd_stats, "stats", NULL), 1);
    CHECK_DONE();
}
