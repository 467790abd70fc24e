// SPDX-License-Identifier: MIT
// Tests of the NPU heap plot (reporter/plot_npu.c, plot_draw.c): the PNG read back with
// cairo (size, not blank, every series' colour present), the SVG, the --data JSON, and the
// refusal to overwrite without --force.
#include "npu.h"
#include "opts.h"
#include "plot.h"

#include "../check.h"
#include "../tmpdir.h"
#include "memtrace/capture.h"

#include <cairo.h>
#include <errno.h>
#include <jansson.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int load(const char* path, mr_npu_series* s) {
    mr_npu_log log;
    char err[256];
    int rc = mr_npu_parse_file(path, false, &log, err, sizeof err);
    if (rc)
        return rc;
    rc = mr_npu_series_build(s, log.legacy, &log.max_raw, &log.frag, &log.used, &log.free,
                             &log.regions, &log.nregions);
    mr_npu_log_free(&log);
    return rc;
}

// Pixels within a small distance of an RGB colour (anti-aliased edges are excluded).
static size_t count_colour(cairo_surface_t* img, int r, int g, int b) {
    int w = cairo_image_surface_get_width(img), h = cairo_image_surface_get_height(img);
    int stride = cairo_image_surface_get_stride(img);
    const unsigned char* data = cairo_image_surface_get_data(img);
    size_t n = 0;
    for (int y = 0; y < h; y++) {
        const uint32_t* row = (const uint32_t*)(const void*)(data + (size_t)y * stride);
        for (int x = 0; x < w; x++) {
            int pr = (row[x] >> 16) & 255, pg = (row[x] >> 8) & 255, pb = row[x] & 255;
            n += abs(pr - r) + abs(pg - g) + abs(pb - b) <= 30;
        }
    }
    return n;
}

static void test_png(const char* fixture) {
    mr_npu_series s;
    CHECK_EQ_I64(load(fixture, &s), 0);
    mr_plot_args a = {
        .input = fixture, .output = test_tmppath("heap.png"), .data = test_tmppath("heap.json")};
    unlink(a.output);
    unlink(a.data);
    CHECK_EQ_I64(mr_npu_plot(&s, &a), 0);
    cairo_surface_t* img = cairo_image_surface_create_from_png(a.output);
    CHECK_EQ_I64(cairo_surface_status(img), CAIRO_STATUS_SUCCESS);
    CHECK_EQ_I64(cairo_image_surface_get_width(img), 4000);
    CHECK_EQ_I64(cairo_image_surface_get_height(img), 600);
    size_t white = count_colour(img, 255, 255, 255);
    CHECK(white < 4000u * 600u - 20000u); // axes, text and lines drawn
    CHECK(white > 4000u * 600u / 2);      // but mostly background
    size_t blue = count_colour(img, 0, 0, 255), magenta = count_colour(img, 255, 0, 255),
           red = count_colour(img, 255, 0, 0), green = count_colour(img, 0, 128, 0),
           gray = count_colour(img, 128, 128, 128);
    CHECK(blue > 1000);  // the max line spans the plot
    CHECK(magenta > 30); // increase markers (and the legend's)
    CHECK(red > 500);    // used line, fragmentation triangles
    CHECK(green > 100);  // free line (and the legend's)
    CHECK(gray > 20);    // region boundary and label
    cairo_surface_destroy(img);
    // The JSON holds exact bytes in upstream's order.
    json_error_t je;
    json_t* j = json_load_file(a.data, 0, &je);
    CHECK(j != NULL);
    CHECK_EQ_STR(json_string_value(json_object_get(j, "unit")), s.unit.name);
    CHECK_EQ_I64(json_integer_value(json_object_get(j, "scale")), s.unit.scale);
    CHECK_EQ_I64(json_integer_value(json_object_get(j, "total_steps")), s.total_steps);
    json_t* series = json_object_get(j, "series");
    json_t* max = json_object_get(series, "max_allocated");
    CHECK_EQ_I64(json_array_size(max), s.max.n);
    for (size_t i = 0; i < s.max.n && i < json_array_size(max); i++) {
        CHECK_EQ_I64(json_integer_value(json_array_get(json_array_get(max, i), 0)), s.max.v[i].x);
        CHECK_EQ_I64(json_integer_value(json_array_get(json_array_get(max, i), 1)), s.max.v[i].y);
    }
    static const char* keys[] = {"max_increased", "max_increased_fragmentation", "used", "free"};
    const mr_points* pts[] = {&s.increased, &s.frag, &s.used, &s.free};
    for (size_t k = 0; k < 4; k++)
        CHECK_EQ_I64(json_array_size(json_object_get(series, keys[k])), pts[k]->n);
    json_t* regions = json_object_get(j, "regions");
    CHECK_EQ_I64(json_array_size(regions), s.nregions);
    for (size_t i = 0; i < s.nregions && i < json_array_size(regions); i++) {
        json_t* r = json_array_get(regions, i);
        CHECK_EQ_STR(json_string_value(json_object_get(r, "name")), s.regions[i].name);
        CHECK_EQ_I64(json_integer_value(json_object_get(r, "start")), s.regions[i].start);
        CHECK(json_is_true(json_object_get(r, "label_drawn")) == s.regions[i].label_drawn);
    }
    json_decref(j);
    // No --force: refused, the existing picture untouched.
    struct stat before, after;
    CHECK_EQ_I64(stat(a.output, &before), 0);
    a.data = NULL;
    CHECK_EQ_I64(mr_npu_plot(&s, &a), MR_EXIT_IO);
    CHECK_EQ_I64(stat(a.output, &after), 0);
    CHECK_EQ_I64(before.st_ino, after.st_ino);
    a.force = true;
    CHECK_EQ_I64(mr_npu_plot(&s, &a), 0);
    // SVG by extension.
    a.output = test_tmppath("heap.svg");
    CHECK_EQ_I64(mr_npu_plot(&s, &a), 0);
    FILE* fp = fopen(a.output, "r");
    char head[512] = "";
    CHECK(fp && fread(head, 1, sizeof head - 1, fp) > 0);
    if (fp)
        fclose(fp);
    CHECK(strstr(head, "<svg") != NULL);
    mr_npu_series_free(&s);
}

// The sample imported, then changed by sql: what mr_npu_series_from_capture returns.
static int from_crafted(const char* sql, mr_npu_series* s, char* err, size_t errlen) {
    const char* db = test_tmppath("crafted.db");
    mr_npu_log log;
    unlink(db);
    CHECK_EQ_I64(mr_npu_parse_file(NPU_FIXTURES "/sample.log", true, &log, err, errlen), 0);
    CHECK_EQ_I64(mr_npu_write_capture(db, &log, "sample.log", err, errlen), 0);
    mr_npu_log_free(&log);
    sqlite3* h;
    CHECK_EQ_I64(sqlite3_open(db, &h), SQLITE_OK);
    CHECK_EQ_I64(sqlite3_exec(h, sql, NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(h);
    mt_capture* cap;
    CHECK_EQ_I64(mt_capture_open(db, &cap, err, errlen), 0);
    memset(s, 0, sizeof *s);
    err[0] = '\0';
    int rc = mr_npu_series_from_capture(cap, s, err, errlen);
    mt_capture_close(cap);
    return rc;
}

static void expect_refused(const char* sql, const char* message) {
    mr_npu_series s;
    char err[256];
    CHECK_EQ_I64(from_crafted(sql, &s, err, sizeof err), -EPROTO);
    if (!strstr(err, message))
        fprintf(stderr, "for %s\n  got: %s\n  want: %s\n", sql, err, message);
    CHECK(strstr(err, message) != NULL);
    mr_npu_series_free(&s);
}

// Steps of an imported capture lie in 0..MR_NPU_MAX_STEP; a crafted one with steps near
// the int64 limits (they overflowed total_steps = x + 1 and span = end - start) or negative
// byte counts is refused with what is wrong. Steps up to the limit itself still plot.
static void test_crafted_capture(void) {
    expect_refused("UPDATE counter SET ts = 9223372036854775807 WHERE ts = 4",
                   "max-allocated counter at step 9223372036854775807: NPU steps must lie in");
    expect_refused("UPDATE counter SET ts = -3 WHERE ts = 2", "counter at step -3");
    expect_refused("UPDATE mark SET ts_begin = -9223372036854775807 - 1 WHERE kind = 'range'",
                   "function region at step -9223372036854775808");
    expect_refused("UPDATE mark SET ts_begin = 2305843009213693953 WHERE kind = 'fragmentation'",
                   "fragmentation mark at step 2305843009213693953");
    expect_refused("UPDATE counter SET value = -5 WHERE ts = 1",
                   "at step 1 holds a negative byte count (-5)");
    expect_refused("UPDATE mark SET attrs = '{}' WHERE kind = 'fragmentation'",
                   "fragmentation mark at step 4 has no \"bytes\"");

    // Every step moved up to end exactly at MR_NPU_MAX_STEP (2^61): accepted, exact.
    mr_npu_series s;
    char err[256], sql[256];
    int64_t shift = MR_NPU_MAX_STEP - 4;
    snprintf(sql, sizeof sql,
             "UPDATE counter SET ts = ts + %lld; UPDATE mark SET ts_begin = ts_begin + %lld",
             (long long)shift, (long long)shift);
    CHECK_EQ_I64(from_crafted(sql, &s, err, sizeof err), 0);
    CHECK_EQ_I64(s.total_steps, MR_NPU_MAX_STEP + 1);
    CHECK_EQ_I64(s.nregions, 1);
    if (s.nregions == 1) {
        CHECK_EQ_I64(s.regions[0].start, shift);
        CHECK_EQ_I64(s.regions[0].span, 5);
    }
    CHECK_EQ_I64(s.frag.n, 1);
    if (s.frag.n == 1)
        CHECK_EQ_I64(s.frag.v[0].x, MR_NPU_MAX_STEP);
    mr_plot_args a = {.input = "crafted.db",
                      .output = test_tmppath("crafted.png"),
                      .data = test_tmppath("crafted.json"),
                      .force = true};
    CHECK_EQ_I64(mr_npu_plot(&s, &a), 0);
    mr_npu_series_free(&s);

    // The builder itself never overflows, whatever it is given: total_steps and spans
    // saturate at the int64 limits.
    mr_points max = {0}, frag = {0}, used = {0}, freep = {0};
    mr_series_points_push(&max, INT64_MAX, 10);
    mr_npu_region* regions = calloc(2, sizeof *regions);
    regions[0] = (mr_npu_region){.name = strdup("part1"), .start = INT64_MIN};
    regions[1] = (mr_npu_region){.name = strdup("main"), .start = INT64_MAX};
    size_t nregions = 2;
    CHECK_EQ_I64(mr_npu_series_build(&s, false, &max, &frag, &used, &freep, &regions, &nregions),
                 0);
    CHECK_EQ_I64(s.total_steps, INT64_MAX);
    CHECK_EQ_I64(s.regions[0].span, INT64_MAX);
    CHECK_EQ_I64(s.regions[1].span, 0);
    mr_npu_series_free(&s);
}

int main(void) {
    test_png(NPU_FIXTURES "/sample.log");
    test_png(NPU_FIXTURES "/corner.log");
    test_crafted_capture();
    CHECK_DONE();
}
