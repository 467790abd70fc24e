// SPDX-License-Identifier: MIT
// Site naming and stack rendering over the symbols table (sites.h), on the standard
// fixture: relevance skipping, unsymbolized frames, inlined expansion, JSON and text.
#include "capture_sql.h"
#include "sites.h"
#include "stack_json.h"

#include "../check.h"
#include "../reports/fixture.h"
#include "../tmpdir.h"

#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>

#define GET_STR(o, k) json_string_value(json_object_get(o, k))

// Site labels past allocation wrappers (mr_sites_label): xmalloc and an inlined
// std::allocator<int>::allocate, each called from two functions, are wrappers; only_alloc,
// called from main only, and use_vec, whose "allocator" is in its parameters, are not.
static void check_labels(void) {
    char path[256], err[256];
    snprintf(path, sizeof path, "%s/labels.db", test_tmpdir());
    fx f;
    fx_open(&f, path);
    fx_sql(&f, "INSERT INTO meta VALUES('symbolized','1');"
               "INSERT INTO mapping VALUES(1,'/usr/bin/prog',4096,65536,0,'ab',0,NULL);"
               "INSERT INTO frame VALUES(1,1,4097,4097,'main','p.c',1,NULL,1),"
               "(2,1,4098,4098,'xmalloc','x.c',2,NULL,1),(3,1,4099,4099,'caller_a','p.c',3,NULL,1),"
               "(4,1,4100,4100,'caller_b','p.c',4,NULL,1),"
               "(5,1,4101,4101,'only_alloc','p.c',5,NULL,1),"
               "(6,1,4102,4102,'use_vec(std::vector<int, std::allocator<int> >&)','v.cc',6,"
               " '[{\"function\":\"std::__new_allocator<int>::allocate(unsigned long)\","
               "   \"file\":\"new_allocator.h\",\"line\":7}]',1),"
               "(7,1,4103,4103,'use_list()','v.cc',8,"
               " '[{\"function\":\"std::__new_allocator<int>::allocate(unsigned long)\","
               "   \"file\":\"new_allocator.h\",\"line\":7}]',1);"
               "INSERT INTO callsite VALUES(1,0,1,1),(2,1,3,2),(3,1,4,2),(4,2,2,3),(5,3,2,3),"
               "(6,1,5,2),(7,2,6,3),(8,3,6,3),(9,2,7,3);");
    fx_alloc(&f, 1, 0x1000, 10, 4);
    fx_finish(&f, "complete");
    mt_capture* cap;
    CHECK_EQ_I64(mt_capture_open(path, &cap, err, sizeof err), 0);
    mr_symbols* s;
    char msg[512];
    CHECK_EQ_I64(mr_symbols_load(cap, &s, msg, sizeof msg), 0);
    mr_site_labels* l = mr_sites_labels_new(s);
    CHECK(l != NULL);
    CHECK(mr_sites_labels_is_wrapper(l, "xmalloc"));
    CHECK(!mr_sites_labels_is_wrapper(l, "only_alloc"));
    CHECK(!mr_sites_labels_is_wrapper(l, "use_vec(std::vector<int, std::allocator<int> >&)"));
    CHECK_EQ_STR(mr_sites_label(l, 4), "caller_a");
    CHECK_EQ_STR(mr_sites_label(l, 5), "caller_b");
    CHECK_EQ_STR(mr_sites_label(l, 6), "only_alloc");
    CHECK_EQ_STR(mr_sites_label(l, 7), "use_vec(std::vector<int, std::allocator<int> >&)");
    CHECK_EQ_STR(mr_sites_label(l, 9), "use_list()");
    CHECK_EQ_STR(mr_sites_label(l, 0), "(no stack)");
    // The reports' other name stays the innermost relevant function.
    CHECK_EQ_STR(mr_sites_site_name(s, 4), "xmalloc");
    mr_sites_labels_free(l);
    mr_symbols_free(s);
    mt_capture_close(cap);
}

// A frame as mr_stack_json_fputs_frame writes it.
static const char* frame_text(json_t* f, bool line, char* buf, size_t len) {
    FILE* out = fmemopen(buf, len, "w");
    CHECK(out != NULL);
    mr_stack_json_fputs_frame(out, f, line);
    fclose(out);
    return buf;
}

int main(void) {
    check_labels();
    char path[256], err[256];
    snprintf(path, sizeof path, "%s/sites.db", test_tmpdir());
    fx_standard(path);
    mt_capture* cap;
    CHECK_EQ_I64(mt_capture_open(path, &cap, err, sizeof err), 0);
    // Give make_node's frame an inlined helper, so its site and stacks expand it.
    CHECK_EQ_I64(capture_sql_exec(cap, "UPDATE frame SET inlined='[{\"function\":\"node_alloc\","
                                       "\"file\":\"tree.h\",\"line\":3}]' WHERE id=4"),
                 SQLITE_OK);
    // Callsite 10: parse_file again under load_config, from another return address (an
    // unrolled loop): the same symbolized stack as callsite 4.
    CHECK_EQ_I64(
        capture_sql_exec(
            cap, "INSERT INTO frame VALUES(11,1,5000,5000,'parse_file','parse.c',30,NULL,1);"
                 "INSERT INTO frame VALUES(12,1,5001,5001,'parse_file','parse.c',31,NULL,1);"
                 "INSERT INTO callsite VALUES(10,3,11,4),(11,3,12,4),(12,10,10,5),(13,4,10,5);"),
        SQLITE_OK);
    mr_symbols* s;
    char msg[512];
    CHECK_EQ_I64(mr_symbols_load(cap, &s, msg, sizeof msg), 0);
    // Leaf 6 is operator new (not relevant) under make_node: the site is the inlined
    // function make_node's call sits in.
    CHECK_EQ_I64(mr_sites_site_frame(s, 6), 4);
    CHECK_EQ_STR(mr_sites_site_name(s, 6), "node_alloc");
    CHECK_EQ_STR(mr_sites_site_name(s, 4), "parse_file");
    CHECK_EQ_STR(mr_sites_site_name(s, 8), "prog+0x1234");
    CHECK_EQ_STR(mr_sites_site_name(s, 0), "(no stack)");
    CHECK_EQ_STR(mr_sites_site_name(s, 999), "(no stack)");
    // Only non-relevant frames: the leaf names the site.
    CHECK_EQ_STR(mr_sites_site_name(s, 1), "__libc_start_call_main");

    json_t* st = mr_stack_json_make(s, 6, true);
    CHECK_EQ_I64(json_array_size(st), 5);
    CHECK_EQ_STR(GET_STR(json_array_get(st, 0), "function"), "operator new");
    CHECK_EQ_STR(GET_STR(json_array_get(st, 0), "module"), "libc.so.6");
    CHECK_EQ_STR(GET_STR(json_array_get(st, 1), "function"), "node_alloc");
    CHECK_EQ_STR(GET_STR(json_array_get(st, 1), "file"), "tree.h");
    CHECK_EQ_STR(GET_STR(json_array_get(st, 2), "function"), "make_node");
    CHECK_EQ_STR(GET_STR(json_array_get(st, 4), "function"), "__libc_start_call_main");
    char buf[128];
    CHECK_EQ_STR(frame_text(json_array_get(st, 2), true, buf, sizeof buf),
                 "make_node (tree.c:40) [prog]");
    CHECK_EQ_STR(frame_text(json_array_get(st, 2), false, buf, sizeof buf),
                 "make_node (tree.c) [prog]");
    CHECK_EQ_STR(frame_text(json_array_get(st, 0), true, buf, sizeof buf),
                 "operator new [libc.so.6]");
    json_decref(st);
    st = mr_stack_json_make(s, 0, true);
    CHECK_EQ_I64(json_array_size(st), 0);
    json_decref(st);
    uint32_t* canon = mr_sites_canonical(s);
    CHECK(canon != NULL);
    CHECK_EQ_I64(canon[10], canon[4]);
    CHECK(canon[11] != canon[4]);       // another line
    CHECK_EQ_I64(canon[12], canon[13]); // same stack below equal callers
    CHECK(canon[6] != canon[5]);
    free(canon);
    mr_symbols_free(s);
    mt_capture_close(cap);
    CHECK_DONE();
}
