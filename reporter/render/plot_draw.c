// SPDX-License-Identifier: MIT
// Cairo drawing helpers for memreport's plots (see plot_draw.h). One of the few cairo
// users; it never reads captures and never decides what a plot shows.
#include "plot_draw.h"

#include "plot.h"

#include "memtrace/vec.h"

#include <cairo-svg.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FONT "DejaVu Sans"

// ---- canvas

static cairo_status_t write_fp(void* closure, const unsigned char* data, unsigned int len) {
    return fwrite(data, 1, len, (FILE*)closure) == len ? CAIRO_STATUS_SUCCESS
                                                       : CAIRO_STATUS_WRITE_ERROR;
}

static bool ends_with(const char* s, const char* suffix) {
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcasecmp(s + n - m, suffix) == 0;
}

int mr_plot_check_output(const char* path) {
    if (ends_with(path, ".png") || ends_with(path, ".svg"))
        return 0;
    mr_messages_error(path, "not a .png or .svg name: the picture is PNG or SVG by its extension");
    return MR_EXIT_USAGE;
}

int mr_plot_draw_canvas_open(mr_canvas* c, const char* path, bool force, int width, int height) {
    memset(c, 0, sizeof *c);
    int rc = mr_plot_check_output(path); // never PNG bytes in a .jpg
    if (rc)
        return rc;
    c->width = width;
    c->height = height;
    c->svg = ends_with(path, ".svg");
    rc = mr_output_file_open(&c->out, path, force);
    if (rc)
        return rc;
    if (c->svg)
        c->surface = cairo_svg_surface_create_for_stream(write_fp, c->out.fp, width, height);
    else
        c->surface = cairo_image_surface_create(CAIRO_FORMAT_ARGB32, width, height);
    c->cr = cairo_create(c->surface);
    if (cairo_status(c->cr) != CAIRO_STATUS_SUCCESS) {
        mr_messages_error(path, "cannot create a %dx%d picture: %s", width, height,
                          cairo_status_to_string(cairo_status(c->cr)));
        mr_plot_draw_canvas_abort(c);
        return MR_EXIT_IO;
    }
    cairo_set_source_rgb(c->cr, 1, 1, 1);
    cairo_paint(c->cr);
    return 0;
}

int mr_plot_draw_canvas_commit(mr_canvas* c) {
    cairo_status_t st = cairo_status(c->cr);
    cairo_destroy(c->cr);
    c->cr = NULL;
    if (st == CAIRO_STATUS_SUCCESS && !c->svg)
        st = cairo_surface_write_to_png_stream(c->surface, write_fp, c->out.fp);
    cairo_surface_finish(c->surface); // flushes the SVG stream
    if (st == CAIRO_STATUS_SUCCESS)
        st = cairo_surface_status(c->surface);
    cairo_surface_destroy(c->surface);
    c->surface = NULL;
    if (st != CAIRO_STATUS_SUCCESS) {
        mr_messages_error(c->out.path ? c->out.path : "<stdout>", "cannot write the picture: %s",
                          cairo_status_to_string(st));
        mr_output_file_abort(&c->out);
        return MR_EXIT_IO;
    }
    return mr_output_file_commit(&c->out);
}

void mr_plot_draw_canvas_abort(mr_canvas* c) {
    if (c->cr)
        cairo_destroy(c->cr);
    if (c->surface) {
        cairo_surface_finish(c->surface);
        cairo_surface_destroy(c->surface);
    }
    mr_output_file_abort(&c->out);
    memset(c, 0, sizeof *c);
}

// ---- coordinates and ticks

double mr_plot_draw_frame_x(const mr_frame* f, double x) {
    double span = f->xmax - f->xmin;
    return f->x0 + (span > 0 ? (x - f->xmin) / span : 0) * (f->x1 - f->x0);
}

double mr_plot_draw_frame_y(const mr_frame* f, double y) {
    double span = f->ymax - f->ymin;
    return f->y1 - (span > 0 ? (y - f->ymin) / span : 0) * (f->y1 - f->y0);
}

size_t mr_plot_draw_nice_ticks(double lo, double hi, int max_ticks, bool integer, double* out,
                               size_t cap, double* step) {
    static const double mult[] = {1, 2, 2.5, 5, 10};
    if (!(hi > lo) || max_ticks < 2) {
        *step = 1;
        if (cap)
            out[0] = lo;
        return cap ? 1 : 0;
    }
    double raw = (hi - lo) / (max_ticks - 1);
    double mag = pow(10, floor(log10(raw)));
    double s = 10 * mag;
    for (size_t i = 0; i < sizeof mult / sizeof *mult; i++) {
        if (integer && mult[i] == 2.5 && mag < 10)
            continue;
        if (mult[i] * mag >= raw * (1 - 1e-9)) {
            s = mult[i] * mag;
            break;
        }
    }
    if (integer && s < 1)
        s = 1;
    *step = s;
    size_t n = 0;
    for (double k = ceil(lo / s - 1e-9); n < cap; k++) {
        double v = k * s;
        if (v > hi + s * 1e-9)
            break;
        out[n++] = fabs(v) < s * 1e-9 ? 0 : v;
    }
    return n;
}

void mr_plot_draw_format_tick(double v, double step, char* buf, size_t len) {
    int dec = 0;
    while (dec < 6 && fabs(step * pow(10, dec) - round(step * pow(10, dec))) > 1e-6)
        dec++;
    snprintf(buf, len, "%.*f", dec, v);
}

// ---- text

void mr_plot_draw_text(cairo_t* cr, const char* s, double x, double y, double size,
                       double angle_deg, double ha, double va, mr_rgb color, double* w_out,
                       double* h_out) {
    cairo_save(cr);
    cairo_select_font_face(cr, FONT, CAIRO_FONT_SLANT_NORMAL, CAIRO_FONT_WEIGHT_NORMAL);
    cairo_set_font_size(cr, size);
    cairo_font_extents_t fe;
    cairo_font_extents(cr, &fe);
    double lh = fe.ascent + fe.descent;
    // Measure the unrotated block.
    double w = 0, h = 0;
    char line[512];
    const char* p = s;
    size_t nlines = 0;
    while (p) {
        const char* nl = strchr(p, '\n');
        size_t n = nl ? (size_t)(nl - p) : strlen(p);
        if (n >= sizeof line)
            n = sizeof line - 1;
        memcpy(line, p, n);
        line[n] = '\0';
        cairo_text_extents_t te;
        cairo_text_extents(cr, line, &te);
        if (te.x_advance > w)
            w = te.x_advance;
        nlines++;
        p = nl ? nl + 1 : NULL;
    }
    h = (double)nlines * lh;
    // Bounding box of the rotated block, relative to its unrotated top-left corner.
    double a = -angle_deg * M_PI / 180.0, ca = cos(a), sa = sin(a);
    double cx[4] = {0, w, 0, w}, cy[4] = {0, 0, h, h};
    double bx0 = INFINITY, by0 = INFINITY, bx1 = -INFINITY, by1 = -INFINITY;
    for (int i = 0; i < 4; i++) {
        double rx = cx[i] * ca - cy[i] * sa, ry = cx[i] * sa + cy[i] * ca;
        bx0 = fmin(bx0, rx);
        bx1 = fmax(bx1, rx);
        by0 = fmin(by0, ry);
        by1 = fmax(by1, ry);
    }
    double ox = x - (bx0 + ha * (bx1 - bx0)), oy = y - (by0 + va * (by1 - by0));
    cairo_translate(cr, ox, oy);
    cairo_rotate(cr, a);
    cairo_set_source_rgb(cr, color.r, color.g, color.b);
    p = s;
    for (size_t i = 0; p; i++) {
        const char* nl = strchr(p, '\n');
        size_t n = nl ? (size_t)(nl - p) : strlen(p);
        if (n >= sizeof line)
            n = sizeof line - 1;
        memcpy(line, p, n);
        line[n] = '\0';
        cairo_move_to(cr, 0, (double)i * lh + fe.ascent);
        cairo_show_text(cr, line);
        p = nl ? nl + 1 : NULL;
    }
    cairo_restore(cr);
    if (w_out)
        *w_out = bx1 - bx0;
    if (h_out)
        *h_out = by1 - by0;
}

void mr_plot_draw_text_baseline(cairo_t* cr, const char* s, double x, double y, double size,
                                mr_rgb color) {
    cairo_save(cr);
    cairo_select_font_face(cr, FONT, CAIRO_FONT_SLANT_NORMAL, CAIRO_FONT_WEIGHT_NORMAL);
    cairo_set_font_size(cr, size);
    cairo_set_source_rgb(cr, color.r, color.g, color.b);
    cairo_move_to(cr, x, y);
    cairo_show_text(cr, s);
    cairo_restore(cr);
}

// ---- axes

void mr_plot_draw_axes(cairo_t* cr, const mr_frame* f, const mr_axes_style* st) {
    const mr_rgb black = {0, 0, 0};
    const double fs = MR_PT(10), tick = MR_PT(3.5), pad = MR_PT(3.5);
    double ticks[256], step;
    char buf[64];
    cairo_save(cr);
    cairo_set_source_rgb(cr, 0, 0, 0);
    cairo_set_line_width(cr, MR_PT(0.8));
    cairo_rectangle(cr, f->x0, f->y0, f->x1 - f->x0, f->y1 - f->y0);
    cairo_stroke(cr);
    // x ticks: labels hang below, rotated, their box centred on the tick.
    double xlab_bottom = f->y1 + tick + pad;
    size_t n =
        mr_plot_draw_nice_ticks(f->xmin, f->xmax, st->max_xticks, st->xinteger, ticks, 256, &step);
    for (size_t i = 0; i < n; i++) {
        double x = mr_plot_draw_frame_x(f, ticks[i]);
        cairo_move_to(cr, x, f->y1);
        cairo_line_to(cr, x, f->y1 + tick);
        cairo_stroke(cr);
        mr_plot_draw_format_tick(ticks[i], step, buf, sizeof buf);
        double w, h;
        mr_plot_draw_text(cr, buf, x, f->y1 + tick + pad, fs, st->xrotation, 0.5, 0, black, &w, &h);
        if (f->y1 + tick + pad + h > xlab_bottom)
            xlab_bottom = f->y1 + tick + pad + h;
    }
    // y ticks: labels right-aligned left of the tick.
    double ylab_left = f->x0 - tick - pad;
    n = mr_plot_draw_nice_ticks(f->ymin, f->ymax, st->max_yticks, false, ticks, 256, &step);
    for (size_t i = 0; i < n; i++) {
        double y = mr_plot_draw_frame_y(f, ticks[i]);
        cairo_move_to(cr, f->x0, y);
        cairo_line_to(cr, f->x0 - tick, y);
        cairo_stroke(cr);
        mr_plot_draw_format_tick(ticks[i], step, buf, sizeof buf);
        double w;
        mr_plot_draw_text(cr, buf, f->x0 - tick - pad, y, fs, 0, 1, 0.5, black, &w, NULL);
        if (f->x0 - tick - pad - w < ylab_left)
            ylab_left = f->x0 - tick - pad - w;
    }
    cairo_restore(cr);
    if (st->xlabel)
        mr_plot_draw_text(cr, st->xlabel, (f->x0 + f->x1) / 2, xlab_bottom + MR_PT(4), fs, 0, 0.5,
                          0, black, NULL, NULL);
    if (st->ylabel)
        mr_plot_draw_text(cr, st->ylabel, ylab_left - MR_PT(4), (f->y0 + f->y1) / 2, fs, 90, 1, 0.5,
                          black, NULL, NULL);
    if (st->title)
        mr_plot_draw_text(cr, st->title, (f->x0 + f->x1) / 2,
                          st->title_bottom > 0 ? st->title_bottom : f->y0 - MR_PT(6), MR_PT(12), 0,
                          0.5, 1, black, NULL, NULL);
}

void mr_plot_draw_right_axis(cairo_t* cr, const mr_frame* f, double ymax, int max_ticks,
                             const char* label, mr_rgb color) {
    const double fs = MR_PT(10), tick = MR_PT(3.5), pad = MR_PT(3.5);
    double ticks[64], step, right = f->x1 + tick + pad;
    char buf[64];
    mr_frame g = *f;
    g.ymin = 0;
    g.ymax = ymax;
    size_t n = mr_plot_draw_nice_ticks(0, ymax, max_ticks, false, ticks, 64, &step);
    cairo_save(cr);
    cairo_set_source_rgb(cr, color.r, color.g, color.b);
    cairo_set_line_width(cr, MR_PT(0.8));
    for (size_t i = 0; i < n; i++) {
        double y = mr_plot_draw_frame_y(&g, ticks[i]);
        cairo_move_to(cr, f->x1, y);
        cairo_line_to(cr, f->x1 + tick, y);
        cairo_stroke(cr);
        mr_plot_draw_format_tick(ticks[i], step, buf, sizeof buf);
        double w;
        mr_plot_draw_text(cr, buf, f->x1 + tick + pad, y, fs, 0, 0, 0.5, color, &w, NULL);
        if (f->x1 + tick + pad + w > right)
            right = f->x1 + tick + pad + w;
    }
    cairo_restore(cr);
    if (label)
        mr_plot_draw_text(cr, label, right + MR_PT(4), (f->y0 + f->y1) / 2, fs, 90, 0, 0.5, color,
                          NULL, NULL);
}

// ---- polylines

void mr_plot_draw_polyline_begin(mr_polyline* p, cairo_t* cr, const mr_frame* f) {
    memset(p, 0, sizeof *p);
    p->cr = cr;
    p->f = f;
    cairo_new_path(cr);
}

static void keep(mr_polyline* p, double x, double y) {
    if (MT_VEC_RESERVE(&p->pts, &p->cap, p->npts + 2))
        return; // the legend placement just sees fewer points
    p->pts[p->npts++] = x;
    p->pts[p->npts++] = y;
}

static void vertex(mr_polyline* p, double x, double y) {
    if (p->npts == 0)
        cairo_move_to(p->cr, x, y);
    else
        cairo_line_to(p->cr, x, y);
    keep(p, x, y);
}

static void flush_column(mr_polyline* p) {
    if (!p->any)
        return;
    vertex(p, p->cx, p->first);
    if (p->lo != p->first && p->lo != p->last)
        vertex(p, p->cx, p->lo);
    if (p->hi != p->first && p->hi != p->last && p->hi != p->lo)
        vertex(p, p->cx, p->hi);
    if (p->last != p->first)
        vertex(p, p->cx, p->last);
}

void mr_plot_draw_polyline_add(mr_polyline* p, double x, double y) {
    double dx = mr_plot_draw_frame_x(p->f, x), dy = mr_plot_draw_frame_y(p->f, y);
    long col = (long)floor(dx);
    if (p->any && col == p->col) {
        if (dy < p->lo)
            p->lo = dy;
        if (dy > p->hi)
            p->hi = dy;
        p->last = dy;
        return;
    }
    flush_column(p);
    p->any = true;
    p->col = col;
    p->cx = dx;
    p->first = p->lo = p->hi = p->last = dy;
}

void mr_plot_draw_polyline_stroke(mr_polyline* p, mr_rgb color, double width, double dash) {
    flush_column(p);
    p->any = false;
    cairo_t* cr = p->cr;
    cairo_save(cr);
    cairo_set_source_rgb(cr, color.r, color.g, color.b);
    cairo_set_line_width(cr, width);
    cairo_set_line_join(cr, CAIRO_LINE_JOIN_BEVEL);
    cairo_set_line_cap(cr, CAIRO_LINE_CAP_BUTT);
    if (dash > 0) {
        double d[2] = {dash, dash * 1.65};
        cairo_set_dash(cr, d, 2, 0);
    }
    cairo_stroke(cr);
    cairo_restore(cr);
}

void mr_plot_draw_polyline_free(mr_polyline* p) {
    free(p->pts);
    memset(p, 0, sizeof *p);
}

// ---- markers and legend

// The view page's light palette (flamegraph_template.html, PALETTES.light), then a dark
// grey-violet as far from those twelve as a colour that reads on white can be.
static const unsigned char SERIES[][3] = {
    {0x00, 0x72, 0xb2}, {0xd5, 0x5e, 0x00}, {0x00, 0x9e, 0x73}, {0xe7, 0x23, 0xbf},
    {0x45, 0x13, 0xaa}, {0x69, 0x64, 0x16}, {0x9c, 0x11, 0x2d}, {0x14, 0x5d, 0x58},
    {0x8c, 0x8c, 0x8c}, {0xcd, 0x6a, 0x70}, {0x65, 0x35, 0x0b}, {0x77, 0x9c, 0x11},
    {0x50, 0x48, 0x58}};

mr_rgb mr_plot_draw_series_colour(size_t k) {
    const unsigned char* c = SERIES[k % (sizeof SERIES / sizeof *SERIES)];
    return (mr_rgb){c[0] / 255.0, c[1] / 255.0, c[2] / 255.0};
}

void mr_plot_draw_marker(cairo_t* cr, int shape, double x, double y, double size, mr_rgb color) {
    cairo_save(cr);
    cairo_set_source_rgb(cr, color.r, color.g, color.b);
    double r = size / 2;
    switch (shape) {
    case MR_MARK_CIRCLE:
        cairo_new_sub_path(cr);
        cairo_arc(cr, x, y, r, 0, 2 * M_PI);
        cairo_fill(cr);
        break;
    case MR_MARK_TRIANGLE: // matplotlib '^'
        cairo_move_to(cr, x, y - r);
        cairo_line_to(cr, x + r, y + r);
        cairo_line_to(cr, x - r, y + r);
        cairo_close_path(cr);
        cairo_fill(cr);
        break;
    case MR_MARK_BAND: // as the bands are filled (plot_procs.c): opaque, in the series' colour
        cairo_set_source_rgb(cr, color.r, color.g, color.b);
        cairo_rectangle(cr, x - size, y - r, 2 * size, 2 * r);
        cairo_fill(cr);
        break;
    default: // a line sample
        cairo_set_line_width(cr, MR_PT(1.5));
        cairo_move_to(cr, x - size, y);
        cairo_line_to(cr, x + size, y);
        cairo_stroke(cr);
        break;
    }
    cairo_restore(cr);
}

static size_t count_lines(const char* s) {
    size_t n = 1;
    for (; *s; s++)
        n += *s == '\n';
    return n;
}

void mr_plot_draw_legend(cairo_t* cr, const mr_frame* f, const mr_legend_item* items, size_t n,
                         const double* pts, size_t npts) {
    if (n == 0)
        return;
    const double fs = MR_PT(10), pad = 0.4 * fs, handle = 2.0 * fs, gap = 0.8 * fs;
    const double border = 0.5 * fs, rowgap = 0.5 * fs;
    cairo_save(cr);
    cairo_select_font_face(cr, FONT, CAIRO_FONT_SLANT_NORMAL, CAIRO_FONT_WEIGHT_NORMAL);
    cairo_set_font_size(cr, fs);
    cairo_font_extents_t fe;
    cairo_font_extents(cr, &fe);
    double lh = fe.ascent + fe.descent, textw = 0, h = 2 * pad;
    for (size_t i = 0; i < n; i++) {
        double th;
        char buf[256];
        snprintf(buf, sizeof buf, "%s", items[i].label);
        for (char *p = buf, *q; p; p = q ? q + 1 : NULL) {
            q = strchr(p, '\n');
            if (q)
                *q = '\0';
            cairo_text_extents_t te;
            cairo_text_extents(cr, p, &te);
            if (te.x_advance > textw)
                textw = te.x_advance;
        }
        th = (double)count_lines(items[i].label) * lh;
        h += th + (i ? rowgap : 0);
    }
    double w = 2 * pad + handle + gap + textw;
    // matplotlib's candidate order for loc="best".
    static const double pos[][2] = {{1, 0},   {0, 0},   {0, 1},   {1, 1},    {1, 0.5},
                                    {0, 0.5}, {0.5, 1}, {0.5, 0}, {0.5, 0.5}};
    double bx = 0, by = 0;
    size_t best = SIZE_MAX;
    for (size_t c = 0; c < sizeof pos / sizeof *pos; c++) {
        double x = f->x0 + border + pos[c][0] * (f->x1 - f->x0 - w - 2 * border);
        double y = f->y0 + border + pos[c][1] * (f->y1 - f->y0 - h - 2 * border);
        size_t bad = 0;
        for (size_t i = 0; i + 1 < npts; i += 2)
            bad += pts[i] >= x && pts[i] <= x + w && pts[i + 1] >= y && pts[i + 1] <= y + h;
        if (bad < best) {
            best = bad;
            bx = x;
            by = y;
        }
    }
    cairo_set_source_rgba(cr, 1, 1, 1, 0.8);
    cairo_rectangle(cr, bx, by, w, h);
    cairo_fill_preserve(cr);
    cairo_set_source_rgb(cr, 0.8, 0.8, 0.8);
    cairo_set_line_width(cr, 1);
    cairo_stroke(cr);
    cairo_restore(cr);
    double y = by + pad;
    for (size_t i = 0; i < n; i++) {
        double th = (double)count_lines(items[i].label) * lh;
        mr_plot_draw_marker(
            cr, items[i].mark, bx + pad + handle / 2, y + th / 2,
            items[i].mark == MR_MARK_LINE || items[i].mark == MR_MARK_BAND ? handle / 2 : MR_PT(5),
            items[i].color);
        mr_plot_draw_text(cr, items[i].label, bx + pad + handle + gap, y, fs, 0, 0, 0,
                          (mr_rgb){0, 0, 0}, NULL, NULL);
        y += th + rowgap;
    }
}

// ---- the legend in rows above a plot

// A label on one line, cut to max_w px with an ellipsis (on a UTF-8 character boundary).
static void fit_label(cairo_t* cr, const char* label, double max_w, char* out, size_t len) {
    snprintf(out, len, "%s", label);
    for (char* p = out; *p; p++)
        if (*p == '\n')
            *p = ' ';
    cairo_text_extents_t te;
    cairo_text_extents(cr, out, &te);
    size_t n = strlen(out);
    while (te.x_advance > max_w && n > 1) {
        do
            n--;
        while (n > 1 && ((unsigned char)out[n] & 0xc0) == 0x80);
        if (n + 4 > len)
            continue;
        memcpy(out + n, "\xe2\x80\xa6", 4); // U+2026
        cairo_text_extents(cr, out, &te);
    }
}

// Lays the items out from x0 to x1 in rows; draws them when draw, with the top at y.
// Returns the height taken.
static double legend_rows(cairo_t* cr, const mr_legend_item* items, size_t n, double x0, double x1,
                          double y, bool draw) {
    const double fs = MR_PT(10), handle = 2.0 * fs, gap = 0.5 * fs, space = 1.6 * fs;
    cairo_save(cr);
    cairo_select_font_face(cr, FONT, CAIRO_FONT_SLANT_NORMAL, CAIRO_FONT_WEIGHT_NORMAL);
    cairo_set_font_size(cr, fs);
    cairo_font_extents_t fe;
    cairo_font_extents(cr, &fe);
    double lh = (fe.ascent + fe.descent) * 1.35, x = x0, rows = n ? 1 : 0;
    for (size_t i = 0; i < n; i++) {
        char label[512];
        fit_label(cr, items[i].label, (x1 - x0) / 3, label, sizeof label);
        cairo_text_extents_t te;
        cairo_text_extents(cr, label, &te);
        double w = handle + gap + te.x_advance;
        if (x > x0 && x + w > x1) {
            x = x0;
            rows++;
        }
        if (draw) {
            double cy = y + (rows - 1) * lh + lh / 2;
            mr_plot_draw_marker(cr, items[i].mark, x + handle / 2, cy,
                                items[i].mark == MR_MARK_LINE || items[i].mark == MR_MARK_BAND
                                    ? handle / 2
                                    : MR_PT(5),
                                items[i].color);
            mr_plot_draw_text(cr, label, x + handle + gap, cy, fs, 0, 0, 0.5, (mr_rgb){0, 0, 0},
                              NULL, NULL);
        }
        x += w + space;
    }
    cairo_restore(cr);
    return rows * lh;
}

double mr_plot_draw_legend_rows_height(cairo_t* cr, const mr_legend_item* items, size_t n,
                                       double x0, double x1) {
    return legend_rows(cr, items, n, x0, x1, 0, false);
}

void mr_plot_draw_legend_rows(cairo_t* cr, const mr_legend_item* items, size_t n, double x0,
                              double x1, double y) {
    legend_rows(cr, items, n, x0, x1, y, true);
}

double mr_plot_draw_legend_make_room(cairo_t* cr, mr_frame* f, mr_axes_style* st,
                                     const mr_legend_item* items, size_t n) {
    double h = legend_rows(cr, items, n, f->x0, f->x1, 0, false);
    st->title_bottom = f->y0 - MR_PT(6);
    double top = f->y0 - MR_PT(2);
    f->y0 += h;
    return top;
}
