// SPDX-License-Identifier: MIT
// Tests of the native time plot (reporter/plot_native.c) on a capture built here with the
// capture writer: exact peak, heap series points that are real (time, live bytes) states,
// RSS/VSZ counters, marks and ranges, site rows, errors, and the PNG read back with cairo.
#include "opts.h"
#include "output_file.h"
#include "plot.h"
#include "plot_draw.h"

#include "../check.h"
#include "../tmpdir.h"
#include "memtrace/capture.h"
#include "memtrace/codec.h"
#include "memtrace/schema.h"

#include <cairo.h>
#include <jansson.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define NEV 6000
static mt_event ev[NEV];
static uint64_t live_after[NEV]; // live bytes after each event (the naive replay)

// Three sites: "grow" (callsite 1) builds up to a peak, "churn" (2) allocates and frees
// small blocks, "leak" (3) keeps a few. Time: 1 ms per event.
static void build_capture(const char* path) {
    char err[256];
    mt_capture_writer* w;
    CHECK_EQ_I64(mt_capture_writer_open(path, &w, err, sizeof err), 0);
    sqlite3* db = mt_capture_writer_db(w);
    mt_capture_writer_begin(w);
    mt_capture_writer_heap(w, MT_HEAP_LIBC, "libc", "libc", "ns");
    mt_capture_writer_meta_text(w, "exe", "/usr/bin/testprog");
    mt_capture_writer_meta_int(w, "pid", 4242);
    mt_capture_writer_meta_text(w, "symbolized", "1");
    mt_capture_writer_counter_track(w, MT_TRACK_RSS, MT_HEAP_LIBC, "rss", "bytes");
    mt_capture_writer_counter_track(w, MT_TRACK_VSZ, MT_HEAP_LIBC, "vsz", "bytes");
    sqlite3_exec(db,
                 "INSERT INTO frame(id, mapping_id, pc, function, relevant) VALUES"
                 " (1, NULL, 4096, 'grow', 1), (2, NULL, 8192, 'churn', 1),"
                 " (3, NULL, 12288, 'leak', 1);"
                 "INSERT INTO callsite VALUES (1, 0, 1, 1), (2, 0, 2, 1), (3, 0, 3, 1);"
                 "INSERT INTO mark(heap, kind, name, ts_begin, ts_end) VALUES"
                 " (1, 'mark', 'phase two', 3000000000, NULL),"
                 " (1, 'range', 'loading', 500000000, 1500000000);",
                 NULL, NULL, NULL);
    uint64_t live = 0, grow_addr = 0x100000, churn_live = 0;
    for (int i = 0; i < NEV; i++) {
        mt_event* e = &ev[i];
        e->seq = (uint64_t)i + 1;
        e->ts = (int64_t)i * 1000000;
        e->tid = 7;
        if (i < 3000 && i % 2 == 0) { // grow: +1000 bytes per 2 ms
            *e = (mt_event){e->seq, e->ts, grow_addr, 1000, 1, 7, MT_KIND_MALLOC, 1};
            grow_addr += 0x1000;
            live += 1000;
        } else if (i >= 4000 && i < 5500 && i % 2 == 0) { // free the grow blocks
            grow_addr -= 0x1000;
            *e = (mt_event){e->seq, e->ts, grow_addr, 0, 0, 7, MT_KIND_FREE, 1};
            live -= 1000;
        } else if (i % 100 == 1) { // leak: 10 bytes, never freed
            *e = (mt_event){e->seq,         e->ts, 0x9000000 + (uint64_t)i * 16, 10, 3, 7,
                            MT_KIND_MALLOC, 1};
            live += 10;
        } else if (!churn_live) {
            *e = (mt_event){e->seq, e->ts, 0x5000000, 64, 2, 7, MT_KIND_MALLOC, 1};
            churn_live = 64;
            live += 64;
        } else {
            *e = (mt_event){e->seq, e->ts, 0x5000000, 0, 0, 7, MT_KIND_FREE, 1};
            churn_live = 0;
            live -= 64;
        }
        live_after[i] = live;
    }
    uint8_t* scratch = malloc(mt_codec_bound(1000));
    for (int i = 0; i < NEV; i += 1000)
        CHECK_EQ_I64(mt_capture_writer_chunk(w, MT_HEAP_LIBC, ev + i, 1000, scratch), 0);
    free(scratch);
    for (int i = 0; i < 600; i++) { // every 10 ms
        mt_capture_writer_counter(w, MT_TRACK_RSS, (int64_t)i * 10000000, 4000000 + i * 1000);
        mt_capture_writer_counter(w, MT_TRACK_VSZ, (int64_t)i * 10000000, 9000000);
    }
    mt_capture_writer_commit(w);
    CHECK_EQ_I64(mt_capture_writer_finish(w, "complete"), 0);
}

static size_t count_colour(cairo_surface_t* img, int r, int g, int b) {
    int w = cairo_image_surface_get_width(img), h = cairo_image_surface_get_height(img);
    int stride = cairo_image_surface_get_stride(img);
    const unsigned char* data = cairo_image_surface_get_data(img);
    size_t n = 0;
    for (int y = 0; y < h; y++) {
        const uint32_t* row = (const uint32_t*)(const void*)(data + (size_t)y * stride);
        for (int x = 0; x < w; x++)
            n += abs((int)((row[x] >> 16) & 255) - r) + abs((int)((row[x] >> 8) & 255) - g) +
                     abs((int)(row[x] & 255) - b) <=
                 30;
    }
    return n;
}

static void test_plot(const char* db) {
    mt_capture* cap;
    char err[256];
    CHECK_EQ_I64(mt_capture_open(db, &cap, err, sizeof err), 0);
    mr_plot_args a = {.input = db, .output = test_tmppath("n.png"), .data = test_tmppath("n.json")};
    CHECK_EQ_I64(mr_plot_native(cap, &a), 0);
    json_error_t je;
    json_t* j = json_load_file(a.data, 0, &je);
    CHECK(j != NULL);
    uint64_t peak = 0;
    int64_t peak_ts = 0;
    for (int i = 0; i < NEV; i++)
        if (live_after[i] > peak) {
            peak = live_after[i];
            peak_ts = ev[i].ts;
        }
    json_t* jp = json_object_get(j, "peak");
    CHECK_EQ_I64(json_integer_value(json_object_get(jp, "bytes")), peak);
    CHECK_EQ_I64(json_integer_value(json_object_get(jp, "ts")), peak_ts);
    CHECK_EQ_STR(json_string_value(json_object_get(j, "unit")), "MiB"); // 1024-based: IEC label
    CHECK_EQ_STR(json_string_value(json_object_get(j, "time_unit")), "ms");
    // Every heap point is a real state (ts, live after the event at ts); the peak is one.
    json_t* heap = json_object_get(json_object_get(j, "series"), "heap");
    size_t n = json_array_size(heap), bad = 0;
    bool has_peak = false;
    CHECK(n > 100 && n < NEV);
    for (size_t i = 0; i < n; i++) {
        int64_t ts = json_integer_value(json_array_get(json_array_get(heap, i), 0));
        int64_t v = json_integer_value(json_array_get(json_array_get(heap, i), 1));
        int64_t k = ts / 1000000;
        bad += k < 0 || k >= NEV || ts % 1000000 || (int64_t)live_after[k] != v;
        has_peak |= ts == peak_ts && (uint64_t)v == peak;
    }
    CHECK_EQ_I64(bad, 0);
    CHECK(has_peak);
    json_t* rss = json_object_get(json_object_get(j, "series"), "rss");
    CHECK_EQ_I64(json_array_size(rss), 600); // fewer samples than pixel columns: all kept
    CHECK_EQ_I64(json_integer_value(json_array_get(json_array_get(rss, 599), 1)), 4599000);
    json_t* marks = json_object_get(j, "marks");
    CHECK_EQ_I64(json_array_size(marks), 2);
    CHECK_EQ_STR(json_string_value(json_object_get(json_array_get(marks, 0), "name")), "loading");
    CHECK_EQ_I64(json_integer_value(json_object_get(json_array_get(marks, 0), "end")), 1500000000);
    CHECK_EQ_STR(json_string_value(json_object_get(json_array_get(marks, 1), "kind")), "mark");
    CHECK_EQ_I64(json_array_size(json_object_get(j, "sites")), 0);
    json_decref(j);
    cairo_surface_t* img = cairo_image_surface_create_from_png(a.output);
    CHECK_EQ_I64(cairo_image_surface_get_width(img), 1600);
    CHECK_EQ_I64(cairo_image_surface_get_height(img), 600);
    CHECK(count_colour(img, 0, 114, 178) > 300); // the heap line
    CHECK(count_colour(img, 213, 94, 0) > 300);  // RSS
    CHECK(count_colour(img, 255, 255, 255) < 1600u * 600u - 10000u);
    cairo_surface_destroy(img);

    // Site rows: top 2 by peak bytes held, then by name.
    a.force = true;
    a.top_sites = 2;
    CHECK_EQ_I64(mr_plot_native(cap, &a), 0);
    j = json_load_file(a.data, 0, &je);
    json_t* sites = json_object_get(j, "sites");
    CHECK_EQ_I64(json_array_size(sites), 2);
    CHECK_EQ_STR(json_string_value(json_object_get(json_array_get(sites, 0), "name")), "grow");
    CHECK_EQ_I64(json_integer_value(json_object_get(json_array_get(sites, 0), "peak_bytes")),
                 1500000);
    CHECK_EQ_STR(json_string_value(json_object_get(json_array_get(sites, 1), "name")), "leak");
    CHECK_EQ_I64(json_integer_value(json_object_get(json_array_get(sites, 1), "peak_bytes")), 600);
    json_decref(j);
    img = cairo_image_surface_create_from_png(a.output);
    CHECK_EQ_I64(cairo_image_surface_get_height(img), 1200);
    cairo_surface_destroy(img);
    const char* names[] = {"churn"};
    a.top_sites = 0;
    a.sites = names;
    a.nsites = 1;
    CHECK_EQ_I64(mr_plot_native(cap, &a), 0);
    j = json_load_file(a.data, 0, &je);
    sites = json_object_get(j, "sites");
    CHECK_EQ_I64(json_array_size(sites), 1);
    CHECK_EQ_I64(json_integer_value(json_object_get(json_array_get(sites, 0), "peak_bytes")), 64);
    json_decref(j);
    const char* missing[] = {"nosuchfunction"};
    a.sites = missing;
    CHECK_EQ_I64(mr_plot_native(cap, &a), MR_EXIT_BAD_INPUT);
    mt_capture_close(cap);
}

// A crafted capture: no RSS/VSZ counters (empty series: no memcpy from NULL), and a site
// that holds INT64_MAX bytes, the most a heap may allocate in all (docs/capture-format.md,
// "Limits"; a 0-byte block beside it), marks at the int64 extremes.
static void test_crafted(const char* db) {
    char err[256];
    mt_capture_writer* w;
    CHECK_EQ_I64(mt_capture_writer_open(db, &w, err, sizeof err), 0);
    mt_capture_writer_begin(w);
    mt_capture_writer_heap(w, MT_HEAP_LIBC, "libc", "libc", "ns");
    mt_capture_writer_meta_text(w, "symbolized", "1");
    sqlite3_exec(mt_capture_writer_db(w),
                 "INSERT INTO frame(id, mapping_id, pc, function, relevant) VALUES"
                 " (1, NULL, 4096, 'huge', 1);"
                 "INSERT INTO callsite VALUES (1, 0, 1, 1);"
                 "INSERT INTO mark(heap, kind, name, ts_begin, ts_end) VALUES"
                 " (1, 'range', 'all', -9223372036854775807 - 1, 9223372036854775807),"
                 " (1, 'mark', 'late', 9223372036854775807, NULL);",
                 NULL, NULL, NULL);
    mt_event e[3] = {{1, 1000, 0x1000, (uint64_t)INT64_MAX, 1, 7, MT_KIND_MALLOC, 1},
                     {2, 2000, 0x2000, 0, 1, 7, MT_KIND_MALLOC, 1},
                     {3, 3000, 0x2000, 0, 0, 7, MT_KIND_FREE, 1}};
    uint8_t* scratch = malloc(mt_codec_bound(3));
    CHECK_EQ_I64(mt_capture_writer_chunk(w, MT_HEAP_LIBC, e, 3, scratch), 0);
    free(scratch);
    mt_capture_writer_commit(w);
    CHECK_EQ_I64(mt_capture_writer_finish(w, "complete"), 0);

    mt_capture* cap;
    CHECK_EQ_I64(mt_capture_open(db, &cap, err, sizeof err), 0);
    mr_plot_args a = {.input = db,
                      .output = test_tmppath("crafted.png"),
                      .data = test_tmppath("crafted.json"),
                      .force = true,
                      .top_sites = 1};
    CHECK_EQ_I64(mr_plot_native(cap, &a), 0);
    mt_capture_close(cap);
    json_error_t je;
    json_t* j = json_load_file(a.data, 0, &je);
    CHECK(j != NULL);
    json_t* series = json_object_get(j, "series");
    CHECK_EQ_I64(json_array_size(json_object_get(series, "rss")), 0);
    CHECK_EQ_I64(json_array_size(json_object_get(series, "vsz")), 0);
    json_t* site = json_array_get(json_object_get(j, "sites"), 0);
    CHECK_EQ_STR(json_string_value(json_object_get(site, "name")), "huge");
    CHECK_EQ_I64(json_integer_value(json_object_get(site, "peak_bytes")), INT64_MAX);
    json_t* held = json_object_get(site, "bytes");
    CHECK(json_array_size(held) > 0);
    CHECK_EQ_I64(json_integer_value(json_array_get(json_array_get(held, 0), 1)), INT64_MAX);
    json_t* share = json_object_get(site, "share_ppm");
    CHECK_EQ_I64(json_integer_value(json_array_get(json_array_get(share, 0), 1)), 1000000);
    CHECK_EQ_I64(json_array_size(json_object_get(j, "marks")), 2);
    json_decref(j);
    cairo_surface_t* img = cairo_image_surface_create_from_png(a.output);
    CHECK_EQ_I64(cairo_surface_status(img), CAIRO_STATUS_SUCCESS);
    cairo_surface_destroy(img);
}

// Heap against RSS at a given ratio: one block of `heap` bytes live from 100 ms to 900 ms,
// RSS rising from rss/2 to rss over 1 s. Returns the plot's --data JSON; the PNG is read
// back into *img.
static json_t* plot_ratio(const char* name, uint64_t heap, uint64_t rss, cairo_surface_t** img) {
    char db[64], png[64], data[64], err[256];
    snprintf(db, sizeof db, "%s.db", name);
    snprintf(png, sizeof png, "%s.png", name);
    snprintf(data, sizeof data, "%s.json", name);
    mt_capture_writer* w;
    CHECK_EQ_I64(mt_capture_writer_open(test_tmppath(db), &w, err, sizeof err), 0);
    mt_capture_writer_begin(w);
    mt_capture_writer_heap(w, MT_HEAP_LIBC, "libc", "libc", "ns");
    mt_capture_writer_meta_text(w, "symbolized", "1");
    mt_capture_writer_counter_track(w, MT_TRACK_RSS, MT_HEAP_LIBC, "rss", "bytes");
    sqlite3_exec(mt_capture_writer_db(w),
                 "INSERT INTO frame(id, mapping_id, pc, function, relevant) VALUES"
                 " (1, NULL, 4096, 'f', 1);"
                 "INSERT INTO callsite VALUES (1, 0, 1, 1);",
                 NULL, NULL, NULL);
    mt_event e[2] = {{1, 100000000, 0x1000, heap, 1, 7, MT_KIND_MALLOC, 1},
                     {2, 900000000, 0x1000, 0, 0, 7, MT_KIND_FREE, 1}};
    uint8_t* scratch = malloc(mt_codec_bound(2));
    CHECK_EQ_I64(mt_capture_writer_chunk(w, MT_HEAP_LIBC, e, 2, scratch), 0);
    free(scratch);
    for (int i = 0; i <= 100; i++)
        mt_capture_writer_counter(w, MT_TRACK_RSS, (int64_t)i * 10000000,
                                  (int64_t)(rss / 2 + rss / 2 * (uint64_t)i / 100));
    mt_capture_writer_commit(w);
    CHECK_EQ_I64(mt_capture_writer_finish(w, "complete"), 0);
    mt_capture* cap;
    CHECK_EQ_I64(mt_capture_open(test_tmppath(db), &cap, err, sizeof err), 0);
    mr_plot_args a = {
        .input = test_tmppath(db), .output = test_tmppath(png), .data = test_tmppath(data)};
    CHECK_EQ_I64(mr_plot_native(cap, &a), 0);
    mt_capture_close(cap);
    json_error_t je;
    json_t* j = json_load_file(a.data, 0, &je);
    CHECK(j != NULL);
    *img = cairo_image_surface_create_from_png(a.output);
    CHECK_EQ_I64(cairo_surface_status(*img), CAIRO_STATUS_SUCCESS);
    return j;
}

static bool is_colour(uint32_t px, int r, int g, int b) {
    return abs((int)((px >> 16) & 255) - r) + abs((int)((px >> 8) & 255) - g) +
               abs((int)(px & 255) - b) <=
           30;
}

// Pixels of colour (r, g, b) in columns [x0, x1).
static size_t count_colour_in(cairo_surface_t* img, int x0, int x1, int r, int g, int b) {
    int h = cairo_image_surface_get_height(img), stride = cairo_image_surface_get_stride(img);
    const unsigned char* data = cairo_image_surface_get_data(img);
    size_t n = 0;
    for (int y = 0; y < h; y++)
        for (int x = x0; x < x1; x++)
            n += is_colour(((const uint32_t*)(const void*)(data + (size_t)y * stride))[x], r, g, b);
    return n;
}

// Columns of the plot area where the heap line's top lies more than 3 px above the RSS
// line's top: the picture says "heap above RSS". (The legend's samples, heap above RSS,
// add a few dozen.)
static int columns_heap_above_rss(cairo_surface_t* img) {
    int h = cairo_image_surface_get_height(img), stride = cairo_image_surface_get_stride(img);
    const unsigned char* data = cairo_image_surface_get_data(img);
    int above = 0;
    for (int x = 100; x < 1500; x++) {
        int heap_top = -1, rss_top = -1;
        for (int y = 50; y < h - 75 && (heap_top < 0 || rss_top < 0); y++) {
            uint32_t px = ((const uint32_t*)(const void*)(data + (size_t)y * stride))[x];
            if (heap_top < 0 && is_colour(px, 0, 114, 178))
                heap_top = y;
            if (rss_top < 0 && is_colour(px, 255, 127, 14))
                rss_top = y;
        }
        above += heap_top >= 0 && rss_top >= 0 && heap_top < rss_top - 3;
    }
    return above;
}

// Heap and RSS share one axis unless their maxima differ by more than 20x; the axes are
// stated in --data and visible in the picture: the right axis's ticks and label are drawn
// in the heap's colour right of the plot area (x >= 1510).
static void test_axes(void) {
    struct {
        const char* name;
        uint64_t heap, rss;
        bool own;
    } cases[] = {{"third", 10000000, 30000000, false},
                 {"fifteenth", 2000000, 30000000, false},
                 {"twentieth", 1500000, 30000000, false},
                 {"hundredth", 300000, 30000000, true}};
    for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
        cairo_surface_t* img;
        json_t* j = plot_ratio(cases[k].name, cases[k].heap, cases[k].rss, &img);
        json_t* axes = json_object_get(j, "axes");
        CHECK_EQ_I64(json_array_size(axes), (cases[k].own ? 2 : 1));
        json_t* left = json_array_get(axes, 0);
        CHECK_EQ_STR(json_string_value(json_object_get(left, "side")), "left");
        json_t* ls = json_object_get(left, "series");
        bool heap_left = false;
        for (size_t i = 0; i < json_array_size(ls); i++)
            heap_left |= !strcmp(json_string_value(json_array_get(ls, i)), "heap");
        CHECK(heap_left == !cases[k].own);
        if (cases[k].own) {
            json_t* right = json_array_get(axes, 1);
            CHECK_EQ_STR(json_string_value(json_object_get(right, "side")), "right");
            CHECK_EQ_STR(json_string_value(json_array_get(json_object_get(right, "series"), 0)),
                         "heap");
            CHECK(count_colour_in(img, 1510, 1600, 0, 114, 178) > 100); // right axis drawn
        } else {
            CHECK_EQ_I64(count_colour_in(img, 1510, 1600, 0, 114, 178), 0); // no right axis
            CHECK(count_colour_in(img, 100, 1500, 0, 114, 178) > 300);      // the heap line
            int above = columns_heap_above_rss(img);
            if (above >= 100)
                fprintf(stderr, "%s: heap drawn above RSS in %d columns\n", cases[k].name, above);
            CHECK(above < 100);
        }
        cairo_surface_destroy(img);
        json_decref(j);
    }
}

// Rows of the image with a pixel that is not white, within columns x0..x1.
static bool row_inked(cairo_surface_t* img, int y, int x0, int x1) {
    int stride = cairo_image_surface_get_stride(img);
    const uint32_t* row =
        (const uint32_t*)(const void*)(cairo_image_surface_get_data(img) + (size_t)y * stride);
    for (int x = x0; x < x1; x++)
        if ((row[x] & 0xffffff) != 0xffffff)
            return true;
    return false;
}

// The legend goes above the plot, between the title and the frame, however many items and
// however long their names: it is drawn, the frame's top moves down by its height, and not
// one of its pixels lies inside the frame, where the data are.
static void test_legend_above(void) {
    static const char long_name[] = "std::vector<std::pair<std::string, std::map<int, "
                                    "std::string>>>::_M_realloc_insert<long long, char>(long)";
    for (size_t n = 1; n <= 12; n += 11) {
        cairo_surface_t* img = cairo_image_surface_create(CAIRO_FORMAT_RGB24, 1600, 600);
        cairo_t* cr = cairo_create(img);
        cairo_set_source_rgb(cr, 1, 1, 1);
        cairo_paint(cr);
        mr_legend_item items[12];
        for (size_t i = 0; i < n; i++)
            items[i] = (mr_legend_item){i % 2 ? long_name : "RSS",
                                        {0.1 * (double)i, 0.2, 0.6},
                                        i % 3 ? MR_MARK_LINE : MR_MARK_BAND};
        mr_frame f = {.x0 = 95, .y0 = 45, .x1 = 1510, .y1 = 530, .xmax = 1, .ymax = 1};
        mr_axes_style st = {.title = "title"};
        double top = mr_plot_draw_legend_make_room(cr, &f, &st, items, n);
        double h = mr_plot_draw_legend_rows_height(cr, items, n, f.x0, f.x1);
        CHECK(h > 0);
        CHECK(f.y0 >= 45 + h - 0.01 && top < 45 && st.title_bottom < top);
        CHECK(n == 1 ||
              h > 2 * mr_plot_draw_legend_rows_height(cr, items, 1, f.x0, f.x1)); // wrapped
        mr_plot_draw_legend_rows(cr, items, n, f.x0, f.x1, top);
        cairo_surface_flush(img);
        bool drawn = false, inside = false;
        for (int y = (int)top; y < (int)f.y0; y++)
            drawn |= row_inked(img, y, 0, 1600);
        for (int y = (int)f.y0 + 1; y < 600; y++)
            inside |= row_inked(img, y, 0, 1600);
        CHECK(drawn);
        CHECK(!inside);
        cairo_destroy(cr);
        cairo_surface_destroy(img);
    }
}

// A picture is PNG or SVG by its name: x.jpg is refused before anything is written.
static void test_picture_name(const char* capture) {
    CHECK_EQ_I64(mr_plot_check_output("x.png"), 0);
    CHECK_EQ_I64(mr_plot_check_output("x.SVG"), 0);
    CHECK(mr_plot_check_output("x.jpg") != 0);
    CHECK(mr_plot_check_output("png") != 0);
    mt_capture* cap;
    char err[256];
    CHECK_EQ_I64(mt_capture_open(capture, &cap, err, sizeof err), 0);
    mr_plot_args a = {.input = capture, .output = test_tmppath("picture.jpg")};
    CHECK(mr_plot_native(cap, &a) != 0);
    CHECK(access(test_tmppath("picture.jpg"), F_OK) != 0);
    mt_capture_close(cap);
}

int main(void) {
    build_capture(test_tmppath("native.db"));
    test_plot(test_tmppath("native.db"));
    test_crafted(test_tmppath("crafted.db"));
    test_axes();
    test_legend_above();
    test_picture_name(test_tmppath("native.db"));
    CHECK_DONE();
}
