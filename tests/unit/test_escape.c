// SPDX-License-Identifier: MIT
// Bytes from a capture in report outputs (reporter/escape.h): the escaping rule itself, then
// every report (summary, leaks, stats, stacks, flamegraph; text and JSON) on a capture whose
// function names, file names, thread names and command line are invalid UTF-8 or hold
// terminal escape sequences and HTML.
#include "cmd.h"
#include "escape.h"
#include "json.h"

#include "../check.h"
#include "../reports/fixture.h"
#include "../tmpdir.h"

#include <jansson.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

static void check_escape(const char* in, enum mr_escape_mode mode, const char* want) {
    char* got = mr_escape(in, strlen(in), mode);
    CHECK_EQ_STR(got, want);
    free(got);
}

static void test_rule(void) {
    // Valid UTF-8 passes through, backslashes and all.
    check_escape("plain_name", MR_ESCAPE_UTF8, "plain_name");
    check_escape("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80 a\\b", MR_ESCAPE_UTF8,
                 "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80 a\\b");
    check_escape("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80", MR_ESCAPE_TERMINAL,
                 "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80");
    // Invalid bytes: a Latin-1 byte, a lone continuation, overlong forms, a surrogate, a
    // code point above U+10FFFF, a sequence cut short (at the end and before ASCII).
    check_escape("caf\xe9_alloc", MR_ESCAPE_UTF8, "caf\\xe9_alloc");
    check_escape("\x80x", MR_ESCAPE_UTF8, "\\x80x");
    check_escape("\xc0\xaf", MR_ESCAPE_UTF8, "\\xc0\\xaf");
    check_escape("\xe0\x80\xaf", MR_ESCAPE_UTF8, "\\xe0\\x80\\xaf");
    check_escape("\xed\xa0\x80", MR_ESCAPE_UTF8, "\\xed\\xa0\\x80");
    check_escape("\xf4\x90\x80\x80", MR_ESCAPE_UTF8, "\\xf4\\x90\\x80\\x80");
    check_escape("\xe2\x82", MR_ESCAPE_UTF8, "\\xe2\\x82");
    check_escape("\xe2\x82z", MR_ESCAPE_UTF8, "\\xe2\\x82z");
    // Control characters stay in JSON-bound text (JSON escapes them) but not on a terminal:
    // C0, DEL, and the C1 controls (U+009B is a CSI for some terminals).
    check_escape("a\x1b[2Jb\x07", MR_ESCAPE_UTF8, "a\x1b[2Jb\x07");
    check_escape("a\x1b]0;t\x07\t\n\x7f", MR_ESCAPE_TERMINAL, "a\\x1b]0;t\\x07\\x09\\x0a\\x7f");
    check_escape("\xc2\x9b"
                 "2J \xc2\x80 \xc2\xa0",
                 MR_ESCAPE_TERMINAL, "\\u009b2J \\u0080 \xc2\xa0");
    check_escape("caf\xe9\x1b", MR_ESCAPE_TERMINAL, "caf\\xe9\\x1b");
    // Inside a JSON text, an invalid byte becomes \\xNN so the parsed string reads \xNN.
    json_t* argv = mr_json_loads_bytes("[\"./prog\",\"caf\xe9\",\"\\u001b[2J\"]");
    CHECK(json_is_array(argv) && json_array_size(argv) == 3);
    CHECK_EQ_STR(json_string_value(json_array_get(argv, 1)), "caf\\xe9");
    CHECK_EQ_STR(json_string_value(json_array_get(argv, 2)), "\x1b[2J");
    json_decref(argv);
    CHECK_NULL(mr_json_loads_bytes("[\"unterminated"));
    CHECK_NULL(mr_json_loads_bytes(NULL));
    // JSON strings: never NULL for a name, null for no name.
    json_t* j = mr_json_bytes("caf\xe9");
    CHECK_EQ_STR(json_string_value(j), "caf\\xe9");
    json_decref(j);
    j = mr_json_bytes(NULL);
    CHECK(json_is_null(j));
    json_decref(j);
}

static void test_html_dump(void) {
    json_t* o = json_pack("{s:s, s:s}", "a", "<!--<script></script><img src=x onerror=alert(1)>",
                          "b", "&amp; x>y");
    char* buf = NULL;
    size_t len = 0;
    FILE* fp = open_memstream(&buf, &len);
    CHECK_EQ_I64(mr_json_dump_html(o, fp), 0);
    fclose(fp);
    CHECK(buf && !strpbrk(buf, "<>&"));
    CHECK(buf && strstr(buf, "\\u003c!--\\u003cscript\\u003e"));
    json_t* back = buf ? json_loads(buf, 0, NULL) : NULL; // still the same JSON
    CHECK(back && json_equal(back, o));
    json_decref(back);
    json_decref(o);
    free(buf);
}

// ---- every report on a hostile capture

#define TERMINAL_NAME "esc\x1b]0;pwned\x07\x1b[2J<!--<script>"
#define C1_NAME                                                                                    \
    "csi\xc2\x9b"                                                                                  \
    "31m_alloc"

// No raw control character (C0 but newline, DEL, C1) and nothing but valid UTF-8.
static bool terminal_safe(const char* text) {
    const unsigned char* s = (const unsigned char*)text;
    char* again = mr_escape(text, strlen(text), MR_ESCAPE_UTF8);
    bool utf8 = again && !strcmp(again, text);
    free(again);
    for (; *s; s++)
        if ((*s < 0x20 && *s != '\n') || *s == 0x7f ||
            (s[0] == 0xc2 && s[1] >= 0x80 && s[1] < 0xa0))
            return false;
    return utf8;
}

static char* run_report(int (*cmd)(int, char**), const char* name, const char* cap, bool json) {
    char out[512];
    snprintf(out, sizeof out, "%s/%s%s.out", test_tmpdir(), name, json ? "-json" : "");
    int rc = json ? fx_run(cmd, name, cap, "--json", "-f", "-o", out, NULL)
                  : fx_run(cmd, name, cap, "-f", "-o", out, NULL);
    CHECK_EQ_I64(rc, 0);
    return fx_read(out);
}

// Every string of a JSON value, concatenated with newlines.
static void strings_of(json_t* v, char* acc, size_t cap) {
    size_t i;
    const char* k;
    json_t* e;
    if (json_is_string(v) && strlen(acc) + json_string_length(v) + 2 < cap) {
        strcat(acc, json_string_value(v));
        strcat(acc, "\n");
    } else if (json_is_array(v)) {
        json_array_foreach(v, i, e) strings_of(e, acc, cap);
    } else if (json_is_object(v)) {
        json_object_foreach(v, k, e) strings_of(e, acc, cap);
    }
}

static void test_reports(void) {
    char cap[512];
    snprintf(cap, sizeof cap, "%s/hostile.db", test_tmpdir());
    fx_hostile(cap);
    static const struct {
        const char* name;
        int (*cmd)(int, char**);
        bool names, command; // the report shows function names / the command line
    } reports[] = {{"summary", mr_cmd_summary, false, true},
                   {"leaks", mr_cmd_leaks, true, false},
                   {"stats", mr_cmd_stats, true, false},
                   {"stacks", mr_cmd_stacks, true, false}};
    for (size_t r = 0; r < sizeof reports / sizeof *reports; r++) {
        char* text = run_report(reports[r].cmd, reports[r].name, cap, false);
        CHECK(text && terminal_safe(text));
        if (text && reports[r].names) {
            CHECK(strstr(text, "caf\\xe9_alloc (evil\\x1b[2J.c:20)"));
            CHECK(strstr(text, "esc\\x1b]0;pwned\\x07\\x1b[2J<!--<script>"));
            CHECK(strstr(text, "csi\\u009b31m_alloc"));
            CHECK(strstr(text, "<svg onload=window.__pwned=3>")); // text is not HTML
        }
        if (text && reports[r].command)
            CHECK(strstr(text, "./prog caf\\xe9 \\x1b]0;pwned\\x07 <!--<script>"));
        if (text && !strcmp(reports[r].name, "stats"))
            CHECK(strstr(text, "w\\x1b[2J"));
        free(text);

        char* raw = run_report(reports[r].cmd, reports[r].name, cap, true);
        json_t* j = raw ? json_loads(raw, 0, NULL) : NULL;
        CHECK(j != NULL);
        char all[16384] = "";
        strings_of(j, all, sizeof all);
        if (reports[r].names) {
            CHECK(strstr(all, "\ncaf\\xe9_alloc\n"));
            CHECK(strstr(all, "\nevil\x1b[2J.c\n"));
            CHECK(strstr(all, "\n" TERMINAL_NAME "\n"));
            CHECK(strstr(all, "\n" C1_NAME "\n"));
        }
        if (!strcmp(reports[r].name, "leaks") || !strcmp(reports[r].name, "stacks"))
            CHECK(strstr(all, "\nhi\\xff\n")); // the inlined frame
        if (reports[r].command)
            CHECK(strstr(all, "\ncaf\\xe9\n") && strstr(all, "\n\x1b]0;pwned\x07\n"));
        json_decref(j);
        free(raw);
    }

    // The flame graph page: names kept, no < > & in the embedded data.
    char page[512];
    snprintf(page, sizeof page, "%s/hostile.html", test_tmpdir());
    CHECK_EQ_I64(fx_run(mr_cmd_flamegraph, "flamegraph", cap, "-f", "-o", page, NULL), 0);
    char* html = fx_read(page);
    const char* open = html ? strstr(html, "id=\"fg-data\">") : NULL;
    const char* data = open ? open + strlen("id=\"fg-data\">") : NULL;
    const char* end = data ? strstr(data, "</script>") : NULL;
    CHECK(end != NULL);
    if (end) {
        char* js = strndup(data, (size_t)(end - data));
        CHECK(!strpbrk(js, "<>&"));
        json_t* d = json_loads(js, 0, NULL);
        CHECK(d != NULL);
        char all[16384] = "";
        strings_of(d, all, sizeof all);
        CHECK(strstr(all, "\ncaf\\xe9_alloc\n") && strstr(all, "\n" TERMINAL_NAME "\n"));
        CHECK(strstr(all, "\n</script><script>window.__pwned=1</script>\n"));
        CHECK(strstr(all, "\n<img src=x onerror=window.__pwned=2>\n"));
        CHECK(strstr(all, "./prog caf\\xe9 \x1b]0;pwned\x07 <!--<script>\n")); // the title
        json_decref(d);
        free(js);
    }
    free(html);
}

// One CSV field (RFC 4180), the form sql --csv and diff --csv write names in.
static void check_csv(const char* in, const char* want) {
    char* buf = NULL;
    size_t len = 0;
    FILE* fp = open_memstream(&buf, &len);
    mr_escape_fputs_csv(fp, in);
    fclose(fp);
    CHECK(buf && !strcmp(buf, want));
    free(buf);
}

static void test_csv(void) {
    check_csv("plain name", "plain name");
    check_csv("a,b", "\"a,b\"");
    check_csv("say \"hi\"", "\"say \"\"hi\"\"\"");
    check_csv("two\r\nlines", "\"two\r\nlines\"");
    check_csv(NULL, "");
}

// mr_escape_terminal_stream: lines, tabs and CRLF kept; every other control escaped; a character
// split between two writes (fputs, then fputc) whole; a start never completed escaped at
// the close.
static void test_terminal_stream(void) {
    char* buf = NULL;
    size_t len = 0;
    FILE* out = open_memstream(&buf, &len);
    FILE* t = mr_escape_terminal_stream(out);
    CHECK(t != NULL);
    fputs("a,b\tc\r\n\x1b]52;c;x\x07 caf\xc3", t);
    fputc(0xa9, t);
    fputs(" \xc2", t);
    fputs("\x9b"
          "2J \xe2\x82",
          t);
    fputs("\xac \xe9\n\xf0\x9f", t);
    CHECK(fclose(t) == 0);
    fclose(out);
    CHECK_EQ_STR(buf, "a,b\tc\r\n\\x1b]52;c;x\\x07 caf\xc3\xa9 \\u009b2J \xe2\x82\xac \\xe9\n"
                      "\\xf0\\x9f");
    free(buf);
}

int main(void) {
    test_rule();
    test_terminal_stream();
    test_csv();
    test_html_dump();
    test_reports();
    CHECK_DONE();
}
