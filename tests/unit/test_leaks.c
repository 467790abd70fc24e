// SPDX-License-Identifier: MIT
// memreport leaks on the standard fixture capture: exact groups, stacks, totals, --top,
// suppressions, text output, and the output-file conventions (refuse, -f, exit codes).
// On a capture whose stacks run through libc and the dynamic loader: the blocks the C
// runtime holds in their own group (leaks and summary), LeakSanitizer suppressions, the
// report of a suppression that matches nothing, singular and plural totals.
#include "cmd.h"

#include "../check.h"
#include "../reports/fixture.h"
#include "../tmpdir.h"
#include "memtrace/units.h"

#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

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

// Callsites of the runtime scenario, leaf ids (modules: prog, libc.so.6,
// ld-linux-x86-64.so.2, libstdc++.so.6):
//   2  main > leak_a                              3 x 1000 B   the program's
//   4  main > printf > _IO_file_doallocate        4096 B       stdio buffer: runtime
//   6  main > pthread_create > _dl_allocate_tls   336 B        thread DTV: runtime
//   7  main > strdup                              2 x 10 B     the program's (libc entry)
//   9  main > fopen > __fopen_internal            472 B        the program's (libc entry)
//   11 _dl_init > pool::pool                      73728 B      C++ emergency pool: runtime
//   13 main > qsort > cmp                         24 B         the program's (a callback)
//   15 main > bindtextdomain > set_binding_values 34 B         gettext binding: runtime
// plus one block allocated and freed. Program: 3516 B in 7 blocks from 4 stacks; runtime:
// 78194 B in 4 blocks from 4 stacks.
static void runtime_capture(const char* path) {
    fx f;
    fx_open(&f, path);
    fx_sql(&f, "INSERT INTO meta VALUES('symbolized','1');"
               "INSERT INTO thread(tid, name) VALUES(100,'main');"
               "INSERT INTO mapping VALUES(1,'/usr/bin/prog',4096,65536,0,'ab',0,NULL),"
               "(2,'/usr/lib/x86_64-linux-gnu/libc.so.6',1048576,2097152,1048576,'cd',0,NULL),"
               "(3,'/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2',4194304,4390912,4194304,"
               " 'ef',0,NULL),"
               "(4,'/usr/lib/x86_64-linux-gnu/libstdc++.so.6',8388608,10485760,8388608,'01',0,"
               " NULL);"
               "INSERT INTO frame VALUES"
               "(1,1,4097,4097,'main','main.c',5,NULL,1),"
               "(2,1,4098,4098,'leak_a','a.c',10,NULL,1),"
               "(3,2,1048577,1,'__printf','./stdio-common/printf.c',33,NULL,1),"
               "(4,2,1048578,2,'__GI__IO_file_doallocate','./libio/filedoalloc.c',101,NULL,1),"
               "(5,2,1048579,3,'__pthread_create_2_1',NULL,NULL,NULL,1),"
               "(6,3,4194305,1,'__GI__dl_allocate_tls','../elf/dl-tls.c',670,NULL,1),"
               "(7,2,1048580,4,'__strdup',NULL,NULL,NULL,1),"
               "(8,2,1048581,5,'fopen',NULL,NULL,NULL,1),"
               "(9,2,1048582,6,'__fopen_internal',NULL,NULL,NULL,1),"
               "(10,3,4194306,2,'_dl_init',NULL,NULL,NULL,1),"
               "(11,4,8388609,1,'(anonymous namespace)::pool::pool',NULL,NULL,NULL,1),"
               "(12,2,1048583,7,'qsort',NULL,NULL,NULL,1),"
               "(13,1,4099,4099,'cmp','util/cmp.c',3,NULL,1),"
               "(14,2,1048584,8,'__bindtextdomain',NULL,NULL,NULL,1),"
               "(15,2,1048585,9,'set_binding_values',NULL,NULL,NULL,1);"
               "INSERT INTO callsite VALUES(1,0,1,1),(2,1,2,2),(3,1,3,2),(4,3,4,3),(5,1,5,2),"
               "(6,5,6,3),(7,1,7,2),(8,1,8,2),(9,8,9,3),(10,0,10,1),(11,10,11,2),(12,1,12,2),"
               "(13,12,13,3),(14,1,14,2),(15,14,15,3);");
    fx_alloc(&f, 100, 0x11000, 73728, 11);
    for (int i = 0; i < 3; i++)
        fx_alloc(&f, 100, 0x1000 + (uint64_t)i * 0x1000, 1000, 2);
    fx_alloc(&f, 100, 0x5000, 4096, 4);
    fx_alloc(&f, 100, 0x7000, 336, 6);
    fx_alloc(&f, 100, 0x8000, 10, 7);
    fx_alloc(&f, 100, 0x8100, 10, 7);
    fx_alloc(&f, 100, 0x9000, 472, 9);
    fx_alloc(&f, 100, 0xa000, 24, 13);
    fx_alloc(&f, 100, 0xc000, 34, 15);
    fx_alloc(&f, 100, 0xb000, 5000, 2);
    fx_free(&f, 100, 0xb000);
    fx_finish(&f, "complete");
}

static bool stack_has(json_t* group, const char* function) {
    size_t i;
    json_t* f;
    json_array_foreach(json_object_get(group, "stack"), i, f) {
        if (!strcmp(GET_STR(f, "function"), function))
            return true;
    }
    return false;
}

// Runs leaks with a suppressions file, its stderr captured into err_path; returns the exit
// code.
static int leaks_stderr(const char* err_path, const char* cap, const char* supp, const char* out,
                        bool json) {
    fflush(stderr);
    int saved = dup(2);
    int fd = open(err_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    dup2(fd, 2);
    close(fd);
    int rc =
        json ? fx_run(mr_cmd_leaks, "leaks", cap, "--json", "--suppressions", supp, "-f", "-o", out,
                      NULL)
             : fx_run(mr_cmd_leaks, "leaks", cap, "--suppressions", supp, "-f", "-o", out, NULL);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    return rc;
}

// How many times `needle` occurs in `s`.
static int occurrences(const char* s, const char* needle) {
    int n = 0;
    for (const char* p = s; p && (p = strstr(p, needle)); p++)
        n++;
    return n;
}

static void write_file(const char* path, const char* text) {
    FILE* fp = fopen(path, "w");
    CHECK(fp != NULL);
    if (fp) {
        fputs(text, fp);
        fclose(fp);
    }
}

static void test_runtime_held(void) {
    char cap[256], out[256], err[256], supp[256], want[1024], a[32], b[32];
    snprintf(cap, sizeof cap, "%s/runtime.db", test_tmpdir());
    snprintf(out, sizeof out, "%s/runtime.out", test_tmpdir());
    snprintf(err, sizeof err, "%s/runtime.err", test_tmpdir());
    snprintf(supp, sizeof supp, "%s/runtime.supp", test_tmpdir());
    runtime_capture(cap);

    // The program's leaks and the runtime's, apart; together every live block.
    CHECK_EQ_I64(fx_run(mr_cmd_leaks, "leaks", cap, "--json", "-f", "-o", out, NULL), 0);
    json_t* r = load_json(out);
    CHECK(r != NULL);
    CHECK_EQ_I64(GET_INT(r, "bytes"), 3516);
    CHECK_EQ_I64(GET_INT(r, "blocks"), 7);
    CHECK_EQ_I64(GET_INT(r, "stacks"), 4);
    json_t* g = json_object_get(r, "groups");
    CHECK_EQ_I64(json_array_size(g), 4);
    const char* prog[] = {"leak_a", "__fopen_internal", "cmp", "__strdup"}; // largest first
    for (size_t i = 0; i < 4; i++)
        CHECK(stack_has(json_array_get(g, i), prog[i]));
    json_t* held = json_object_get(r, "runtime_held");
    CHECK_EQ_I64(GET_INT(held, "bytes"), 78194);
    CHECK_EQ_I64(GET_INT(held, "blocks"), 4);
    CHECK_EQ_I64(GET_INT(held, "stacks"), 4);
    json_t* hg = json_object_get(held, "groups");
    CHECK_EQ_I64(json_array_size(hg), 4);
    const char* runtime[] = {"(anonymous namespace)::pool::pool", "__GI__IO_file_doallocate",
                             "__GI__dl_allocate_tls", "set_binding_values"};
    for (size_t i = 0; i < 4; i++)
        CHECK(stack_has(json_array_get(hg, i), runtime[i]));
    json_decref(r);

    // --top limits each section, not the totals.
    CHECK_EQ_I64(fx_run(mr_cmd_leaks, "leaks", cap, "--json", "--top", "1", "-f", "-o", out, NULL),
                 0);
    r = load_json(out);
    CHECK_EQ_I64(json_array_size(json_object_get(r, "groups")), 1);
    held = json_object_get(r, "runtime_held");
    CHECK_EQ_I64(json_array_size(json_object_get(held, "groups")), 1);
    CHECK_EQ_I64(GET_INT(held, "bytes"), 78194);
    json_decref(r);

    // Text: the runtime's section after the program's groups, a totals line for each.
    CHECK_EQ_I64(fx_run(mr_cmd_leaks, "leaks", cap, "-f", "-o", out, NULL), 0);
    char* t = fx_read(out);
    snprintf(want, sizeof want, "leaked: %s (3516 bytes) in 7 blocks from 4 stacks\n",
             mt_units_format_bytes(3516, a, sizeof a));
    CHECK(t && strstr(t, want));
    snprintf(want, sizeof want,
             "held by the C runtime: %s (78194 bytes) in 4 blocks from 4 stacks\n",
             mt_units_format_bytes(78194, a, sizeof a));
    CHECK(t && strstr(t, want));
    const char* section = t ? strstr(t, "Held by the C runtime") : NULL;
    CHECK(section && section > strstr(t, "leak_a") && section < strstr(t, "_IO_file_doallocate"));
    free(t);

    // summary: the program's leaks in leaked_*, as leaks says; the runtime's apart.
    CHECK_EQ_I64(fx_run(mr_cmd_summary, "summary", cap, "--json", "-f", "-o", out, NULL), 0);
    r = load_json(out);
    CHECK_EQ_I64(GET_INT(r, "leaked_bytes"), 3516);
    CHECK_EQ_I64(GET_INT(r, "leaked_allocations"), 7);
    CHECK_EQ_I64(GET_INT(r, "runtime_held_bytes"), 78194);
    CHECK_EQ_I64(GET_INT(r, "runtime_held_allocations"), 4);
    json_decref(r);
    CHECK_EQ_I64(fx_run(mr_cmd_summary, "summary", cap, "-f", "-o", out, NULL), 0);
    t = fx_read(out);
    snprintf(want, sizeof want,
             "leaked:       %s in 7 blocks (+%s in 4 blocks held by the C runtime)\n",
             mt_units_format_bytes(3516, a, sizeof a), mt_units_format_bytes(78194, b, sizeof b));
    CHECK(t && strstr(t, want));
    free(t);

    // LeakSanitizer suppressions: a substring of a function, file or module name, '*',
    // '^' and '$' anchors; the two lines that match nothing are reported.
    write_file(supp, "# LeakSanitizer's format\n"
                     "leak:eak_\n"      // 2: a substring of leak_a
                     "  leak:str*p  \n" // 3: __strdup
                     "leak:cmp.c$\n"    // 4: the file util/cmp.c
                     "\n"
                     "leak:libstdc++\n" // 6: the module of pool::pool
                     "leak:^_fopen\n"   // 7: __fopen_internal starts with "__": nothing
                     "leak:util$\n");   // 8: util/cmp.c does not end with it: nothing
    CHECK_EQ_I64(leaks_stderr(err, cap, supp, out, true), 0);
    r = load_json(out);
    CHECK_EQ_I64(GET_INT(r, "bytes"), 472);
    CHECK_EQ_I64(GET_INT(r, "blocks"), 1);
    CHECK_EQ_I64(GET_INT(r, "suppressed_bytes"), 3000 + 20 + 24 + 73728);
    CHECK_EQ_I64(GET_INT(r, "suppressed_blocks"), 7);
    CHECK_EQ_I64(GET_INT(r, "suppressed_stacks"), 4);
    CHECK_EQ_I64(GET_INT(json_object_get(r, "runtime_held"), "bytes"), 4466);
    json_t* used = json_object_get(r, "suppressions");
    CHECK_EQ_I64(json_array_size(used), 6);
    CHECK_EQ_I64(GET_INT(json_array_get(used, 0), "line"), 2);
    CHECK_EQ_STR(GET_STR(json_array_get(used, 0), "pattern"), "eak_");
    CHECK_EQ_STR(GET_STR(json_array_get(used, 0), "format"), "leak");
    CHECK_EQ_I64(GET_INT(json_array_get(used, 0), "bytes"), 3000);
    CHECK_EQ_I64(GET_INT(json_array_get(used, 3), "blocks"), 1);
    CHECK_EQ_I64(GET_INT(json_array_get(used, 4), "blocks"), 0);
    json_decref(r);
    t = fx_read(err);
    snprintf(want, sizeof want,
             "memreport: %s:7: suppression '^_fopen' matched no leak\n"
             "memreport: %s:8: suppression 'util$' matched no leak\n",
             supp, supp);
    CHECK(t && strstr(t, want) && occurrences(t, "matched no leak") == 2);
    free(t);

    // Both formats in one file (a glob matches whole function names only), and the totals
    // as a sentence: 472 + 73728 + 3000 B suppressed.
    write_file(supp, "__fopen_*\nfopen_internal\n*::pool::pool\nleak:^leak_a$\n");
    CHECK_EQ_I64(leaks_stderr(err, cap, supp, out, false), 0);
    t = fx_read(out);
    snprintf(want, sizeof want,
             "leaked: %s (44 bytes) in 3 blocks from 2 stacks; %s (77200 bytes) in 5 blocks "
             "from 3 stacks suppressed\n",
             mt_units_format_bytes(44, a, sizeof a), mt_units_format_bytes(77200, b, sizeof b));
    CHECK(t && strstr(t, want));
    free(t);
    t = fx_read(err);
    snprintf(want, sizeof want, "memreport: %s:2: suppression 'fopen_internal' matched no leak\n",
             supp);
    CHECK(t && strstr(t, want) && occurrences(t, "matched no leak") == 1);
    free(t);
    // Singular where it is one.
    write_file(supp, "leak:libstdc++\nleak:leak_a\nleak:cmp\nleak:dup\n");
    CHECK_EQ_I64(leaks_stderr(err, cap, supp, out, false), 0);
    t = fx_read(out);
    snprintf(want, sizeof want,
             "leaked: %s (472 bytes) in 1 block from 1 stack; %s (76772 bytes) in 7 blocks "
             "from 4 stacks suppressed\n",
             mt_units_format_bytes(472, a, sizeof a), mt_units_format_bytes(76772, b, sizeof b));
    CHECK(t && strstr(t, want));
    free(t);
    write_file(supp, "leak:libstdc++\n");
    CHECK_EQ_I64(leaks_stderr(err, cap, supp, out, false), 0);
    t = fx_read(out);
    snprintf(want, sizeof want, "; %s (73728 bytes) in 1 block from 1 stack suppressed\n",
             mt_units_format_bytes(73728, a, sizeof a));
    CHECK(t && strstr(t, want));
    free(t);

    // Other sanitizers' suppression types and empty patterns are bad input, named by line.
    write_file(supp, "leak:ok\nrace:foo\n");
    CHECK_EQ_I64(leaks_stderr(err, cap, supp, out, false), 2);
    t = fx_read(err);
    snprintf(want, sizeof want,
             "memreport: %s:2: unknown suppression type 'race' (only leak: lines are read)\n",
             supp);
    CHECK(t && !strcmp(t, want));
    free(t);
    write_file(supp, "leak:\n");
    CHECK_EQ_I64(leaks_stderr(err, cap, supp, out, false), 2);
}

int main(void) {
    char cap[256], out[256], supp[256], txt[256];
    snprintf(cap, sizeof cap, "%s/std.db", test_tmpdir());
    snprintf(out, sizeof out, "%s/leaks.json", test_tmpdir());
    snprintf(supp, sizeof supp, "%s/supp.txt", test_tmpdir());
    snprintf(txt, sizeof txt, "%s/leaks.txt", test_tmpdir());
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
    CHECK(t && !strstr(t, "C runtime")); // operator new in libc: the program's call
    free(t);

    // Usage and input errors.
    CHECK_EQ_I64(fx_run(mr_cmd_leaks, "leaks", NULL), 1);
    CHECK_EQ_I64(fx_run(mr_cmd_leaks, "leaks", cap, "--top", "x", NULL), 1);
    CHECK_EQ_I64(fx_run(mr_cmd_leaks, "leaks", supp, NULL), 2); // not a capture
    CHECK_EQ_I64(fx_run(mr_cmd_leaks, "leaks", "/nonexistent/cap.db", NULL), 3);
    CHECK_EQ_I64(fx_run(mr_cmd_leaks, "leaks", cap, "--suppressions", "/nonexistent", NULL), 3);

    test_runtime_held();
    CHECK_DONE();
}
