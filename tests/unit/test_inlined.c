// SPDX-License-Identifier: MIT
// The inlined-chain reader on what the tracer writes (common/symbolize_frame.c's JSON):
// calls in order, null file and line, every string escape, surrogate pairs, raw bytes that
// are not UTF-8, and malformed texts that read as no chain at all.
#include "inlined.h"

#include "../check.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

typedef struct seen {
    char text[1024];
} seen;

static int note(void* ud, size_t i, const mr_inlined_call* c) {
    seen* s = ud;
    size_t n = strlen(s->text);
    snprintf(s->text + n, sizeof s->text - n, "%zu:%s|%s|%d;", i, c->function ? c->function : "-",
             c->file ? c->file : "-", c->line);
    return 0;
}

static const char* parse(const char* text, int expect) {
    static seen s;
    memset(&s, 0, sizeof s);
    CHECK_EQ_I64(mr_inlined_parse(text, note, &s), expect);
    return s.text;
}

static void test_chains(void) {
    CHECK_EQ_STR(parse(NULL, 0), "");
    CHECK_EQ_STR(parse("[]", 0), "");
    CHECK_EQ_STR(parse("[{\"function\":\"inner\",\"file\":\"a.c\",\"line\":12},"
                       "{\"function\":\"outer\",\"file\":null,\"line\":null}]",
                       2),
                 "0:inner|a.c|12;1:outer|-|0;");
    // Whitespace, key order, a missing function.
    CHECK_EQ_STR(parse(" [ { \"line\" : 7 , \"file\" : \"b.h\" } ] ", 1), "0:-|b.h|7;");
    // Escapes: quote, backslash, slash, controls, BMP and a surrogate pair.
    CHECK_EQ_STR(
        parse("[{\"function\":\"q\\\"b\\\\s\\/t\\tn\\n\\u0001\\u00e9\\u20ac\\ud83d\\ude00\"}]", 1),
        "0:q\"b\\s/t\tn\n\x01\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80|-|0;");
    // Raw bytes that are not UTF-8 pass through for the caller to escape.
    CHECK_EQ_STR(parse("[{\"function\":\"caf\xe9\"}]", 1), "0:caf\xe9|-|0;");
}

static void test_malformed(void) {
    const char* bad[] = {
        "",
        "{}",
        "[",
        "[{}",
        "[{\"function\":\"x\"}] x",
        "[{\"function\":1}]",
        "[{\"line\":\"7\"}]",
        "[{\"other\":null}]",
        "[{\"function\":\"a\\u0000b\"}]", // NUL inside a name
        "[{\"function\":\"\\ud83d\"}]",   // lone high surrogate
        "[{\"function\":\"\\ud83dxxxxxxxx\"}]",
        "[{\"function\":\"\\ude00\"}]",   // lone low surrogate
        "[{\"function\":\"\\x41\"}]",     // not a JSON escape
        "[{\"function\":\"tab\there\"}]", // raw control character
        "[{\"function\":\"unterminated}]",
        "[{\"function\":\"a\"},]",
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        seen s = {0};
        int rc = mr_inlined_parse(bad[i], note, &s);
        if (rc != -EPROTO || s.text[0])
            fprintf(stderr, "accepted: %s\n", bad[i]);
        CHECK_EQ_I64(rc, -EPROTO);
        CHECK_EQ_STR(s.text, ""); // nothing is reported from a malformed chain
    }
}

int main(void) {
    test_chains();
    test_malformed();
    CHECK_DONE();
}
