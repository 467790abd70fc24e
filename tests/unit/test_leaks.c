// SPDX-License-Identifier: MIT
// memreport leaks on the standard fixture capture: exact groups, stacks, totals, --top,
// suppressions, text output, and the output-file conventions (refuse, -f, exit codes).
#include "commands.h"

#include "../check.h"
#include "../reports/fixture.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>

static json_t* load_json(const char* path) {
    json_error_t e;
    json_t* j = json_load_file(path, 0, &e);
    if (!j)
        fprintf(stderr, "%s: %s\n", path, e.text);
    return j;
}

#define GET_INT(o, k) json_integer_value(json_object_get(o, k))
#define GET_STR(o, k) json_string_value(json_object_get(o, k))

static void check_frame(json_t* stack, size_t i, const char* function, const char* file,
                        int64_t line, const char* module) {
    json_t* f = json_array_get(stack, i);
    CHECK(f != NULL);
    CHECK_EQ_STR(GET_STR(f, "function"), function);
    if (file)
        CHECK_EQ_STR(GET_STR(f, "file"), file);
    else
        CHECK(json_is_null(json_object_get(f, "file")));
    if (line)
        CHECK_EQ_I64(GET_INT(f, "line"), line);
    else
        CHECK(json_is_null(json_object_get(f, "line")));
    CHECK_EQ_STR(GET_STR(f, "module"), module);
}

int main(void) {
    char cap[256], out[256], supp[256], txt[256];
    snprintf(cap, sizeof cap, "%s/std.db", fx_tmpdir());
    snprintf(out, sizeof out, "%s/leaks.json", fx_tmpdir());
    snprintf(supp, sizeof supp, "%s/supp.txt", fx_tmpdir());
    snprintf(txt, sizeof txt, "%s/leaks.txt", fx_tmpdir());
    fx_standard(cap);

    CHECK_EQ_I64(fx_run(mr_cmd_leaks, "leaks", cap, "--json", "--all-frames", "-o", out, NULL), 0);
    json_t* r = load_json(out);
    CHECK(r != NULL);
    CHECK_EQ_I64(GET_INT(r, "bytes"), 4814);
    CHECK_EQ_I64(GET_INT(r, "blocks"), 5);
    CHECK_EQ_I64(GET_INT(r, "stacks"), 4);
    CHECK_EQ_STR(GET_STR(r, "status"), "complete");
    json_t* g = json_object_get(r, "groups");
    CHECK_EQ_I64(json_array_size(g), 4);
    // Largest first: C 4000/1, D 700/2, E 64/1, F 50/1.
    int64_t want[4][2] = {{4000, 1}, {700, 2}, {64, 1}, {50, 1}};
    for (size_t i = 0; i < 4; i++) {
        CHECK_EQ_I64(GET_INT(json_array_get(g, i), "bytes"), want[i][0]);
        CHECK_EQ_I64(GET_INT(json_array_get(g, i), "blocks"), want[i][1]);
    }
    // The full stack of C, leaf first, non-relevant frames included.
    json_t* st = json_object_get(json_array_get(g, 0), "stack");
    CHECK_EQ_I64(json_array_size(st), 4);
    const char* libc = "libc.so.6";
    check_frame(st, 0, "operator new", NULL, 0, libc);
    check_frame(st, 1, "make_node", "tree.c", 40, "prog");
    check_frame(st, 2, "main", "prog.c", 10, "prog");
    check_frame(st, 3, "__libc_start_call_main", NULL, 0, libc);
    // An unsymbolized frame is named module+offset.
    st = json_object_get(json_array_get(g, 2), "stack");
    check_frame(st, 0, "prog+0x1234", NULL, 0, "prog");
    json_decref(r);

    // By default the noise frames (operator new, libc start-up) are hidden.
    CHECK_EQ_I64(fx_run(mr_cmd_leaks, "leaks", cap, "--json", "-f", "-o", out, NULL), 0);
    r = load_json(out);
    st = json_object_get(json_array_get(json_object_get(r, "groups"), 0), "stack");
    CHECK_EQ_I64(json_array_size(st), 2);
    check_frame(st, 0, "make_node", "tree.c", 40, "prog");
    check_frame(st, 1, "main", "prog.c", 10, "prog");
    json_decref(r);

    // Refuses to overwrite without -f (I/O exit code), overwrites with it.
    CHECK_EQ_I64(fx_run(mr_cmd_leaks, "leaks", cap, "--json", "-o", out, NULL), 3);
    CHECK_EQ_I64(fx_run(mr_cmd_leaks, "leaks", cap, "--json", "--top", "1", "-f", "-o", out, NULL),
                 0);
    r = load_json(out);
    CHECK_EQ_I64(json_array_size(json_object_get(r, "groups")), 1);
    CHECK_EQ_I64(GET_INT(r, "bytes"), 4814); // totals still count every group
    json_decref(r);

    // Suppressions: patterns match function names anywhere in the stack.
    FILE* fp = fopen(supp, "w");
    fputs("# known leaks\n  make_*  \n\ncache_pu?\n", fp);
    fclose(fp);
    CHECK_EQ_I64(
        fx_run(mr_cmd_leaks, "leaks", cap, "--json", "--suppressions", supp, "-f", "-o", out, NULL),
        0);
    r = load_json(out);
    CHECK_EQ_I64(GET_INT(r, "bytes"), 114);
    CHECK_EQ_I64(GET_INT(r, "blocks"), 2);
    CHECK_EQ_I64(GET_INT(r, "suppressed_bytes"), 4700);
    CHECK_EQ_I64(GET_INT(r, "suppressed_blocks"), 3);
    CHECK_EQ_I64(GET_INT(r, "suppressed_stacks"), 2);
    CHECK_EQ_I64(json_array_size(json_object_get(r, "groups")), 2);
    json_decref(r);

    // Text output: one block per group and the totals line.
    CHECK_EQ_I64(fx_run(mr_cmd_leaks, "leaks", cap, "--all-frames", "-o", txt, NULL), 0);
    char* t = fx_read(txt);
    CHECK(t && strstr(t, "3.91 KiB (4000 bytes) in 1 block allocated at:\n"
                         "    #0 operator new [libc.so.6]\n"
                         "    #1 make_node (tree.c:40) [prog]\n"));
    CHECK(t && strstr(t, "leaked: 4.70 KiB (4814 bytes) in 5 blocks from 4 stacks\n"));
    free(t);

    // Usage and input errors.
    CHECK_EQ_I64(fx_run(mr_cmd_leaks, "leaks", NULL), 1);
    CHECK_EQ_I64(fx_run(mr_cmd_leaks, "leaks", cap, "--top", "x", NULL), 1);
    CHECK_EQ_I64(fx_run(mr_cmd_leaks, "leaks", supp, NULL), 2); // not a capture
    CHECK_EQ_I64(fx_run(mr_cmd_leaks, "leaks", "/nonexistent/cap.db", NULL), 3);
    CHECK_EQ_I64(fx_run(mr_cmd_leaks, "leaks", cap, "--suppressions", "/nonexistent", NULL), 3);
    CHECK_DONE();
}
