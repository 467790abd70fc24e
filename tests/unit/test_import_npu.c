// SPDX-License-Identifier: MIT
// Unit tests of the NPU log parser and series builder (reporter/import_npu.c) against
// docs/npu-memory-usage-log.md: the §3 table of the sample, the §3 corner-case
// log's exact upstream output, newline styles, units, the legacy format (§5), errors,
// bounded lines, events with synthetic addresses, and the capture round trip.
#include "capture_sql.h"
#include "extent.h"
#include "npu.h"
#include "opts.h"
#include "output_file.h"
#include "replay.h"

#include "../check.h"
#include "../rng.h"
#include "../tmpdir.h"
#include "memtrace/capture.h"
#include "memtrace/schema.h"

#include <errno.h>
#include <math.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifndef NPU_FIXTURES
#error "NPU_FIXTURES must name tests/fixtures/npu"
#endif

static void write_file(const char* path, const char* data, size_t n) {
    FILE* fp = fopen(path, "wb");
    CHECK(fp != NULL);
    if (!fp)
        return;
    CHECK(fwrite(data, 1, n, fp) == n);
    fclose(fp);
}

static char* read_file(const char* path, size_t* n) {
    FILE* fp = fopen(path, "rb");
    if (!fp)
        return NULL;
    fseek(fp, 0, SEEK_END);
    long len = ftell(fp);
    fseek(fp, 0, SEEK_SET);
    char* d = malloc((size_t)len + 1);
    *n = fread(d, 1, (size_t)len, fp);
    d[*n] = '\0';
    fclose(fp);
    return d;
}

// Parses path and builds the series; returns the parse result.
static int load(const char* path, mr_npu_series* s, mr_npu_log* keep, char* err, size_t errlen) {
    mr_npu_log log;
    memset(s, 0, sizeof *s);
    int rc = mr_npu_parse_file(path, true, &log, err, errlen);
    if (rc)
        return rc;
    if (keep) {
        *keep = log; // the caller reads events and names; series from copies
        mr_points a = {0}, b = {0}, c = {0}, d = {0};
        for (size_t i = 0; i < log.max_raw.n; i++)
            mr_series_points_push(&a, log.max_raw.v[i].x, log.max_raw.v[i].y);
        for (size_t i = 0; i < log.frag.n; i++)
            mr_series_points_push(&b, log.frag.v[i].x, log.frag.v[i].y);
        for (size_t i = 0; i < log.used.n; i++)
            mr_series_points_push(&c, log.used.v[i].x, log.used.v[i].y);
        for (size_t i = 0; i < log.free.n; i++)
            mr_series_points_push(&d, log.free.v[i].x, log.free.v[i].y);
        mr_npu_region* r = calloc(log.nregions + 1, sizeof *r);
        for (size_t i = 0; i < log.nregions; i++) {
            r[i] = log.regions[i];
            r[i].name = strdup(log.regions[i].name);
        }
        size_t nr = log.nregions;
        CHECK_EQ_I64(mr_npu_series_build(s, log.legacy, &a, &b, &c, &d, &r, &nr), 0);
        return 0;
    }
    rc = mr_npu_series_build(s, log.legacy, &log.max_raw, &log.frag, &log.used, &log.free,
                             &log.regions, &log.nregions);
    mr_npu_log_free(&log);
    return rc;
}

#define CHECK_POINTS(pts, ...)                                                                     \
    do {                                                                                           \
        static const int64_t want_[][2] = {__VA_ARGS__};                                           \
        size_t n_ = sizeof want_ / sizeof *want_;                                                  \
        CHECK_EQ_I64((pts).n, n_);                                                                 \
        for (size_t i_ = 0; i_ < n_ && i_ < (pts).n; i_++) {                                       \
            CHECK_EQ_I64((pts).v[i_].x, want_[i_][0]);                                             \
            CHECK_EQ_I64((pts).v[i_].y, want_[i_][1]);                                             \
        }                                                                                          \
    } while (0)

static bool same_points(const mr_points* a, const mr_points* b) {
    return a->n == b->n && (a->n == 0 || memcmp(a->v, b->v, a->n * sizeof *a->v) == 0);
}

static bool same_series(const mr_npu_series* a, const mr_npu_series* b) {
    if (a->nregions != b->nregions || a->total_steps != b->total_steps || a->peak != b->peak ||
        a->legacy != b->legacy)
        return false;
    for (size_t i = 0; i < a->nregions; i++)
        if (strcmp(a->regions[i].name, b->regions[i].name) ||
            a->regions[i].start != b->regions[i].start ||
            a->regions[i].label_drawn != b->regions[i].label_drawn)
            return false;
    return same_points(&a->max, &b->max) && same_points(&a->increased, &b->increased) &&
           same_points(&a->frag, &b->frag) && same_points(&a->used, &b->used) &&
           same_points(&a->free, &b->free);
}

// §3: the upstream sample, exact.
static void test_sample(void) {
    mr_npu_series s;
    mr_npu_log log;
    char err[256];
    CHECK_EQ_I64(load(NPU_FIXTURES "/sample.log", &s, &log, err, sizeof err), 0);
    CHECK(!s.legacy);
    CHECK_EQ_STR(s.unit.name, "KB");
    CHECK_EQ_I64(s.unit.scale, 1024);
    CHECK_EQ_I64(s.total_steps, 5);
    CHECK_EQ_I64(s.nregions, 1);
    CHECK_EQ_STR(s.regions[0].name, "main");
    CHECK_EQ_I64(s.regions[0].start, 0);
    CHECK_EQ_I64(s.regions[0].span, 5);
    CHECK(s.regions[0].label_drawn);
    CHECK_POINTS(s.max, {0, 2048}, {1, 3072}, {2, 5120}, {3, 6144}, {4, 7168});
    CHECK_POINTS(s.increased, {0, 2048}, {1, 3072}, {2, 5120}, {3, 6144}, {4, 7168});
    CHECK_POINTS(s.frag, {4, 7168});
    CHECK_POINTS(s.used, {0, 2048}, {1, 3072}, {2, 5120}, {3, 6144}, {4, 6144});
    CHECK_POINTS(s.free, {0, 0}, {1, 0}, {2, 0}, {3, 0}, {4, 1024});
    // The annotation and the label position of §3.
    char buf[32];
    double peak = (double)s.peak / (double)s.unit.scale;
    snprintf(buf, sizeof buf, "%.2f", peak);
    CHECK_EQ_STR(buf, "7.00");
    snprintf(buf, sizeof buf, "%.16g", 0.98 * peak);
    CHECK_EQ_STR(buf, "6.859999999999999");
    // Events: 5 allocations, 5 frees; a free takes the most recent live buffer of its size.
    CHECK_EQ_I64(log.nfuncs, 1);
    CHECK_EQ_STR(log.funcs[0], "main");
    CHECK_EQ_I64(log.nev, 10);
    static const struct {
        int64_t step;
        uint64_t size;
        bool is_free;
        uint64_t addr;
    } ev[] = {{0, 2048, false, 1}, {1, 1024, false, 2}, {2, 2048, false, 3}, {3, 1024, false, 4},
              {4, 1024, true, 4},  {4, 1024, true, 2},  {4, 2048, false, 5}, {5, 2048, true, 5},
              {5, 2048, true, 3},  {5, 2048, true, 1}};
    for (size_t i = 0; i < 10 && i < log.nev; i++) {
        CHECK_EQ_I64(log.ev[i].step, ev[i].step);
        CHECK_EQ_I64(log.ev[i].size, ev[i].size);
        CHECK_EQ_I64(log.ev[i].is_free, ev[i].is_free);
        CHECK_EQ_I64(log.ev[i].addr, ev[i].addr);
        CHECK_EQ_I64(log.ev[i].func, 0);
    }
    CHECK_EQ_I64(log.lines, 33);
    mr_npu_log_free(&log);
    mr_npu_series_free(&s);
}

// §3: the hand-written corner-case log and its upstream output.
static void test_corner(void) {
    mr_npu_series s;
    mr_npu_log log;
    char err[256];
    CHECK_EQ_I64(load(NPU_FIXTURES "/corner.log", &s, &log, err, sizeof err), 0);
    CHECK_POINTS(s.max, {0, 1500}, {1, 6000}, {2, 6500}, {2, 6500}, {3, 6500}, {4, 6500}, {4, 6500},
                 {5, 7000}, {5, 7000}, {6, 7000}, {7, 7000});
    CHECK_POINTS(s.increased, {0, 1500}, {1, 6000}, {2, 6500}, {5, 7000});
    CHECK_POINTS(s.frag, {1, 6000});
    CHECK_EQ_I64(s.nregions, 3);
    if (s.nregions == 3) {
        CHECK_EQ_STR(s.regions[0].name, "part2");
        CHECK_EQ_I64(s.regions[0].start, 0);
        CHECK_EQ_STR(s.regions[1].name, "part10");
        CHECK_EQ_I64(s.regions[1].start, 2);
        CHECK_EQ_STR(s.regions[2].name, "main");
        CHECK_EQ_I64(s.regions[2].start, 5);
        CHECK_EQ_I64(s.regions[2].span, 3);
    }
    CHECK_EQ_I64(s.total_steps, 8);
    CHECK_EQ_STR(s.unit.name, "KB");
    // Functions in timeline order; part3 has events but no region; init/main_part7 ignored.
    CHECK_EQ_I64(log.nfuncs, 4);
    if (log.nfuncs == 4) {
        CHECK_EQ_STR(log.funcs[0], "part2");
        CHECK_EQ_STR(log.funcs[1], "part3");
        CHECK_EQ_STR(log.funcs[2], "part10");
        CHECK_EQ_STR(log.funcs[3], "main");
    }
    // CMX_NN steps' buffers (two A lines, one H line) are not DDR events.
    CHECK_EQ_I64(log.cmx_events, 3);
    size_t allocs = 0, frees = 0;
    for (size_t i = 0; i < log.nev; i++) {
        allocs += !log.ev[i].is_free;
        frees += log.ev[i].is_free;
        if (i)
            CHECK(log.ev[i].step >= log.ev[i - 1].step);
    }
    CHECK_EQ_I64(allocs, 9); // part2 2, part3 1, part10 3 (of 5), main 3 (one truncated)
    CHECK_EQ_I64(frees, 7);  // part2 2, part3 1, part10 3 (of 4), main 1
    mr_npu_log_free(&log);
    mr_npu_series_free(&s);
}

// LF, CRLF and lone CR give the same result (Python's universal newlines).
static void test_newlines(void) {
    size_t n;
    char* lf = read_file(NPU_FIXTURES "/corner.log", &n);
    CHECK(lf != NULL);
    if (!lf)
        return;
    char* crlf = malloc(2 * n + 1);
    char* cr = malloc(n + 1);
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        if (lf[i] == '\n')
            crlf[k++] = '\r';
        crlf[k++] = lf[i];
        cr[i] = lf[i] == '\n' ? '\r' : lf[i];
    }
    write_file(test_tmppath("crlf.log"), crlf, k);
    write_file(test_tmppath("cr.log"), cr, n);
    mr_npu_series a, b, c;
    char err[256];
    CHECK_EQ_I64(load(NPU_FIXTURES "/corner.log", &a, NULL, err, sizeof err), 0);
    CHECK_EQ_I64(load(test_tmppath("crlf.log"), &b, NULL, err, sizeof err), 0);
    CHECK_EQ_I64(load(test_tmppath("cr.log"), &c, NULL, err, sizeof err), 0);
    CHECK(same_series(&a, &b));
    CHECK(same_series(&a, &c));
    mr_npu_series_free(&a);
    mr_npu_series_free(&b);
    mr_npu_series_free(&c);
    free(lf);
    free(crlf);
    free(cr);
}

static const char gate[] = "[DEBUG] [vpux-compiler] Start Pass StaticAllocation on Operation "
                           "loc(fused<{name = \"main\", type = \"Func\"}>[\"main\"])\n";

// A one-step main with the given max.
static void step_log(const char* path, uint64_t max) {
    char buf[1024];
    int n = snprintf(buf, sizeof buf,
                     "%s[TRACE] [memory-usage-info]   main: Max allocated size %llu B\n"
                     "[TRACE] [memory-usage-info]   main: DDR used memory    %llu 100.00%%\n"
                     "[TRACE] [memory-usage-info]   main: DDR free memory    0 0.00%%\n",
                     gate, (unsigned long long)max, (unsigned long long)max);
    write_file(path, buf, (size_t)n);
}

static void test_units(void) {
    static const struct {
        uint64_t peak;
        const char* unit;
        uint64_t scale;
    } cases[] = {{1023, "B", 1},
                 {1024, "KB", 1024},
                 {(1u << 20) - 1, "KB", 1024},
                 {3u << 20, "MB", 1u << 20},
                 {1ull << 30, "GB", 1ull << 30},
                 {5ull << 40, "GB", 1ull << 30}};
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        step_log(test_tmppath("unit.log"), cases[i].peak);
        mr_npu_series s;
        char err[256];
        CHECK_EQ_I64(load(test_tmppath("unit.log"), &s, NULL, err, sizeof err), 0);
        CHECK_EQ_STR(s.unit.name, cases[i].unit);
        CHECK_EQ_I64(s.unit.scale, cases[i].scale);
        CHECK_EQ_I64(s.peak, cases[i].peak);
        mr_npu_series_free(&s);
    }
}

// §5: no {F}: prefix; stops at the first End Pass; the flag marks the next max point;
// "increased" against the previous raw value.
static void test_legacy(void) {
    mr_npu_series s;
    mr_npu_log log;
    char err[256];
    CHECK_EQ_I64(load(NPU_FIXTURES "/legacy_2025.log", &s, &log, err, sizeof err), 0);
    CHECK(s.legacy);
    CHECK_EQ_I64(s.nregions, 0);
    CHECK_EQ_I64(log.nfuncs, 1);
    CHECK_POINTS(s.frag, {4, 14680064});
    CHECK_EQ_I64(s.max.v[0].y, 4096);
    CHECK_EQ_I64(s.max.v[5].y, 18350080);
    CHECK_EQ_STR(s.unit.name, "MB");
    // Every raw value is plotted as is, and each rise over the previous one is an increase.
    size_t rises = 0;
    for (size_t i = 0; i < s.max.n; i++)
        rises += s.max.v[i].y > (i ? s.max.v[i - 1].y : 0);
    CHECK_EQ_I64(s.increased.n, rises);
    CHECK(s.increased.n >= 5);
    // Lines after the End Pass are ignored: appending a bigger step changes nothing.
    size_t n;
    char* text = read_file(NPU_FIXTURES "/legacy_2025.log", &n);
    static const char more[] = "[TRACE] [memory-usage-info]   Max allocated size 999999999 B\n"
                               "[TRACE] [memory-usage-info]   DDR free memory    0 0.00%\n";
    char* both = malloc(n + sizeof more);
    memcpy(both, text, n);
    memcpy(both + n, more, sizeof more);
    write_file(test_tmppath("legacy_more.log"), both, n + sizeof more - 1);
    mr_npu_series t;
    CHECK_EQ_I64(load(test_tmppath("legacy_more.log"), &t, NULL, err, sizeof err), 0);
    CHECK(strstr(text, "End Pass StaticAllocation") != NULL);
    CHECK(same_series(&s, &t));
    mr_npu_series_free(&t);
    free(text);
    free(both);
    mr_npu_log_free(&log);
    mr_npu_series_free(&s);
}

static void expect_error(const char* path, const char* needle) {
    mr_npu_log log;
    char err[512] = "";
    int rc = mr_npu_parse_file(path, true, &log, err, sizeof err);
    CHECK_EQ_I64(rc, -EPROTO);
    if (!strstr(err, needle))
        fprintf(stderr, "error message for %s: '%s' lacks '%s'\n", path, err, needle);
    CHECK(strstr(err, needle) != NULL);
}

static void test_errors(void) {
    write_file(test_tmppath("empty.log"), "", 0);
    expect_error(test_tmppath("empty.log"), "no 'Start Pass StaticAllocation' line");
    static const char nogate[] = "[TRACE] [memory-usage-info]   main: Max allocated size 5 B\n";
    write_file(test_tmppath("nogate.log"), nogate, sizeof nogate - 1);
    expect_error(test_tmppath("nogate.log"), "no 'Start Pass StaticAllocation' line");
    char buf[2048];
    int n = snprintf(buf, sizeof buf,
                     "%s[TRACE] [memory-usage-info]   init: Max allocated size 5 B\n"
                     "[TRACE] [memory-usage-info]   main: Buffer size to allocate      5 B\n"
                     "[TRACE] [memory-usage-info]   main: DDR free memory    0 0.00%%\n",
                     gate);
    write_file(test_tmppath("nodata.log"), buf, (size_t)n);
    expect_error(test_tmppath("nodata.log"), "no memory-usage lines");
    n = snprintf(buf, sizeof buf, "%s[TRACE] [m]   main: Max allocated size %s B\n", gate,
                 "123456789012345678901234567890");
    write_file(test_tmppath("huge.log"), buf, (size_t)n);
    expect_error(test_tmppath("huge.log"), "line 2: number larger than");
    // Binary garbage (NULs, invalid UTF-8, no newlines for long stretches).
    char* junk = malloc(3 << 20);
    uint64_t x = 88172645463325252ull;
    for (size_t i = 0; i < (3u << 20); i++) {
        junk[i] = (char)(test_rng(&x) >> 32);
    }
    write_file(test_tmppath("junk.log"), junk, 3u << 20);
    expect_error(test_tmppath("junk.log"), "no 'Start Pass StaticAllocation' line");
    free(junk);
    mr_npu_log log;
    char err[256];
    CHECK(mr_npu_parse_file(test_tmppath("missing.log"), true, &log, err, sizeof err) == -ENOENT);
}

// Upstream's \b before a key is Python's: '²' (U+00B2) and the Hebrew letter alef are word
// characters there, so no key starts after them; the Hebrew point sheva (U+05B0, a
// combining mark) is not, so part1 after it counts. (glibc's iswalnum said the opposite
// for '²' and sheva.)
static void test_word_boundaries(void) {
    char buf[1024];
    int n = snprintf(buf, sizeof buf,
                     "%s[TRACE] [m]   \u00b2main: Max allocated size 999 B\n"
                     "[TRACE] [m]   \u05d0main: Max allocated size 7777 B\n"
                     "[TRACE] [m]   \u05b0part1: Max allocated size 100 B\n"
                     "[TRACE] [m]   \u05b0part1: DDR free memory    0 0.00%%\n"
                     "[TRACE] [m]   main: Max allocated size 50 B\n",
                     gate);
    write_file(test_tmppath("words.log"), buf, (size_t)n);
    mr_npu_series s;
    mr_npu_log log;
    char err[256];
    CHECK_EQ_I64(load(test_tmppath("words.log"), &s, &log, err, sizeof err), 0);
    CHECK_EQ_I64(log.nfuncs, 2);
    if (log.nfuncs == 2) {
        CHECK_EQ_STR(log.funcs[0], "part1");
        CHECK_EQ_STR(log.funcs[1], "main");
    }
    CHECK_POINTS(log.max_raw, {0, 100}, {1, 50});
    CHECK_POINTS(s.max, {0, 100}, {1, 100});
    CHECK(mr_npu_is_word(0xB2) && mr_npu_is_word(0x5D0) && !mr_npu_is_word(0x5B0));
    mr_npu_log_free(&log);
    mr_npu_series_free(&s);
}

// A line over the limit is skipped with bounded memory; everything else still counts.
static void test_long_line(void) {
    size_t big = 3 * MR_NPU_LINE_LIMIT + 17;
    char* text = malloc(big + 4096);
    size_t k = (size_t)sprintf(text, "%s", gate);
    k += (size_t)sprintf(text + k, "[TRACE] [memory-usage-info]   main: Max allocated size 5 B ");
    memset(text + k, 'x', big);
    k += big;
    k += (size_t)sprintf(text + k,
                         "\n[TRACE] [memory-usage-info]   main: Max allocated size 2048 B\n"
                         "[TRACE] [memory-usage-info]   main: DDR free memory    0 0.00%%\n");
    write_file(test_tmppath("long.log"), text, k);
    mr_npu_series s;
    mr_npu_log log;
    char err[256];
    CHECK_EQ_I64(load(test_tmppath("long.log"), &s, &log, err, sizeof err), 0);
    CHECK_EQ_I64(log.long_lines, 1);
    CHECK_EQ_I64(log.lines, 4);
    CHECK_POINTS(s.max, {0, 2048});
    mr_npu_log_free(&log);
    mr_npu_series_free(&s);
    free(text);
}

// Region labels narrower than 0.25 % of the timeline are hidden (the line stays).
static void test_hidden_label(void) {
    FILE* fp = fopen(test_tmppath("narrow.log"), "w");
    fputs(gate, fp);
    fputs("[TRACE] [m]   part1: Max allocated size 10 B\n[TRACE] [m]   part1: DDR free memory  0 "
          "0%\n",
          fp);
    for (int i = 0; i < 1000; i++)
        fprintf(fp,
                "[TRACE] [m]   main: Max allocated size %d B\n[TRACE] [m]   main: DDR free "
                "memory 0 0%%\n",
                i);
    fclose(fp);
    mr_npu_series s;
    char err[256];
    CHECK_EQ_I64(load(test_tmppath("narrow.log"), &s, NULL, err, sizeof err), 0);
    CHECK_EQ_I64(s.total_steps, 1001);
    CHECK_EQ_I64(s.nregions, 2);
    CHECK(!s.regions[0].label_drawn); // span 1 < 2.5025
    CHECK(s.regions[1].label_drawn);
    CHECK_EQ_I64(s.increased.n, 990); // 10 (part1), then main's 11..999; 0..10 are no records
    mr_npu_series_free(&s);
}

// Synthetic addresses: each free takes the most recent live buffer of its size in its own
// function (checked against a naive search), unmatched frees get ids never allocated.
static void test_pairing(void) {
    static const char* names[] = {"part1", "part2", "main"};
    FILE* fp = fopen(test_tmppath("pairs.log"), "w");
    fputs(gate, fp);
    uint64_t x = 12345;
    for (int i = 0; i < 20000; i++) {
        test_lcg(&x);
        const char* f = names[(x >> 33) % 3];
        uint64_t size = 64 * (1 + (x >> 40) % 150); // many keys: collisions, shifts
        if ((x >> 50) % 2)
            fprintf(fp,
                    "[TRACE] [m]   %s: Buffer size to allocate      %llu B\n"
                    "[TRACE] [m]   %s: DDR free memory before alloc 0 B\n"
                    "[TRACE] [m]   %s: Max allocated size %d B\n"
                    "[TRACE] [m]   %s: DDR free memory    0 0.00%%\n",
                    f, (unsigned long long)size, f, f, i, f);
        else
            fprintf(fp, "[TRACE] [m]   %s: Free buffer of size %llu B\n", f,
                    (unsigned long long)size);
    }
    fclose(fp);
    mr_npu_series s;
    mr_npu_log log;
    char err[256];
    CHECK_EQ_I64(load(test_tmppath("pairs.log"), &s, &log, err, sizeof err), 0);
    CHECK(log.nev > 15000);
    mr_npu_event* live = calloc(log.nev, sizeof *live);
    size_t nlive = 0, bad = 0, unmatched = 0;
    for (size_t i = 0; i < log.nev; i++) {
        const mr_npu_event* e = &log.ev[i];
        if (!e->is_free) {
            live[nlive++] = *e;
            continue;
        }
        size_t j = nlive;
        while (j > 0 && !(live[j - 1].func == e->func && live[j - 1].size == e->size))
            j--;
        if (j == 0) {
            unmatched++;
            for (size_t k = 0; k < nlive; k++)
                bad += live[k].addr == e->addr; // a fresh id, never a live one
            continue;
        }
        bad += live[j - 1].addr != e->addr;
        memmove(&live[j - 1], &live[j], (nlive - j) * sizeof *live);
        nlive--;
    }
    CHECK_EQ_I64(bad, 0);
    CHECK(unmatched > 0);
    free(live);
    mr_npu_log_free(&log);
    mr_npu_series_free(&s);
}

// The capture written by import reads back into the same series and a consistent heap.
static void test_capture_roundtrip(const char* fixture) {
    mr_npu_series s, t;
    mr_npu_log log;
    char err[256];
    CHECK_EQ_I64(load(fixture, &s, &log, err, sizeof err), 0);
    const char* db = test_tmppath("rt.db");
    CHECK_EQ_I64(mr_npu_write_capture(db, &log, fixture, err, sizeof err), 0);
    mt_capture* cap;
    CHECK_EQ_I64(mt_capture_open(db, &cap, err, sizeof err), 0);
    if (!cap)
        return;
    CHECK(!mt_capture_truncated(cap));
    CHECK_EQ_I64(mr_extent_default_heap(cap), MT_HEAP_NPU);
    char* fmt = mt_capture_meta_text(cap, "format");
    CHECK_EQ_STR(fmt, log.legacy ? "npu-log-legacy" : "npu-log");
    free(fmt);
    CHECK_EQ_I64(mr_npu_series_from_capture(cap, &t, err, sizeof err), 0);
    CHECK(same_series(&s, &t));
    // Rows out of timeline order (not how import writes them) read back the same.
    mr_npu_series_free(&t);
    CHECK_EQ_I64(capture_sql_exec(cap, "UPDATE counter SET rowid = -rowid"), SQLITE_OK);
    CHECK_EQ_I64(mr_npu_series_from_capture(cap, &t, err, sizeof err), 0);
    CHECK(same_series(&s, &t));
    mt_event_iter* it;
    CHECK_EQ_I64(mt_capture_iter_open(cap, MT_HEAP_NPU, &it), 0);
    mt_event ev;
    size_t i = 0;
    while (mt_capture_iter_next(it, &ev) == 1 && i < log.nev) {
        CHECK_EQ_I64(ev.ts, log.ev[i].step);
        CHECK_EQ_I64(ev.addr, log.ev[i].addr);
        CHECK_EQ_I64(ev.kind, log.ev[i].is_free ? MT_KIND_NPU_FREE : MT_KIND_NPU_ALLOC);
        CHECK_EQ_I64(ev.callsite, log.ev[i].func + 1);
        i++;
    }
    CHECK_EQ_I64(i, log.nev);
    mt_capture_iter_close(it);
    mr_replay r;
    CHECK_EQ_I64(mr_replay_init(&r, cap, MT_HEAP_NPU), 0);
    CHECK_EQ_I64(mr_replay_run(&r, UINT64_MAX, NULL, NULL), 0);
    CHECK_EQ_I64(r.events, log.nev);
    CHECK_EQ_I64(r.unmatched_frees, 0);
    mr_replay_free(&r);
    mr_npu_series_free(&t);
    mt_capture_close(cap);
    mr_npu_log_free(&log);
    mr_npu_series_free(&s);
    unlink(db);
}

int main(void) {
    test_sample();
    test_corner();
    test_newlines();
    test_units();
    test_legacy();
    test_errors();
    test_long_line();
    test_hidden_label();
    test_pairing();
    test_word_boundaries();
    test_capture_roundtrip(NPU_FIXTURES "/sample.log");
    test_capture_roundtrip(NPU_FIXTURES "/corner.log");
    test_capture_roundtrip(NPU_FIXTURES "/legacy_2025.log");
    CHECK_DONE();
}
