// SPDX-License-Identifier: MIT
// memreport plot of a process tree (plot_procs.h): builds the common timeline
// (procs_timeline.h) and draws the stacked bands with plot_draw.h.
#include "plot_procs.h"

#include "json.h"
#include "messages.h"
#include "plot_draw.h"
#include "plot_time.h"
#include "procs_report.h"
#include "procs_timeline.h"

#include "memtrace/schema.h"
#include "memtrace/units.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define WIDTH 1600
#define HEIGHT 600
#define LEFT 95
#define RIGHT 90
#define BUCKETS (WIDTH - LEFT - RIGHT) // one per pixel column of the plot area
#define MAX_LEGEND 16                  // processes named in the legend at most

static const mr_rgb PEAK = {0.84, 0.15, 0.16}, MORE = {0.6, 0.6, 0.6};

static json_int_t json_bytes(uint64_t v) {
    return v > (uint64_t)INT64_MAX ? INT64_MAX : (json_int_t)v;
}

// The stack's top over time, as a series. The processes' series are sampled, so the exact
// peak of their sum (found from their events) may fall between the sample times: it is one
// of the series' points, at its time, so that the series holds the peak it reports.
static int total_points(const mr_procs_timeline* t, mr_points* out) {
    *out = (mr_points){0};
    bool peak_placed = false;
    for (size_t k = 0; k < t->ntimes; k++) {
        uint64_t sum = 0;
        for (size_t i = 0; i < t->n; i++)
            sum += t->values[k * t->n + i];
        if (!peak_placed && t->total_peak_ts <= t->times[k]) {
            peak_placed = true;
            if (t->total_peak_ts < t->times[k] &&
                mr_series_points_push(out, t->total_peak_ts, t->total_peak))
                return -1;
            if (t->total_peak_ts == t->times[k] && t->total_peak > sum)
                sum = t->total_peak;
        }
        if (mr_series_points_push(out, t->times[k], sum))
            return -1;
    }
    if (!peak_placed && mr_series_points_push(out, t->total_peak_ts, t->total_peak))
        return -1;
    return 0;
}

static int write_data(const mr_procs_timeline* t, char* const* labels, char* const* legend,
                      const mr_plot_args* a, mt_byte_unit unit) {
    double tscale;
    const char* tname = mr_plot_time_unit(t->duration, &tscale);
    mr_points total;
    if (total_points(t, &total)) {
        mr_series_points_free(&total);
        mr_messages_error(a->input, "out of memory");
        return MR_EXIT_IO;
    }
    json_t* o =
        json_pack("{s:s,s:I,s:s,s:I,s:I,s:I}", "unit", unit.name, "scale", (json_int_t)unit.scale,
                  "time_unit", tname, "time_scale_ns", (json_int_t)tscale, "origin_realtime_ns",
                  (json_int_t)t->origin_ns, "duration_ns", (json_int_t)t->duration);
    json_object_set_new(o, "total_peak",
                        json_pack("{s:I,s:I}", "ts", (json_int_t)t->total_peak_ts, "bytes",
                                  json_bytes(t->total_peak)));
    json_t* procs = json_array();
    for (size_t i = 0; i < t->n; i++) {
        const mr_proc_series* p = &t->procs[i];
        json_t* j = json_pack("{s:s,s:s,s:I,s:s,s:I,s:I}", "label", labels[i], "legend", legend[i],
                              "pid", (json_int_t)p->proc->pid, "capture", p->proc->name,
                              "offset_ns", (json_int_t)p->offset, "end_ns", (json_int_t)p->end);
        json_object_set_new(
            j, "peak",
            json_pack("{s:I,s:I}", "ts", (json_int_t)p->t.peak_ts, "bytes", json_bytes(p->t.peak)));
        json_object_set_new(j, "heap", mr_plot_time_points_json(&p->t.heap));
        json_array_append_new(procs, j);
    }
    json_object_set_new(o, "processes", procs);
    json_object_set_new(o, "total", mr_plot_time_points_json(&total));
    mr_series_points_free(&total);
    int rc = mr_json_write_compact(o, a->data, a->force);
    json_decref(o);
    return rc;
}

// Band i: between the stack below it (`below`, updated to its top) and its top, each value
// held until the next sample time. Its top edge's device points go to pts for the legend.
static void fill_band(cairo_t* cr, const mr_frame* f, const mr_procs_timeline* t, size_t i,
                      double tscale, double yscale, double* below, double* pts, mr_rgb c) {
    size_t nt = t->ntimes;
    cairo_new_path(cr);
    double prev = 0;
    cairo_move_to(cr, mr_plot_draw_frame_x(f, 0), mr_plot_draw_frame_y(f, 0));
    for (size_t k = 0; k < nt; k++) {
        double x = mr_plot_draw_frame_x(f, (double)t->times[k] / tscale);
        double top = below[k] + (double)t->values[k * t->n + i] / yscale;
        cairo_line_to(cr, x, mr_plot_draw_frame_y(f, prev));
        cairo_line_to(cr, x, mr_plot_draw_frame_y(f, top));
        pts[2 * k] = x;
        pts[2 * k + 1] = mr_plot_draw_frame_y(f, top);
        prev = top;
    }
    cairo_line_to(cr, mr_plot_draw_frame_x(f, f->xmax), mr_plot_draw_frame_y(f, prev));
    // Back along the band's floor, the same steps the band below drew.
    double floor_next = nt ? below[nt - 1] : 0;
    cairo_line_to(cr, mr_plot_draw_frame_x(f, f->xmax), mr_plot_draw_frame_y(f, floor_next));
    for (size_t k = nt; k-- > 0;) {
        double x = mr_plot_draw_frame_x(f, (double)t->times[k] / tscale);
        double floor_prev = k ? below[k - 1] : 0;
        cairo_line_to(cr, x, mr_plot_draw_frame_y(f, below[k]));
        cairo_line_to(cr, x, mr_plot_draw_frame_y(f, floor_prev));
    }
    cairo_close_path(cr);
    // Opaque: a band over white in its series' colour, as the legend's swatch shows it.
    cairo_set_source_rgb(cr, c.r, c.g, c.b);
    cairo_fill(cr);
    for (size_t k = 0; k < nt; k++)
        below[k] += (double)t->values[k * t->n + i] / yscale;
}

// labels[i]: what the legend calls process i.
static void draw(const mr_procs_timeline* t, char* const* labels, cairo_t* cr, mt_byte_unit unit) {
    double tscale, ys = (double)unit.scale;
    const char* tname = mr_plot_time_unit(t->duration, &tscale);
    double xmax = (double)t->duration / tscale;
    mr_frame f = {.x0 = LEFT,
                  .y0 = 45,
                  .x1 = WIDTH - RIGHT,
                  .y1 = HEIGHT - 70,
                  .xmin = 0,
                  .xmax = xmax > 0 ? xmax : 1,
                  .ymin = 0,
                  .ymax = t->total_peak ? (double)t->total_peak / ys * 1.08 : 1};
    char title[96], xlabel[48], ylabel[48];
    snprintf(title, sizeof title, "Live heap over time: %zu processes, stacked", t->n);
    snprintf(xlabel, sizeof xlabel, "Time since the first process started [%s]", tname);
    snprintf(ylabel, sizeof ylabel, "Live heap [%s]", unit.name);
    mr_axes_style st = {
        .title = title, .xlabel = xlabel, .ylabel = ylabel, .max_xticks = 16, .max_yticks = 8};
    mr_legend_item items[MAX_LEGEND + 2];
    char more[48];
    size_t n = 0;
    for (size_t i = 0; i < t->n && n < MAX_LEGEND; i++) {
        items[n] = (mr_legend_item){labels[i], mr_plot_draw_series_colour(i), MR_MARK_BAND};
        n++;
    }
    if (t->n > MAX_LEGEND) {
        snprintf(more, sizeof more, "and %zu more processes", t->n - MAX_LEGEND);
        items[n++] = (mr_legend_item){more, MORE, MR_MARK_NONE};
    }
    items[n++] = (mr_legend_item){"total peak", PEAK, MR_MARK_CIRCLE};
    // Above the plot, where it covers no band.
    double legend_top = mr_plot_draw_legend_make_room(cr, &f, &st, items, n);
    double* below = calloc(t->ntimes + 1, sizeof *below);
    double* pts = calloc(2 * t->ntimes + 2, sizeof *pts);
    cairo_save(cr);
    cairo_rectangle(cr, f.x0, f.y0, f.x1 - f.x0, f.y1 - f.y0);
    cairo_clip(cr);
    for (size_t i = 0; below && pts && i < t->n; i++)
        fill_band(cr, &f, t, i, tscale, ys, below, pts, mr_plot_draw_series_colour(i));
    double px = mr_plot_draw_frame_x(&f, (double)t->total_peak_ts / tscale);
    double py = mr_plot_draw_frame_y(&f, (double)t->total_peak / ys);
    mr_plot_draw_marker(cr, MR_MARK_CIRCLE, px, py, MR_PT(6), PEAK);
    char b1[32], b2[32], label[96];
    snprintf(label, sizeof label, "total peak %s at %s",
             mt_units_format_bytes(t->total_peak, b1, sizeof b1),
             mt_units_format_duration(t->total_peak_ts, b2, sizeof b2));
    double ha = px > (f.x0 + f.x1) / 2 ? 1 : 0;
    mr_plot_draw_text(cr, label, px + (ha ? -8 : 8), py - 6 < f.y0 + 20 ? f.y0 + 2 : py - 6,
                      MR_PT(9), 0, ha, py - 6 < f.y0 + 20 ? 0 : 1, PEAK, NULL, NULL);
    cairo_restore(cr);
    mr_plot_draw_axes(cr, &f, &st);
    mr_plot_draw_legend_rows(cr, items, n, f.x0, f.x1, legend_top);
    free(below);
    free(pts);
}

int mr_plot_procs(const mr_capture_set* s, const mr_plot_args* a) {
    mr_procs_timeline t = {0};
    // Each process's command line, and what tells it apart from the others in the legend:
    // "PROGRAM ARGS (pid N)".
    char** labels = calloc(4 * s->n + 1, sizeof *labels);
    char** legend = labels ? labels + s->n : NULL;
    char** prog = labels ? labels + 2 * s->n : NULL;
    char** args = labels ? labels + 3 * s->n : NULL;
    mr_procs_error err = {.path = s->procs[0].path, .msg = "out of memory"};
    int e = labels ? mr_procs_timeline_build(s, BUCKETS, &t, &err) : -ENOMEM;
    if (!e)
        e = mr_procs_report_legend_names(s, prog, args);
    for (size_t i = 0; !e && i < s->n; i++)
        if (!(labels[i] = mr_procs_report_label(&s->procs[i])) ||
            asprintf(&legend[i], "%s%s%s (pid %lld)", prog[i], args[i][0] ? " " : "", args[i],
                     (long long)s->procs[i].pid) < 0) {
            legend[i] = NULL;
            e = -ENOMEM;
        }
    if (e)
        mr_messages_error(err.path, "%s", err.msg);
    int rc = mr_messages_exit_code(e);
    mt_byte_unit unit = mt_units_for_bytes(t.total_peak);
    if (!rc && a->data)
        rc = write_data(&t, labels, legend, a, unit);
    mr_canvas c;
    if (!rc && !(rc = mr_plot_draw_canvas_open(&c, a->output, a->force, WIDTH, HEIGHT))) {
        draw(&t, legend, c.cr, unit);
        rc = mr_plot_draw_canvas_commit(&c);
    }
    for (size_t i = 0; labels && i < 4 * s->n; i++)
        free(labels[i]);
    free(labels);
    mr_procs_timeline_free(&t);
    return rc;
}
