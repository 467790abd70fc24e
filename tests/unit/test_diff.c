// SPDX-License-Identifier: MIT
// The diff of two runs (reporter/model/diff.h) on hand-built entries: matched keys,
// keys of one run only, zero deltas, equal keys summed, the order of the rows (ties
// included, whatever the input order), and the --fail-if limits: grammar and checks.
#include "diff.h"

#include "../check.h"

#include <stdio.h>
#include <string.h>

static const char* k_grow[] = {"grow", "a.c"};
static const char* k_same[] = {"same", "a.c"};
static const char* k_gone[] = {"gone", "b.c"};
static const char* k_born[] = {"born", "b.c"};
static const char* k_grow_other_file[] = {"grow", "z.c"};
static const char* k_nofile[] = {"grow", NULL};

#define ENTRY(k, peak, alloc, count, leak)                                                         \
    {                                                                                              \
        k, sizeof k / sizeof *k, {                                                                 \
            peak, alloc, count, leak                                                               \
        }                                                                                          \
    }

static const mr_diff_row* find(const mr_diff* d, const char* const* key, size_t nkey) {
    for (size_t i = 0; i < d->n; i++) {
        if (d->rows[i].nkey != nkey)
            continue;
        bool eq = true;
        for (size_t j = 0; j < nkey; j++) {
            const char *a = d->rows[i].key[j], *b = key[j];
            eq &= (!a && !b) || (a && b && !strcmp(a, b));
        }
        if (eq)
            return &d->rows[i];
    }
    return NULL;
}

static void test_match(void) {
    mr_diff_entry base[] = {ENTRY(k_grow, 100, 200, 2, 0), ENTRY(k_same, 50, 50, 1, 50),
                            ENTRY(k_gone, 10, 10, 1, 10), ENTRY(k_grow_other_file, 7, 7, 1, 0),
                            ENTRY(k_nofile, 1, 1, 1, 1)};
    mr_diff_entry next[] = {ENTRY(k_born, 0, 4096, 3, 4096), ENTRY(k_same, 50, 50, 1, 50),
                            ENTRY(k_grow, 1100, 1200, 3, 0), ENTRY(k_grow, 0, 0, 1, 8)};
    mr_diff d;
    CHECK_EQ_I64(mr_diff_match(base, 5, next, 4, &d), 0);
    CHECK_EQ_I64(d.n, 6); // grow a.c, grow z.c, grow (no file), same, gone, born
    const mr_diff_row* r = find(&d, k_grow, 2);
    CHECK(r && r->in[MR_DIFF_BASE] && r->in[MR_DIFF_NEW]);
    if (r) { // the two new entries of grow a.c are summed
        CHECK_EQ_I64(mr_diff_delta(r, MR_DIFF_PEAK_BYTES), 1000);
        CHECK_EQ_I64(mr_diff_delta(r, MR_DIFF_ALLOC_BYTES), 1000);
        CHECK_EQ_I64(mr_diff_delta(r, MR_DIFF_ALLOCATIONS), 2);
        CHECK_EQ_I64(mr_diff_delta(r, MR_DIFF_LEAKED_BYTES), 8);
        CHECK_EQ_I64(r->v[MR_DIFF_NEW][MR_DIFF_ALLOCATIONS], 4);
    }
    r = find(&d, k_same, 2);
    CHECK(r && r->in[MR_DIFF_BASE] && r->in[MR_DIFF_NEW]);
    for (int m = 0; r && m < MR_DIFF_NMETRICS; m++)
        CHECK_EQ_I64(mr_diff_delta(r, (mr_diff_metric)m), 0);
    r = find(&d, k_gone, 2);
    CHECK(r && r->in[MR_DIFF_BASE] && !r->in[MR_DIFF_NEW]);
    if (r) {
        CHECK_EQ_I64(mr_diff_delta(r, MR_DIFF_LEAKED_BYTES), -10);
        CHECK_EQ_I64(r->v[MR_DIFF_NEW][MR_DIFF_PEAK_BYTES], 0);
    }
    r = find(&d, k_born, 2);
    CHECK(r && !r->in[MR_DIFF_BASE] && r->in[MR_DIFF_NEW]);
    if (r)
        CHECK_EQ_I64(mr_diff_delta(r, MR_DIFF_ALLOC_BYTES), 4096);
    // Same name, another file or none: functions of their own, only in base.
    r = find(&d, k_grow_other_file, 2);
    CHECK(r && r->in[MR_DIFF_BASE] && !r->in[MR_DIFF_NEW]);
    r = find(&d, k_nofile, 2);
    CHECK(r && r->in[MR_DIFF_BASE] && !r->in[MR_DIFF_NEW]);
    mr_diff_free(&d);

    // Nothing on either side.
    CHECK_EQ_I64(mr_diff_match(NULL, 0, NULL, 0, &d), 0);
    CHECK_EQ_I64(d.n, 0);
    mr_diff_sort(&d, -1);
    mr_diff_free(&d);
}

// Keys of different lengths (stacks): a prefix is another key.
static void test_stack_keys(void) {
    static const char* s1[] = {"main", "run"};
    static const char* s2[] = {"main", "run", "leaf"};
    static const char* s3[] = {"main", "run", "leaf"};
    mr_diff_entry base[] = {ENTRY(s1, 1, 1, 1, 0), ENTRY(s2, 5, 5, 1, 0)};
    mr_diff_entry next[] = {ENTRY(s3, 9, 9, 1, 0)};
    mr_diff d;
    CHECK_EQ_I64(mr_diff_match(base, 2, next, 1, &d), 0);
    CHECK_EQ_I64(d.n, 2);
    const mr_diff_row* r = find(&d, s2, 3);
    CHECK(r && r->in[MR_DIFF_BASE] && r->in[MR_DIFF_NEW]);
    if (r) {
        CHECK_EQ_I64(mr_diff_delta(r, MR_DIFF_PEAK_BYTES), 4);
        CHECK(r->key == s2); // named after the base entry
    }
    r = find(&d, s1, 2);
    CHECK(r && !r->in[MR_DIFF_NEW]);
    mr_diff_free(&d);
}

static void test_sort(void) {
    static const char* a[] = {"a"};
    static const char* b[] = {"b"};
    static const char* c[] = {"c"};
    static const char* e[] = {"e"};
    static const char* f[] = {"f"};
    // By the largest byte delta: a 300 (leaked), b -500 (peak), c 300 (allocated) with one
    // more allocation than a, e 300 (as a, same ties: a first by key), f 0.
    mr_diff_entry base[] = {ENTRY(a, 0, 0, 0, 0), ENTRY(b, 500, 0, 0, 0), ENTRY(c, 0, 0, 0, 0),
                            ENTRY(e, 0, 0, 0, 0), ENTRY(f, 9, 9, 9, 9)};
    mr_diff_entry next[] = {ENTRY(f, 9, 9, 9, 9), ENTRY(e, 0, 0, 0, 300), ENTRY(c, 0, 300, 1, 0),
                            ENTRY(b, 0, 0, 0, 0), ENTRY(a, 0, 0, 0, 300)};
    const char* want[] = {"b", "c", "a", "e", "f"};
    for (int order = 0; order < 2; order++) {
        mr_diff d;
        // The second time the runs' entries come in reverse order: same result.
        mr_diff_entry rb[5], rn[5];
        for (int i = 0; i < 5; i++) {
            rb[i] = base[order ? 4 - i : i];
            rn[i] = next[order ? 4 - i : i];
        }
        CHECK_EQ_I64(mr_diff_match(rb, 5, rn, 5, &d), 0);
        if (order) // rows in any order before sorting (not the key order match gives)
            for (size_t i = 0; i < d.n / 2; i++) {
                mr_diff_row t = d.rows[i];
                d.rows[i] = d.rows[d.n - 1 - i];
                d.rows[d.n - 1 - i] = t;
            }
        mr_diff_sort(&d, -1);
        CHECK_EQ_I64(d.n, 5);
        for (size_t i = 0; i < d.n && i < 5; i++)
            CHECK_EQ_STR(d.rows[i].key[0], want[i]);
        // By one metric: leaked, then the default ties (e and a tie: key order).
        mr_diff_sort(&d, MR_DIFF_LEAKED_BYTES);
        CHECK_EQ_STR(d.rows[0].key[0], "a");
        CHECK_EQ_STR(d.rows[1].key[0], "e");
        CHECK_EQ_STR(d.rows[2].key[0], "c"); // then the allocations tie-break
        mr_diff_free(&d);
    }
}

static void test_delta_clamp(void) {
    mr_diff_row r = {0};
    r.v[MR_DIFF_NEW][0] = UINT64_MAX;
    CHECK_EQ_I64(mr_diff_delta(&r, 0), INT64_MAX);
    r.v[MR_DIFF_NEW][0] = 0;
    r.v[MR_DIFF_BASE][0] = UINT64_MAX;
    CHECK_EQ_I64(mr_diff_delta(&r, 0), -INT64_MAX);
}

static void parse_ok(const char* text, mr_diff_metric m, mr_diff_limit_kind kind, double amount) {
    mr_diff_limit l;
    char err[256] = "";
    int rc = mr_diff_limit_parse(text, &l, err, sizeof err);
    if (rc)
        fprintf(stderr, "%s: %s\n", text, err);
    CHECK_EQ_I64(rc, 0);
    CHECK_EQ_I64(l.metric, m);
    CHECK_EQ_I64(l.kind, kind);
    CHECK(l.amount == amount);
}

static void parse_bad(const char* text, const char* says) {
    mr_diff_limit l;
    char err[256] = "";
    CHECK(mr_diff_limit_parse(text, &l, err, sizeof err) != 0);
    if (!strstr(err, says))
        fprintf(stderr, "%s: '%s' lacks '%s'\n", text, err, says);
    CHECK(strstr(err, says) != NULL);
}

static void test_limit_grammar(void) {
    parse_ok("peak_bytes>+5%", MR_DIFF_PEAK_BYTES, MR_LIMIT_PERCENT, 5);
    parse_ok("peak_bytes > +2.5 %", MR_DIFF_PEAK_BYTES, MR_LIMIT_PERCENT, 2.5);
    parse_ok("leaked_bytes>0", MR_DIFF_LEAKED_BYTES, MR_LIMIT_VALUE, 0);
    parse_ok("allocations>+1000", MR_DIFF_ALLOCATIONS, MR_LIMIT_GROWTH, 1000);
    parse_ok("allocated_bytes>+1MiB", MR_DIFF_ALLOC_BYTES, MR_LIMIT_GROWTH, 1048576);
    parse_ok("peak_bytes>1.5 KiB", MR_DIFF_PEAK_BYTES, MR_LIMIT_VALUE, 1536);
    parse_ok("peak_bytes>2MB", MR_DIFF_PEAK_BYTES, MR_LIMIT_VALUE, 2e6);
    parse_ok("leaked_bytes>+0B", MR_DIFF_LEAKED_BYTES, MR_LIMIT_GROWTH, 0);
    parse_bad("peak>+5%", "expected METRIC>LIMIT");
    parse_bad("peak_bytes", "expected METRIC>LIMIT");
    parse_bad("peak_bytes<5", "expected METRIC>LIMIT");
    parse_bad("peak_bytes>", "expected a number");
    parse_bad("peak_bytes>+", "expected a number");
    parse_bad("peak_bytes>-5%", "expected a number");
    parse_bad("peak_bytes>5.", "expected a number");
    parse_bad("peak_bytes>5%", "write +5%");
    parse_bad("peak_bytes>+5mib", "unknown unit 'mib'");
    parse_bad("peak_bytes>+5%%", "unknown unit");
    parse_bad("allocations>+5KiB", "allocations is a count");
    parse_bad("peak_bytes>99999999999TiB", "too large");
}

static void broken(const char* text, uint64_t base, uint64_t next, const char* want) {
    mr_diff_limit l;
    char err[256], msg[256] = "";
    CHECK_EQ_I64(mr_diff_limit_parse(text, &l, err, sizeof err), 0);
    bool b = mr_diff_limit_broken(&l, base, next, msg, sizeof msg);
    CHECK(b == (want != NULL));
    if (want)
        CHECK_EQ_STR(msg, want);
}

static void test_limit_check(void) {
    // 15 MiB + 1.1 MiB is 7.3% more; exactly 5% is within a +5% limit.
    broken("peak_bytes>+5%", 15728640, 15728640 + 1153434,
           "peak_bytes grew 7.3% (+1.1 MiB), limit +5%");
    broken("peak_bytes>+5%", 1000, 1050, NULL);
    broken("peak_bytes>+5%", 1000, 1051, "peak_bytes grew 5.1% (+51 B), limit +5%");
    broken("peak_bytes>+5%", 1000, 10, NULL);
    broken("peak_bytes>+5%", 0, 0, NULL);
    broken("peak_bytes>+5%", 0, 1, "peak_bytes grew from 0 (+1 B), limit +5%");
    broken("leaked_bytes>0", 4096, 0, NULL);
    broken("leaked_bytes>0", 0, 4096, "leaked_bytes is 4.0 KiB (+4.0 KiB), limit 0");
    broken("leaked_bytes>0", 8192, 4096, "leaked_bytes is 4.0 KiB (-4.0 KiB), limit 0");
    broken("allocations>+1000", 5000, 6000, NULL);
    broken("allocations>+1000", 5000, 6001, "allocations grew +1001 (20.0%), limit +1000");
    broken("allocations>+1000", 0, 1001, "allocations grew +1001 (from 0), limit +1000");
    broken("allocated_bytes>+1MiB", 10, 10 + 1048576, NULL);
    broken("allocated_bytes > +1 MiB", 1048576, 3145728,
           "allocated_bytes grew +2.0 MiB (200.0%), limit +1 MiB");
}

int main(void) {
    test_match();
    test_stack_keys();
    test_sort();
    test_delta_clamp();
    test_limit_grammar();
    test_limit_check();
    CHECK_DONE();
}
