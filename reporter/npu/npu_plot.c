// SPDX-License-Identifier: MIT
// The StaticAllocation heap plot of an NPU heap (docs/npu-memory-usage-log.md §2.7:
// upstream's figure, titles, colours and draw order; every § below is a section of that
// page) and its --data JSON (written by render/plot_data.h). It also reads an imported
// capture back through the capture API (counter tracks 3-5, fragmentation marks, region
// ranges) and hands those points to npu_series.c's series builder, which computes the
// series a log would give.
#include "messages.h"
#include "npu.h"
#include "output_file.h"
#include "plot.h"
#include "plot_data.h"
#include "plot_draw.h"

#include "memtrace/schema.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// Upstream's figure: 40 x 6 inches at 100 dpi.
#define WIDTH 4000
#define HEIGHT 600

static const mr_rgb BLUE = {0, 0, 1}, MAGENTA = {1, 0, 1}, RED = {1, 0, 0}, GREEN = {0, 0.5, 0},
                    GRAY = {0.5, 0.5, 0.5};

// ---- reading an imported capture

// What `memreport import` writes: steps in 0..MR_NPU_MAX_STEP and byte counts >= 0. Anything
// else is a crafted or damaged capture, refused with what is wrong (steps that large would
// overflow the timeline arithmetic).
static int check_point(int64_t ts, int64_t bytes, const char* what, char* err, size_t errlen) {
    if (ts < 0 || ts > MR_NPU_MAX_STEP)
        snprintf(err, errlen, "%s at step %lld: NPU steps must lie in 0..2^61", what,
                 (long long)ts);
    else if (bytes < 0)
        snprintf(err, errlen, "%s at step %lld holds a negative byte count (%lld)", what,
                 (long long)ts, (long long)bytes);
    else
        return 0;
    return -EPROTO;
}

static const char* track_name(int track) {
    return track == MT_TRACK_NPU_MAX_ALLOCATED ? "max-allocated counter"
           : track == MT_TRACK_NPU_USED        ? "used counter"
                                               : "free counter";
}

// Where the rows read go, and where a bad one is described.
typedef struct npu_read {
    mr_points *max, *used, *freep, *frag;
    mr_npu_region* regions;
    size_t nregions, capregions;
    char* err;
    size_t errlen;
} npu_read;

static int add_counter(void* ud, int track, int64_t ts, int64_t value) {
    npu_read* r = ud;
    mr_points* p = track == MT_TRACK_NPU_MAX_ALLOCATED ? r->max
                   : track == MT_TRACK_NPU_USED        ? r->used
                                                       : r->freep;
    int bad = check_point(ts, value, track_name(track), r->err, r->errlen);
    if (bad)
        return bad;
    return mr_series_points_push(p, ts, (uint64_t)value) ? -ENOMEM : 0;
}

static bool ts_sorted(const mr_points* p) {
    for (size_t i = 1; i < p->n; i++)
        if (p->v[i].x < p->v[i - 1].x)
            return false;
    return true;
}

// The three NPU tracks in timeline order. The importer writes them track by track in
// timeline order, so reading them as written takes one table scan without an index lookup
// per point (3x faster on a million steps); a capture written otherwise is read again
// track by track in time order.
static int read_counters(mt_capture* cap, npu_read* r) {
    int rc = mt_capture_counters_written(cap, MT_TRACK_NPU_MAX_ALLOCATED, MT_TRACK_NPU_FREE,
                                         add_counter, r);
    if (rc || (ts_sorted(r->max) && ts_sorted(r->used) && ts_sorted(r->freep)))
        return rc;
    r->max->n = r->used->n = r->freep->n = 0;
    static const int tracks[] = {MT_TRACK_NPU_MAX_ALLOCATED, MT_TRACK_NPU_USED, MT_TRACK_NPU_FREE};
    for (size_t i = 0; !rc && i < sizeof tracks / sizeof *tracks; i++)
        rc = mt_capture_counters(cap, tracks[i], add_counter, r);
    return rc;
}

static int add_frag(void* ud, const mt_mark_rec* m) {
    npu_read* r = ud;
    int64_t b = 0;
    int bad = mr_plot_data_attr_int(m->attrs, "bytes", &b);
    if (bad)
        snprintf(r->err, r->errlen, "fragmentation mark at step %lld has no \"bytes\" attribute",
                 (long long)m->ts_begin);
    else
        bad = check_point(m->ts_begin, b, "fragmentation mark", r->err, r->errlen);
    if (!bad)
        bad = mr_series_points_push(r->frag, m->ts_begin, (uint64_t)b);
    return bad;
}

static int add_region(void* ud, const mt_mark_rec* m) {
    npu_read* r = ud;
    int bad = check_point(m->ts_begin, 0, "function region", r->err, r->errlen);
    if (bad)
        return bad;
    if (r->nregions == r->capregions) {
        size_t nc = r->capregions ? r->capregions * 2 : 16;
        mr_npu_region* nr = realloc(r->regions, nc * sizeof *nr);
        if (!nr)
            return -ENOMEM;
        r->regions = nr;
        r->capregions = nc;
    }
    mr_npu_region* reg = &r->regions[r->nregions];
    memset(reg, 0, sizeof *reg);
    reg->start = m->ts_begin;
    if (!(reg->name = strdup(m->name ? m->name : "")))
        return -ENOMEM;
    r->nregions++;
    return 0;
}

static int read_marks(mt_capture* cap, npu_read* r) {
    mt_mark_query frag = {.heap = MT_HEAP_NPU, .kind = MR_NPU_MARK_FRAGMENTATION};
    mt_mark_query regions = {.heap = MT_HEAP_NPU, .kind = "range", .by_time = true};
    int rc = mt_capture_marks(cap, &frag, add_frag, r);
    return rc ? rc : mt_capture_marks(cap, &regions, add_region, r);
}

int mr_npu_series_from_capture(mt_capture* cap, mr_npu_series* s, char* err, size_t errlen) {
    char* format = mt_capture_meta_text(cap, "format");
    bool legacy = format && strcmp(format, "npu-log-legacy") == 0;
    free(format);
    mr_points max = {0}, frag = {0}, used = {0}, freep = {0};
    npu_read r = {&max, &used, &freep, &frag, NULL, 0, 0, err, errlen};
    err[0] = '\0';
    int rc = read_counters(cap, &r);
    if (!rc)
        rc = read_marks(cap, &r);
    if (!rc && max.n == 0) {
        snprintf(err, errlen, "not a usable NPU capture (no max-allocated counter points)");
        rc = -EPROTO;
    }
    if (!rc)
        rc = mr_npu_series_build(s, legacy, &max, &frag, &used, &freep, &r.regions, &r.nregions);
    if (rc && !err[0])
        snprintf(err, errlen, "%s",
                 rc == -ENOMEM
                     ? "out of memory"
                     : "not a usable NPU capture (its counter or mark rows are unreadable)");
    mr_series_points_free(&max);
    mr_series_points_free(&frag);
    mr_series_points_free(&used);
    mr_series_points_free(&freep);
    for (size_t i = 0; i < r.nregions; i++)
        free(r.regions[i].name);
    free(r.regions);
    return rc;
}

// ---- --data JSON (render/plot_data.h)

// Returns 0 or -ENOMEM.
static int write_data(FILE* fp, const mr_npu_series* s) {
    mr_plot_data_region* regions = malloc((s->nregions ? s->nregions : 1) * sizeof *regions);
    if (!regions)
        return -ENOMEM;
    for (size_t i = 0; i < s->nregions; i++)
        regions[i] = (mr_plot_data_region){.name = s->regions[i].name,
                                           .start = s->regions[i].start,
                                           .label_drawn = s->regions[i].label_drawn};
    const mr_plot_data_series series[] = {{"max_allocated", &s->max},
                                          {"max_increased", &s->increased},
                                          {"max_increased_fragmentation", &s->frag},
                                          {"used", &s->used},
                                          {"free", &s->free}};
    mr_plot_data d = {.unit = s->unit.name,
                      .scale = s->unit.scale,
                      .total_steps = s->total_steps,
                      .regions = regions,
                      .nregions = s->nregions,
                      .series = series,
                      .nseries = sizeof series / sizeof *series};
    mr_plot_data_write(fp, &d);
    free(regions);
    return 0;
}

// ---- the picture

static double scaled(const mr_npu_series* s, uint64_t bytes) {
    return (double)bytes / (double)s->unit.scale; // §2.6: exact for values < 2^53
}

static void line_series(mr_polyline* pl, cairo_t* cr, const mr_frame* f, const mr_npu_series* s,
                        const mr_points* p, mr_rgb color) {
    mr_plot_draw_polyline_begin(pl, cr, f);
    for (size_t i = 0; i < p->n; i++)
        mr_plot_draw_polyline_add(pl, (double)p->v[i].x, scaled(s, p->v[i].y));
    mr_plot_draw_polyline_stroke(pl, color, MR_PT(1.5), 0);
}

// Markers, one per distinct pixel (a million identical circles draw as one); their device
// positions are appended to pts for the legend placement.
static void marker_series(cairo_t* cr, const mr_frame* f, const mr_npu_series* s,
                          const mr_points* p, int shape, mr_rgb color, double** pts, size_t* npts,
                          size_t* cap) {
    long lx = -1, ly = -1;
    for (size_t i = 0; i < p->n; i++) {
        double x = mr_plot_draw_frame_x(f, (double)p->v[i].x),
               y = mr_plot_draw_frame_y(f, scaled(s, p->v[i].y));
        if (lround(x) == lx && lround(y) == ly)
            continue;
        lx = lround(x);
        ly = lround(y);
        mr_plot_draw_marker(cr, shape, x, y, MR_PT(5), color);
        if (*npts + 2 > *cap) {
            size_t nc = *cap ? *cap * 2 : 256;
            double* np = realloc(*pts, nc * sizeof *np);
            if (!np)
                continue;
            *pts = np;
            *cap = nc;
        }
        (*pts)[(*npts)++] = x;
        (*pts)[(*npts)++] = y;
    }
}

// Region boundaries: always the line (one per pixel column); names are drawn later.
static void draw_region_lines(cairo_t* cr, const mr_frame* f, const mr_npu_series* s) {
    long lastcol = LONG_MIN;
    for (size_t i = 0; i < s->nregions; i++) {
        double x = mr_plot_draw_frame_x(f, (double)s->regions[i].start);
        if (lround(x) == lastcol)
            continue;
        lastcol = lround(x);
        cairo_save(cr);
        cairo_set_source_rgb(cr, GRAY.r, GRAY.g, GRAY.b);
        cairo_set_line_width(cr, MR_PT(0.5));
        double d[2] = {MR_PT(0.5), MR_PT(0.825)};
        cairo_set_dash(cr, d, 2, 0);
        cairo_move_to(cr, x, f->y0);
        cairo_line_to(cr, x, f->y1);
        cairo_stroke(cr);
        cairo_restore(cr);
    }
}

// The legend, placed to avoid the drawn vertices of the three lines and the markers (pts);
// frees the lines and pts.
static void draw_legend(cairo_t* cr, const mr_frame* f, const mr_npu_series* s,
                        mr_polyline* lines[3], double* pts, size_t npts, size_t cap) {
    for (size_t k = 0; k < 3; k++) {
        for (size_t i = 0; i + 1 < lines[k]->npts; i += 2) {
            if (npts + 2 > cap) {
                size_t nc = cap ? cap * 2 : 256;
                double* np = realloc(pts, nc * sizeof *np);
                if (!np)
                    break;
                pts = np;
                cap = nc;
            }
            pts[npts++] = lines[k]->pts[i];
            pts[npts++] = lines[k]->pts[i + 1];
        }
        mr_plot_draw_polyline_free(lines[k]);
    }
    mr_legend_item items[5];
    size_t n = 0;
    if (s->increased.n)
        items[n++] = (mr_legend_item){"Max Allocated Size\nIncreased", MAGENTA, MR_MARK_CIRCLE};
    if (s->frag.n)
        items[n++] = (mr_legend_item){"Max Allocated Size\nIncreased Due To\nFragmentation", RED,
                                      MR_MARK_TRIANGLE};
    items[n++] = (mr_legend_item){"Max Allocated Size", BLUE, MR_MARK_LINE};
    // Upstream labels the used and free lines even when they have no points.
    items[n++] = (mr_legend_item){"Used Memory", RED, MR_MARK_LINE};
    items[n++] = (mr_legend_item){"Free Memory", GREEN, MR_MARK_LINE};
    mr_plot_draw_legend(cr, f, items, n, pts, npts);
    free(pts);
}

static void draw(cairo_t* cr, const mr_npu_series* s) {
    double ymax = 0;
    const mr_points* all[] = {&s->max, &s->used, &s->free};
    for (size_t k = 0; k < 3; k++)
        for (size_t i = 0; i < all[k]->n; i++)
            if (scaled(s, all[k]->v[i].y) > ymax)
                ymax = scaled(s, all[k]->v[i].y);
    double y_max = scaled(s, s->peak);
    double xlast = (double)s->total_steps - 1; // in double: any int64 is safe
    mr_frame f = {.x0 = 95,
                  .y0 = 40,
                  .x1 = WIDTH - 25,
                  .y1 = HEIGHT - 105,
                  .xmin = 0,
                  .xmax = xlast > 0 ? xlast * 1.05 : 1,
                  .ymin = 0,
                  .ymax = ymax > 0 ? ymax * 1.05 : 1};
    char ylabel[64];
    snprintf(ylabel, sizeof ylabel, "Memory Size [%s]", s->unit.name);
    mr_axes_style st = {.title = "Memory Usage Over Time",
                        .xlabel = "Allocation Step [async op]",
                        .ylabel = ylabel,
                        .xrotation = 45,
                        .xinteger = true,
                        .max_xticks = 40,
                        .max_yticks = 10};
    cairo_save(cr);
    cairo_rectangle(cr, f.x0, f.y0, f.x1 - f.x0, f.y1 - f.y0);
    cairo_clip(cr);
    // z-order 0: used and free; 1: max; 2: increases; 3: fragmentation (§2.7).
    mr_polyline used, freel, max;
    line_series(&used, cr, &f, s, &s->used, RED);
    line_series(&freel, cr, &f, s, &s->free, GREEN);
    draw_region_lines(cr, &f, s);
    line_series(&max, cr, &f, s, &s->max, BLUE);
    double* pts = NULL;
    size_t npts = 0, cap = 0;
    marker_series(cr, &f, s, &s->increased, MR_MARK_CIRCLE, MAGENTA, &pts, &npts, &cap);
    marker_series(cr, &f, s, &s->frag, MR_MARK_TRIANGLE, RED, &pts, &npts, &cap);
    for (size_t i = 0; i < s->nregions; i++)
        if (s->regions[i].label_drawn)
            mr_plot_draw_text(
                cr, s->regions[i].name, mr_plot_draw_frame_x(&f, (double)s->regions[i].start + 0.5),
                mr_plot_draw_frame_y(&f, 0.98 * y_max), MR_PT(11), 90, 0, 0, GRAY, NULL, NULL);
    if (s->max.n) {
        const mr_point* last = &s->max.v[s->max.n - 1];
        char buf[64];
        snprintf(buf, sizeof buf, "%.2f", scaled(s, last->y));
        mr_plot_draw_text_baseline(cr, buf, mr_plot_draw_frame_x(&f, (double)last->x) + MR_PT(5),
                                   mr_plot_draw_frame_y(&f, scaled(s, last->y)) - MR_PT(5),
                                   MR_PT(8), BLUE);
    }
    cairo_restore(cr);
    mr_plot_draw_axes(cr, &f, &st);
    mr_polyline* lines[] = {&used, &freel, &max};
    draw_legend(cr, &f, s, lines, pts, npts, cap);
}

int mr_npu_plot(const mr_npu_series* s, const mr_plot_args* args) {
    mr_output_file data = {0};
    int rc = 0;
    if (args->data) {
        if ((rc = mr_output_file_open(&data, args->data, args->force)))
            return rc;
        if (write_data(data.fp, s)) {
            mr_output_file_abort(&data);
            mr_messages_error(args->data, "out of memory");
            return MR_EXIT_IO;
        }
    }
    mr_canvas c;
    if ((rc = mr_plot_draw_canvas_open(&c, args->output, args->force, WIDTH, HEIGHT))) {
        if (args->data)
            mr_output_file_abort(&data);
        return rc;
    }
    draw(c.cr, s);
    rc = mr_plot_draw_canvas_commit(&c);
    if (args->data) {
        if (rc)
            mr_output_file_abort(&data);
        else
            rc = mr_output_file_commit(&data);
    }
    return rc;
}

// ---- the plot command's NPU half (plot.c dispatches here)

// Site rows are a native-heap view: an NPU heap has one frame per function and no stacks.
static int refuse_sites(const mr_plot_args* a) {
    if (!a->top_sites && !a->nsites)
        return 0;
    mr_messages_error(a->input, "--sites and --site apply to native captures, not to NPU logs");
    return MR_EXIT_USAGE;
}

int mr_plot_npu_log(const mr_plot_args* a) {
    if (refuse_sites(a))
        return MR_EXIT_USAGE;
    char err[512];
    mr_npu_log log;
    int rc = mr_npu_parse_file(a->input, false, &log, err, sizeof err);
    if (rc) {
        mr_messages_error(a->input, "%s", err);
        return mr_npu_exit_code(rc);
    }
    mr_npu_series s;
    rc = mr_npu_series_build(&s, log.legacy, &log.max_raw, &log.frag, &log.used, &log.free,
                             &log.regions, &log.nregions);
    mr_npu_log_free(&log);
    if (rc) {
        mr_messages_error(a->input, "out of memory");
        mr_npu_series_free(&s);
        return MR_EXIT_IO;
    }
    rc = mr_npu_plot(&s, a);
    mr_npu_series_free(&s);
    return rc;
}

int mr_plot_npu_capture(mt_capture* cap, const mr_plot_args* a) {
    char err[256];
    mr_npu_series s;
    int rc = refuse_sites(a);
    if (rc)
        return rc;
    if (mr_npu_series_from_capture(cap, &s, err, sizeof err)) {
        mr_messages_error(a->input, "%s", err);
        return MR_EXIT_BAD_INPUT;
    }
    rc = mr_npu_plot(&s, a);
    mr_npu_series_free(&s);
    return rc;
}
