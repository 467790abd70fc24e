// SPDX-License-Identifier: MIT
// memreport flamegraph on fixture captures: the embedded JSON (tree, bytes, counts,
// relevance, threads) at the peak, at a time and at the end; merging of narrow frames;
// escaping of hostile names; output naming and option errors. The browser test
// (tests/reports/browser_test.py) checks the page's behaviour.
#include "cmd.h"

#include "../check.h"
#include "../reports/fixture.h"
#include "../tmpdir.h"
#include "memtrace/schema.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define GET_INT(o, k) json_integer_value(json_object_get(o, k))

// The JSON between the data script's tags.
static json_t* page_data(const char* path) {
    char* html = fx_read(path);
    if (!html)
        return NULL;
    const char* tag = "id=\"fg-data\">";
    char* b = strstr(html, tag);
    char* e = b ? strstr(b, "</script>") : NULL;
    json_t* j = NULL;
    if (e) {
        *e = 0;
        json_error_t err;
        j = json_loads(b + strlen(tag), 0, &err);
        if (!j)
            fprintf(stderr, "%s: %s\n", path, err.text);
    }
    free(html);
    return j;
}

static const char* node_name(json_t* d, json_t* node) {
    json_int_t i = json_integer_value(json_array_get(node, 1));
    return json_string_value(json_array_get(json_object_get(d, "strings"), (size_t)i));
}

// Index of the node named `name` whose parent is `parent` (-1 when absent).
static json_int_t find(json_t* d, json_int_t parent, const char* name) {
    json_t* nodes = json_object_get(d, "nodes");
    for (size_t i = 0; i < json_array_size(nodes); i++) {
        json_t* n = json_array_get(nodes, i);
        if (json_integer_value(json_array_get(n, 0)) == parent && !strcmp(node_name(d, n), name))
            return (json_int_t)i;
    }
    return -1;
}

static int64_t field(json_t* d, json_int_t node, size_t k) {
    if (node < 0)
        return -1;
    return json_integer_value(
        json_array_get(json_array_get(json_object_get(d, "nodes"), (size_t)node), k));
}

// Self bytes summed over every node: what the page's root width adds up to.
static int64_t sum_self(json_t* d) {
    json_t* nodes = json_object_get(d, "nodes");
    int64_t s = 0;
    for (size_t i = 0; i < json_array_size(nodes); i++)
        s += json_integer_value(json_array_get(json_array_get(nodes, i), 5));
    return s;
}

int main(void) {
    char cap[256], out[256];
    snprintf(cap, sizeof cap, "%s/std.db", test_tmpdir());
    snprintf(out, sizeof out, "%s/fg.html", test_tmpdir());
    fx_standard(cap);

    // Peak (default): 10364 bytes in 5 blocks at seq 7.
    CHECK_EQ_I64(fx_run(mr_cmd_flamegraph, "flamegraph", cap, "-o", out, NULL), 0);
    json_t* d = page_data(out);
    CHECK(d != NULL);
    CHECK_EQ_I64(GET_INT(d, "total_bytes"), 10364);
    CHECK_EQ_I64(GET_INT(d, "total_blocks"), 5);
    CHECK_EQ_I64(GET_INT(d, "time_ns"), 7000);
    CHECK_EQ_STR(json_string_value(json_object_get(d, "subtitle")),
                 "Peak: 10.12 KiB live at 7 us"); // 1024-based, labelled so
    CHECK_EQ_STR(json_string_value(json_object_get(d, "title")), "prog --fast");
    CHECK_EQ_STR(json_string_value(json_object_get(d, "mode")), "peak");
    CHECK_EQ_I64(sum_self(d), 10364);
    json_int_t libc = find(d, 0, "__libc_start_call_main");
    json_int_t main_ = find(d, libc, "main");
    json_int_t worker = find(d, libc, "worker");
    json_int_t make = find(d, main_, "make_node");
    json_int_t opnew = find(d, make, "operator new");
    CHECK(libc > 0 && main_ > 0 && worker > 0 && make > 0 && opnew > 0);
    CHECK_EQ_I64(field(d, libc, 4), 0); // not relevant
    CHECK_EQ_I64(field(d, opnew, 4), 0);
    CHECK_EQ_I64(field(d, make, 4), 1);
    CHECK_EQ_I64(field(d, opnew, 5), 4000);
    CHECK_EQ_I64(field(d, opnew, 6), 1);
    CHECK_EQ_I64(field(d, worker, 5), 5000);
    CHECK_EQ_I64(field(d, find(d, find(d, main_, "load_config"), "parse_file"), 5), 1000);
    CHECK_EQ_I64(field(d, find(d, main_, "cache_put"), 5), 300);
    CHECK_EQ_I64(field(d, find(d, main_, "prog+0x1234"), 5), 64);
    CHECK(json_object_get(d, "threads") == NULL); // only with --split-threads
    json_decref(d);

    // At a time: after seq 4 (ts 4000 ns), A and C are live; units are accepted.
    CHECK_EQ_I64(
        fx_run(mr_cmd_flamegraph, "flamegraph", cap, "--at", "4.5us", "-f", "-o", out, NULL), 0);
    d = page_data(out);
    CHECK_EQ_I64(GET_INT(d, "total_bytes"), 5000);
    CHECK_EQ_I64(GET_INT(d, "total_blocks"), 2);
    CHECK_EQ_I64(GET_INT(d, "time_ns"), 4500);
    json_decref(d);
    CHECK_EQ_I64(
        fx_run(mr_cmd_flamegraph, "flamegraph", cap, "--at", "3000ns", "-f", "-o", out, NULL), 0);
    d = page_data(out);
    CHECK_EQ_I64(GET_INT(d, "total_bytes"), 1000); // B was allocated and freed by then
    CHECK(strstr(json_string_value(json_object_get(d, "subtitle")), "live at 3 us") != NULL);
    json_decref(d);
    // A time without its unit, past the end of the capture or in steps (for an NPU log) is a
    // usage error and writes nothing.
    char late[256];
    snprintf(late, sizeof late, "%s/late.html", test_tmpdir());
    CHECK_EQ_I64(fx_run(mr_cmd_flamegraph, "flamegraph", cap, "--at", "3000", "-o", late, NULL), 1);
    CHECK_EQ_I64(fx_run(mr_cmd_flamegraph, "flamegraph", cap, "--at", "99s", "-o", late, NULL), 1);
    CHECK_EQ_I64(fx_run(mr_cmd_flamegraph, "flamegraph", cap, "--at", "step 3", "-o", late, NULL),
                 1);
    CHECK(access(late, F_OK) != 0);
    CHECK_EQ_I64(
        fx_run(mr_cmd_flamegraph, "flamegraph", cap, "--at", "0.5us", "-f", "-o", out, NULL), 0);
    d = page_data(out);
    CHECK_EQ_I64(GET_INT(d, "total_bytes"), 0);
    json_decref(d);

    // Leaks, split by thread: threads listed by tid with their bytes; per-thread self
    // values add up to each thread's total.
    CHECK_EQ_I64(fx_run(mr_cmd_flamegraph, "flamegraph", cap, "--leaks", "--split-threads", "-f",
                        "-o", out, NULL),
                 0);
    d = page_data(out);
    CHECK_EQ_I64(GET_INT(d, "total_bytes"), 4814);
    CHECK_EQ_I64(GET_INT(d, "total_blocks"), 5);
    json_t* th = json_object_get(d, "threads");
    CHECK_EQ_I64(json_array_size(th), 2);
    CHECK_EQ_I64(GET_INT(json_array_get(th, 0), "tid"), 100);
    CHECK_EQ_STR(json_string_value(json_object_get(json_array_get(th, 0), "name")), "main");
    CHECK_EQ_I64(GET_INT(json_array_get(th, 0), "bytes"), 4764);
    CHECK_EQ_I64(GET_INT(json_array_get(th, 1), "bytes"), 50);
    int64_t per[2] = {0, 0};
    json_t* ts = json_object_get(d, "thread_self");
    for (size_t i = 0; i < json_array_size(ts); i++) {
        json_t* t = json_array_get(ts, i);
        per[json_integer_value(json_array_get(t, 1)) & 1] +=
            json_integer_value(json_array_get(t, 2));
    }
    CHECK_EQ_I64(per[0], 4764);
    CHECK_EQ_I64(per[1], 50);
    json_decref(d);

    // Narrow frames merge into their caller: at 5% of 10364 bytes (519), cache_put (300)
    // and prog+0x1234 (64) fold into main, what each allocated staying its own, in a frame
    // of its function right under main; main's own bytes stay 0.
    CHECK_EQ_I64(
        fx_run(mr_cmd_flamegraph, "flamegraph", cap, "--min-width", "0.05", "-f", "-o", out, NULL),
        0);
    d = page_data(out);
    libc = find(d, 0, "__libc_start_call_main");
    main_ = find(d, libc, "main");
    CHECK_EQ_I64(field(d, find(d, main_, "cache_put"), 5), 300);
    CHECK_EQ_I64(field(d, find(d, main_, "cache_put"), 6), 1);
    CHECK_EQ_I64(field(d, find(d, main_, "prog+0x1234"), 5), 64);
    CHECK_EQ_I64(field(d, main_, 5), 0);
    CHECK_EQ_I64(GET_INT(d, "merged_frames"), 2);
    CHECK_EQ_I64(GET_INT(d, "merged_below"), 519);
    CHECK_EQ_I64(sum_self(d), 10364);
    json_decref(d);
    // At 15% (1555 bytes) load_config (1000) folds too: parse_file's 1000 bytes, which it
    // called, stay parse_file's, right under main.
    CHECK_EQ_I64(
        fx_run(mr_cmd_flamegraph, "flamegraph", cap, "--min-width", "0.15", "-f", "-o", out, NULL),
        0);
    d = page_data(out);
    main_ = find(d, find(d, 0, "__libc_start_call_main"), "main");
    CHECK_EQ_I64(find(d, main_, "load_config"), -1);
    CHECK_EQ_I64(field(d, find(d, main_, "parse_file"), 5), 1000);
    CHECK_EQ_I64(field(d, main_, 5), 0);
    CHECK_EQ_I64(GET_INT(d, "merged_frames"), 4);
    CHECK_EQ_I64(sum_self(d), 10364);
    json_decref(d);

    // Default output name in the current directory; refusal to overwrite; option errors.
    char cwd[512];
    CHECK(getcwd(cwd, sizeof cwd) != NULL);
    CHECK_EQ_I64(chdir(test_tmpdir()), 0);
    CHECK_EQ_I64(fx_run(mr_cmd_flamegraph, "flamegraph", cap, NULL), 0);
    CHECK(access("memreport-flamegraph-std.html", F_OK) == 0);
    CHECK_EQ_I64(fx_run(mr_cmd_flamegraph, "flamegraph", cap, NULL), 3);
    CHECK_EQ_I64(chdir(cwd), 0);
    CHECK_EQ_I64(fx_run(mr_cmd_flamegraph, "flamegraph", cap, "--at", "soon", NULL), 1);
    CHECK_EQ_I64(fx_run(mr_cmd_flamegraph, "flamegraph", cap, "--at", "5us", "--leaks", NULL), 1);
    CHECK_EQ_I64(fx_run(mr_cmd_flamegraph, "flamegraph", cap, "--min-width", "2", NULL), 1);
    CHECK_EQ_I64(fx_run(mr_cmd_flamegraph, "flamegraph", NULL), 1);

    // A hostile frame name cannot close the data script; many equal leaves stay bounded.
    char big[256];
    snprintf(big, sizeof big, "%s/big.db", test_tmpdir());
    fx f;
    fx_open(&f, big);
    fx_sql(&f, "INSERT INTO frame VALUES(1,NULL,1,1,'</script><script>alert(1)</script>',"
               "NULL,NULL,NULL,1);"
               "INSERT INTO callsite VALUES(1,0,1,1);");
    fx_sql(&f, "WITH RECURSIVE n(i) AS (SELECT 2 UNION ALL SELECT i+1 FROM n WHERE i < 30001)"
               " INSERT INTO frame SELECT i, NULL, i, i, 'leaf' || i, NULL, NULL, NULL, 1 FROM n;"
               "WITH RECURSIVE n(i) AS (SELECT 2 UNION ALL SELECT i+1 FROM n WHERE i < 30001)"
               " INSERT INTO callsite SELECT i, 1, i, 2 FROM n;");
    for (uint32_t i = 2; i <= 30001; i++)
        fx_alloc(&f, 1, 0x10000 + (uint64_t)i * 16, 16, i);
    fx_finish(&f, "complete");
    CHECK_EQ_I64(fx_run(mr_cmd_flamegraph, "flamegraph", big, "-f", "-o", out, NULL), 0);
    char* html = fx_read(out);
    CHECK(html && !strstr(html, "</script><script>alert"));
    free(html);
    d = page_data(out);
    CHECK(d != NULL);
    CHECK(json_array_size(json_object_get(d, "nodes")) <= 20000);
    CHECK_EQ_I64(sum_self(d), 30000 * 16);
    CHECK_EQ_I64(GET_INT(d, "total_blocks"), 30000);
    json_t* names = json_object_get(d, "strings");
    bool hostile = false;
    for (size_t i = 0; i < json_array_size(names); i++)
        hostile |= !strcmp(json_string_value(json_array_get(names, i)),
                           "</script><script>alert(1)</script>");
    CHECK(hostile); // the name survives, escaped
    json_decref(d);

    // The page is the same on every run, though the live-block map is keyed at random.
    char again[256];
    snprintf(again, sizeof again, "%s/fg-again.html", test_tmpdir());
    const char* inputs[] = {big, cap};
    for (size_t i = 0; i < 2; i++) {
        CHECK_EQ_I64(fx_run(mr_cmd_flamegraph, "flamegraph", inputs[i], "--split-threads", "-f",
                            "-o", out, NULL),
                     0);
        CHECK_EQ_I64(fx_run(mr_cmd_flamegraph, "flamegraph", inputs[i], "--split-threads", "-f",
                            "-o", again, NULL),
                     0);
        char *first = fx_read(out), *second = fx_read(again);
        CHECK(first && second && !strcmp(first, second));
        free(first);
        free(second);
    }
    CHECK_DONE();
}
