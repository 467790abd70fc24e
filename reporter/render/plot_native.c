// SPDX-License-Identifier: MIT
// memreport plot for native captures: draws the timeline of model/heap_timeline.h (live
// heap, RSS, VSZ, marks and ranges, the peak, optional rows per call site) with
// plot_draw.h, and writes it as JSON for --data.
#include "cxx_names.h"
#include "heap_timeline.h"
#include "json.h"
#include "messages.h"
#include "plot.h"
#include "plot_draw.h"
#include "plot_time.h"

#include "memtrace/schema.h"
#include "memtrace/units.h"

#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define WIDTH 1600
#define MAIN_HEIGHT 600
#define ROW_HEIGHT 300
#define LEFT 95
#define RIGHT 90                       // room for the heap's own axis when it needs one
#define BUCKETS (WIDTH - LEFT - RIGHT) // one per pixel column of the plot area
// A site's name as its legend shows it (--data's short_name, cut; the legend cuts it shorter).
#define SITE_LABEL_MAX 512

static const mr_rgb PEAK = {0.84, 0.15, 0.16}, MARK = {0.4, 0.4, 0.4}, RANGE = {0.58, 0.40, 0.74};
// The series' colours (plot_draw.h): the live heap, RSS and VSZ, then the sites, each of its
// own (a site's line never in the live heap's colour).
enum { HEAP_SERIES, RSS_SERIES, VSZ_SERIES, FIRST_SITE_SERIES };
static mr_rgb site_colour(size_t k) {
    return mr_plot_draw_series_colour(FIRST_SITE_SERIES + k);
}

// ---- output

typedef struct time_unit {
    const char* name;
    double scale; // ns per unit
} time_unit;

static time_unit time_unit_for(int64_t ns) {
    if (ns >= 10000000000LL)
        return (time_unit){"s", 1e9};
    if (ns >= 10000000LL)
        return (time_unit){"ms", 1e6};
    if (ns >= 10000LL)
        return (time_unit){"us", 1e3};
    return (time_unit){"ns", 1};
}

// JSON integers are int64: a byte count beyond that (only a crafted capture has one) is
// written saturated, never wrapped to a negative number.
static json_int_t json_bytes(uint64_t v) {
    return v > (uint64_t)INT64_MAX ? INT64_MAX : (json_int_t)v;
}

static json_t* points_json(const mr_points* p) {
    json_t* a = json_array();
    for (size_t i = 0; i < p->n; i++)
        json_array_append_new(a, json_pack("[I,I]", (json_int_t)p->v[i].x, json_bytes(p->v[i].y)));
    return a;
}

const char* mr_plot_time_unit(int64_t ns, double* scale) {
    time_unit u = time_unit_for(ns);
    *scale = u.scale;
    return u.name;
}

json_t* mr_plot_time_points_json(const mr_points* p) {
    return points_json(p);
}

static json_t* axes_json(const mr_heap_timeline* nv, mt_byte_unit unit);

static int write_data(const mr_heap_timeline* nv, const mr_plot_args* args, mt_byte_unit unit,
                      time_unit tu) {
    const mr_timeline_mark* marks = nv->marks;
    size_t nmarks = nv->nmarks;
    json_t* o = json_object();
    json_object_set_new(o, "unit", json_string(unit.name));
    json_object_set_new(o, "scale", json_integer((json_int_t)unit.scale));
    json_object_set_new(o, "time_unit", json_string(tu.name));
    json_object_set_new(o, "time_scale_ns", json_integer((json_int_t)tu.scale));
    json_object_set_new(o, "duration_ns", json_integer(nv->duration));
    json_object_set_new(
        o, "peak",
        json_pack("{s:I,s:I}", "ts", (json_int_t)nv->peak_ts, "bytes", json_bytes(nv->peak)));
    json_t* series = json_object();
    json_object_set_new(series, "heap", points_json(&nv->heap));
    json_object_set_new(series, "rss", points_json(&nv->rss));
    json_object_set_new(series, "vsz", points_json(&nv->vsz));
    json_object_set_new(o, "series", series);
    json_object_set_new(o, "axes", axes_json(nv, unit));
    json_t* jm = json_array();
    for (size_t i = 0; i < nmarks; i++) {
        json_t* m = json_pack("{s:s,s:s,s:I}", "kind", marks[i].range ? "range" : "mark", "name",
                              marks[i].name, "begin", (json_int_t)marks[i].begin);
        if (marks[i].range)
            json_object_set_new(m, "end", json_integer(marks[i].end));
        json_array_append_new(jm, m);
    }
    json_object_set_new(o, "marks", jm);
    json_t* js = json_array();
    for (size_t k = 0; k < nv->nsites; k++) {
        const mr_site_series* s = &nv->sites[k];
        json_t* row = json_object();
        json_object_set_new(row, "name", mr_json_bytes(s->name));
        char* shortened = mr_cxx_names_display_dup(s->name);
        if (shortened && strcmp(shortened, s->name) != 0) // as the page's short_names: only these
            json_object_set_new(row, "short_name", mr_json_bytes(shortened));
        free(shortened);
        json_object_set_new(row, "peak_bytes", json_integer(json_bytes(s->peak)));
        json_object_set_new(row, "bytes", points_json(&s->bytes));
        json_object_set_new(row, "share_ppm", points_json(&s->share));
        json_array_append_new(js, row);
    }
    json_object_set_new(o, "sites", js);
    int rc = mr_json_write_compact(o, args->data, args->force);
    json_decref(o);
    return rc;
}

// `step`: the value holds until the next point (heap bytes change only at events; drawing
// a slope between two events would show memory that was never live). Samples (RSS, VSZ)
// are joined by straight lines.
static void stroke_points(cairo_t* cr, const mr_frame* f, const mr_points* p, double tscale,
                          double yscale, mr_rgb color, double dash, bool step, mr_polyline* keep) {
    mr_polyline pl;
    mr_plot_draw_polyline_begin(&pl, cr, f);
    for (size_t i = 0; i < p->n; i++) {
        double x = (double)p->v[i].x / tscale;
        if (step && i > 0)
            mr_plot_draw_polyline_add(&pl, x, (double)p->v[i - 1].y / yscale);
        mr_plot_draw_polyline_add(&pl, x, (double)p->v[i].y / yscale);
    }
    mr_plot_draw_polyline_stroke(&pl, color, MR_PT(1.5), dash);
    if (keep)
        *keep = pl;
    else
        mr_plot_draw_polyline_free(&pl);
}

static char* title_of(mt_capture* cap) {
    char* exe = mt_capture_meta_text(cap, "exe");
    int64_t pid = mt_capture_meta_int(cap, "pid", 0);
    const char* base = exe ? strrchr(exe, '/') : NULL;
    base = base ? base + 1 : exe ? exe : mt_capture_path(cap);
    char* t = NULL;
    // A sampled capture's heap line is an estimate (model/sampled.h): the title says so.
    char sampled[64] = "", interval[32];
    int64_t n = mt_capture_meta_int(cap, "sample_bytes", 0);
    if (n > 0)
        snprintf(sampled, sizeof sampled, " [sampled every %s: heap estimated]",
                 mt_units_format_bytes((uint64_t)n, interval, sizeof interval));
    if (asprintf(&t, "Memory over time: %s (pid %lld)%s%s", base, (long long)pid,
                 mt_capture_truncated(cap) ? " [capture truncated]" : "", sampled) < 0)
        t = NULL;
    free(exe);
    return t;
}

static uint64_t series_max(const mr_points* p) {
    uint64_t m = 0;
    for (size_t i = 0; i < p->n; i++)
        m = p->v[i].y > m ? p->v[i].y : m;
    return m;
}

// The top of the memory axis: heap and RSS, and VSZ unless it is over twice that.
static uint64_t axis_max(const mr_heap_timeline* nv) {
    uint64_t m = nv->peak, r = series_max(&nv->rss), v = series_max(&nv->vsz);
    m = r > m ? r : m;
    bool near = v <= m || v - m <= m; // v <= 2 * m, which could wrap
    return near || m == 0 ? (v > m ? v : m) : m;
}

// Heap and RSS share the left axis unless their maxima differ by more than this factor.
// Two scales for series of similar size let the heap line cross RSS, which reads as "heap
// above RSS"; only a heap so small that it would be a flat line at the bottom gets its own
// scale on the right axis. Without RSS the heap is compared with the whole axis.
#define HEAP_OWN_AXIS_RATIO 20

static bool heap_own_axis(const mr_heap_timeline* nv) {
    uint64_t ref = series_max(&nv->rss);
    if (!ref)
        ref = axis_max(nv);
    return nv->peak > 0 && nv->peak <= (ref - 1) / HEAP_OWN_AXIS_RATIO; // 20 * peak < ref
}

// The axes as drawn, for --data: each side's unit and the series scaled to it.
static json_t* axes_json(const mr_heap_timeline* nv, mt_byte_unit unit) {
    bool own = heap_own_axis(nv);
    json_t* left = json_pack("{s:s,s:s,s:[]}", "side", "left", "unit", unit.name, "series");
    json_t* ls = json_object_get(left, "series");
    if (!own)
        json_array_append_new(ls, json_string("heap"));
    if (nv->rss.n)
        json_array_append_new(ls, json_string("rss"));
    if (nv->vsz.n)
        json_array_append_new(ls, json_string("vsz"));
    json_t* axes = json_array();
    json_array_append_new(axes, left);
    if (own)
        json_array_append_new(axes, json_pack("{s:s,s:s,s:[s]}", "side", "right", "unit",
                                              mt_units_for_bytes(nv->peak).name, "series", "heap"));
    return axes;
}

static void draw_marks(cairo_t* cr, const mr_frame* f, const mr_timeline_mark* marks, size_t n,
                       double tscale, bool labels) {
    double last_label = -1e9;
    for (size_t i = 0; i < n; i++) {
        double x0 = mr_plot_draw_frame_x(f, (double)marks[i].begin / tscale);
        if (marks[i].range) {
            double x1 = mr_plot_draw_frame_x(f, (double)marks[i].end / tscale);
            cairo_save(cr);
            cairo_set_source_rgba(cr, RANGE.r, RANGE.g, RANGE.b, 0.12);
            cairo_rectangle(cr, x0, f->y0, fmax(x1 - x0, 1), f->y1 - f->y0);
            cairo_fill(cr);
            cairo_restore(cr);
        } else {
            cairo_save(cr);
            cairo_set_source_rgb(cr, MARK.r, MARK.g, MARK.b);
            cairo_set_line_width(cr, 1);
            double d[2] = {2, 3};
            cairo_set_dash(cr, d, 2, 0);
            cairo_move_to(cr, x0, f->y0);
            cairo_line_to(cr, x0, f->y1);
            cairo_stroke(cr);
            cairo_restore(cr);
        }
        // Names rotated along the line; one skipped when it would overlap the previous.
        if (labels && x0 - last_label >= MR_PT(12)) {
            mr_plot_draw_text(cr, marks[i].name, x0 + 3, f->y0 + 4, MR_PT(9), 90, 0, 0,
                              marks[i].range ? RANGE : MARK, NULL, NULL);
            last_label = x0;
        }
    }
}

// The peak: a dot at (px, py) and its value and time, kept inside the plot.
static void draw_peak(cairo_t* cr, const mr_frame* f, const mr_heap_timeline* nv, double px,
                      double py) {
    mr_plot_draw_marker(cr, MR_MARK_CIRCLE, px, py, MR_PT(6), PEAK);
    char b1[32], b2[32], label[96];
    snprintf(label, sizeof label, "peak %s at %s", mt_units_format_bytes(nv->peak, b1, sizeof b1),
             mt_units_format_duration(nv->peak_ts, b2, sizeof b2));
    double ha = px > (f->x0 + f->x1) / 2 ? 1 : 0;
    mr_plot_draw_text(cr, label, px + (ha ? -8 : 8), fmax(py - 6, f->y0 + 2), MR_PT(9), 0, ha,
                      py - 6 < f->y0 + 20 ? 0 : 1, PEAK, NULL, NULL);
}

// The main plot: heap, RSS, VSZ, marks, the peak, the legend. Returns its frame.
static mr_frame draw_main(const mr_heap_timeline* nv, mt_capture* cap, cairo_t* cr,
                          mt_byte_unit unit, time_unit tu) {
    const mr_timeline_mark* marks = nv->marks;
    mr_rgb heap_c = mr_plot_draw_series_colour(HEAP_SERIES),
           rss_c = mr_plot_draw_series_colour(RSS_SERIES),
           vsz_c = mr_plot_draw_series_colour(VSZ_SERIES);
    size_t nmarks = nv->nmarks;
    uint64_t ymax = axis_max(nv), vmax = series_max(&nv->vsz);
    bool own = heap_own_axis(nv); // then its scale is on the right axis, in its colour
    mt_byte_unit hu = own ? mt_units_for_bytes(nv->peak) : unit;
    double hs = (double)hu.scale, hmax = own ? (double)nv->peak / hs * 1.08 : 0;
    double ys = (double)unit.scale, xmax = (double)nv->duration / tu.scale;
    mr_frame f = {.x0 = LEFT,
                  .y0 = 45,
                  .x1 = WIDTH - RIGHT,
                  .y1 = MAIN_HEIGHT - 70,
                  .xmin = 0,
                  .xmax = xmax > 0 ? xmax : 1,
                  .ymin = 0,
                  .ymax = ymax ? (double)ymax / ys * 1.08 : 1};
    char* title = title_of(cap);
    char xlabel[32], ylabel[32];
    snprintf(xlabel, sizeof xlabel, "Time [%s]", tu.name);
    snprintf(ylabel, sizeof ylabel, "Memory [%s]", unit.name);
    mr_axes_style st = {
        .title = title, .xlabel = xlabel, .ylabel = ylabel, .max_xticks = 16, .max_yticks = 8};
    mr_legend_item items[4];
    size_t n = 0;
    items[n++] = (mr_legend_item){own ? "live heap (requested bytes, right axis)"
                                      : "live heap (requested bytes)",
                                  heap_c, MR_MARK_LINE};
    if (nv->rss.n)
        items[n++] = (mr_legend_item){own ? "RSS (left axis)" : "RSS", rss_c, MR_MARK_LINE};
    char vl[64], vb[32];
    // VSZ (libraries, reserved arenas, thread stacks) often dwarfs the heap; then the axis
    // is scaled to the heap and RSS and the legend says how far VSZ goes.
    if (vmax > ymax)
        snprintf(vl, sizeof vl, "VSZ (off scale, up to %s)",
                 mt_units_format_bytes(vmax, vb, sizeof vb));
    if (nv->vsz.n)
        items[n++] = (mr_legend_item){vmax > ymax ? vl : "VSZ", vsz_c, MR_MARK_LINE};
    items[n++] = (mr_legend_item){"peak", PEAK, MR_MARK_CIRCLE};
    // Above the plot, where it covers no data.
    double legend_top = mr_plot_draw_legend_make_room(cr, &f, &st, items, n);
    cairo_save(cr);
    cairo_rectangle(cr, f.x0, f.y0, f.x1 - f.x0, f.y1 - f.y0);
    cairo_clip(cr);
    draw_marks(cr, &f, marks, nmarks, tu.scale, true);
    mr_polyline lv, lr, lh;
    stroke_points(cr, &f, &nv->vsz, tu.scale, ys, vsz_c, MR_PT(3), false, &lv);
    stroke_points(cr, &f, &nv->rss, tu.scale, ys, rss_c, 0, false, &lr);
    mr_frame hf = f; // the heap's frame: the same box, maybe its own scale
    if (own)
        hf.ymax = hmax;
    stroke_points(cr, &hf, &nv->heap, tu.scale, own ? hs : ys, heap_c, 0, true, &lh);
    double px = mr_plot_draw_frame_x(&f, (double)nv->peak_ts / tu.scale);
    double py = mr_plot_draw_frame_y(&hf, (double)nv->peak / (own ? hs : ys));
    draw_peak(cr, &f, nv, px, py);
    cairo_restore(cr);
    mr_plot_draw_axes(cr, &f, &st);
    char hl[48];
    snprintf(hl, sizeof hl, "live heap, own scale [%s]", hu.name);
    if (own)
        mr_plot_draw_right_axis(cr, &f, hmax, 8, hl, heap_c);
    mr_plot_draw_legend_rows(cr, items, n, f.x0, f.x1, legend_top);
    mr_plot_draw_polyline_free(&lv);
    mr_plot_draw_polyline_free(&lr);
    mr_plot_draw_polyline_free(&lh);
    free(title);
    return f;
}

// The rows under it: bytes held per site, then each site's share of the live heap.
static void draw_site_rows(const mr_heap_timeline* nv, cairo_t* cr, double xmax, time_unit tu) {
    const mr_timeline_mark* marks = nv->marks;
    size_t nmarks = nv->nmarks;
    char xlabel[32];
    snprintf(xlabel, sizeof xlabel, "Time [%s]", tu.name);
    uint64_t smax = 0;
    for (size_t k = 0; k < nv->nsites; k++)
        if (nv->sites[k].peak > smax)
            smax = nv->sites[k].peak;
    mt_byte_unit su = mt_units_for_bytes(smax);
    char sl[32];
    snprintf(sl, sizeof sl, "Held by site [%s]", su.name);
    for (int row = 0; row < 2; row++) {
        double top = MAIN_HEIGHT + row * ROW_HEIGHT;
        mr_frame g = {.x0 = LEFT,
                      .y0 = top + 30,
                      .x1 = WIDTH - RIGHT,
                      .y1 = top + ROW_HEIGHT - 70,
                      .xmin = 0,
                      .xmax = xmax,
                      .ymin = 0,
                      .ymax = row == 0 ? (smax ? (double)smax / (double)su.scale * 1.08 : 1) : 100};
        mr_axes_style rs = {.title = row == 0 ? "Bytes held by call site"
                                              : "Share of the live heap by call site",
                            .xlabel = xlabel,
                            .ylabel = row == 0 ? sl : "Share [%]",
                            .max_xticks = 16,
                            .max_yticks = 5};
        mr_legend_item it[10];
        char shown[10][SITE_LABEL_MAX];
        size_t ni = 0;
        for (size_t k = 0; k < nv->nsites && ni < 10; k++, ni++)
            it[ni] = (mr_legend_item){
                mr_cxx_names_display(nv->sites[k].name, shown[ni], sizeof shown[ni]),
                site_colour(k), MR_MARK_LINE};
        double legend_top = mr_plot_draw_legend_make_room(cr, &g, &rs, it, ni);
        cairo_save(cr);
        cairo_rectangle(cr, g.x0, g.y0, g.x1 - g.x0, g.y1 - g.y0);
        cairo_clip(cr);
        draw_marks(cr, &g, marks, nmarks, tu.scale, false);
        for (size_t k = 0; k < nv->nsites; k++) {
            const mr_site_series* s = &nv->sites[k];
            mr_polyline pl;
            stroke_points(cr, &g, row == 0 ? &s->bytes : &s->share, tu.scale,
                          row == 0 ? (double)su.scale : 1e4, site_colour(k), 0, true, &pl);
            mr_plot_draw_polyline_free(&pl);
        }
        cairo_restore(cr);
        mr_plot_draw_axes(cr, &g, &rs);
        mr_plot_draw_legend_rows(cr, it, ni, g.x0, g.x1, legend_top);
    }
}

static void draw(const mr_heap_timeline* nv, mt_capture* cap, cairo_t* cr, mt_byte_unit unit,
                 time_unit tu) {
    mr_frame f = draw_main(nv, cap, cr, unit, tu);
    if (nv->nsites)
        draw_site_rows(nv, cr, f.xmax, tu);
}

int mr_plot_native(mt_capture* cap, const mr_plot_args* args) {
    mr_timeline_opts o = {.buckets = BUCKETS,
                          .top_sites = args->top_sites,
                          .sites = args->sites,
                          .nsites = args->nsites};
    mr_heap_timeline t;
    char msg[1024];
    int rc = mr_heap_timeline_build(cap, &o, &t, msg, sizeof msg);
    if (msg[0])
        mr_messages_error(mt_capture_path(cap), "%s", msg);
    if (rc)
        return mr_messages_exit_code(rc);
    mt_byte_unit unit = mt_units_for_bytes(axis_max(&t));
    time_unit tu = time_unit_for(t.duration);
    int height = MAIN_HEIGHT + (t.nsites ? 2 * ROW_HEIGHT : 0);
    mr_canvas c;
    if (args->data)
        rc = write_data(&t, args, unit, tu);
    if (!rc && !(rc = mr_plot_draw_canvas_open(&c, args->output, args->force, WIDTH, height))) {
        draw(&t, cap, c.cr, unit, tu);
        rc = mr_plot_draw_canvas_commit(&c);
    }
    mr_heap_timeline_free(&t);
    return rc;
}
