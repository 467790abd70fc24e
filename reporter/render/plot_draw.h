// SPDX-License-Identifier: MIT
// Cairo helpers shared by memreport's plots (NPU heap plot, native time plot): a canvas
// that writes PNG or SVG by the output's extension through a temporary file, axes with
// nice ticks, text anchored and rotated like matplotlib's, decimated polylines, markers
// and a legend placed where it hides the fewest data points. Knows nothing about captures.
#ifndef MR_PLOT_DRAW_H
#define MR_PLOT_DRAW_H

#include "messages.h"
#include "output_file.h"

#include <cairo.h>
#include <stdbool.h>
#include <stddef.h>

// Matplotlib sizes are in points at 100 dpi.
#define MR_PT(pt) ((pt)*100.0 / 72.0)

typedef struct mr_rgb {
    double r, g, b;
} mr_rgb;

typedef struct mr_canvas {
    cairo_surface_t* surface;
    cairo_t* cr;
    int width, height;
    bool svg;
    mr_output_file out;
} mr_canvas;

// Opens a white canvas; SVG when path ends in ".svg", PNG otherwise. Refuses an existing
// path unless force. Returns 0 or an exit code (message printed).
int mr_plot_draw_canvas_open(mr_canvas* c, const char* path, bool force, int width, int height);
// Encodes the picture into the temporary file and renames it into place. Returns an exit code.
int mr_plot_draw_canvas_commit(mr_canvas* c);
void mr_plot_draw_canvas_abort(mr_canvas* c);

// The plot area in device pixels and the data ranges mapped onto it.
typedef struct mr_frame {
    double x0, y0, x1, y1; // left, top, right, bottom
    double xmin, xmax, ymin, ymax;
} mr_frame;

double mr_plot_draw_frame_x(const mr_frame* f, double x);
double mr_plot_draw_frame_y(const mr_frame* f, double y);

// Ticks at 1/2/2.5/5 x 10^k covering [lo, hi], at most max_ticks of them (integer: steps
// are whole numbers). Returns the count written to out (cap entries) and the step.
size_t mr_plot_draw_nice_ticks(double lo, double hi, int max_ticks, bool integer, double* out,
                               size_t cap, double* step);
// A tick label with as many decimals as the step needs ("0", "2.5", "0.25").
void mr_plot_draw_format_tick(double v, double step, char* buf, size_t len);

// Text in DejaVu Sans of `size` px. The unrotated text is rotated by angle_deg
// (counter-clockwise) and then its bounding box is placed so that the point (ha, va) of the
// box (0 = left/top, 0.5 = centre, 1 = right/bottom) lies at (x, y), as matplotlib aligns.
// Lines are separated by '\n'. Returns the box width and height through w/h (may be NULL).
void mr_plot_draw_text(cairo_t* cr, const char* s, double x, double y, double size,
                       double angle_deg, double ha, double va, mr_rgb color, double* w, double* h);
// Text placed with its baseline-left at (x, y), unrotated (matplotlib annotations).
void mr_plot_draw_text_baseline(cairo_t* cr, const char* s, double x, double y, double size,
                                mr_rgb color);

typedef struct mr_axes_style {
    const char* title;
    const char* xlabel;
    const char* ylabel;
    double xrotation; // degrees of the x tick labels
    bool xinteger;    // x ticks are whole numbers
    int max_xticks, max_yticks;
    double title_bottom; // the title's baseline box bottom; 0: just above the frame
} mr_axes_style;

// Draws the frame, ticks, tick labels, axis labels and title.
void mr_plot_draw_axes(cairo_t* cr, const mr_frame* f, const mr_axes_style* st);
// A second Y axis on the right edge of f for the range [0, ymax], ticks and labels in color.
void mr_plot_draw_right_axis(cairo_t* cr, const mr_frame* f, double ymax, int max_ticks,
                             const char* label, mr_rgb color);

// A polyline of any length drawn with at most 4 vertices per pixel column (first, min,
// max, last), which looks the same and keeps big plots fast and SVGs small. The vertices
// drawn are kept (for the legend's placement).
typedef struct mr_polyline {
    cairo_t* cr;
    const mr_frame* f;
    long col;
    bool any;
    double cx, first, lo, hi, last; // device coordinates of the current column
    double* pts;                    // drawn vertices, x y pairs
    size_t npts, cap;
} mr_polyline;

void mr_plot_draw_polyline_begin(mr_polyline* p, cairo_t* cr, const mr_frame* f);
void mr_plot_draw_polyline_add(mr_polyline* p, double x, double y); // data coordinates
// Strokes the path. dash: 0 solid, else the dash length in px (dotted lines use 1).
void mr_plot_draw_polyline_stroke(mr_polyline* p, mr_rgb color, double width, double dash);
void mr_plot_draw_polyline_free(mr_polyline* p);

enum { MR_MARK_NONE, MR_MARK_LINE, MR_MARK_CIRCLE, MR_MARK_TRIANGLE, MR_MARK_BAND };

// The colour of a plot's k-th series (a band, a line): those of `memreport view`'s light
// page, at least 20 apart (CIEDE2000) and 3:1 against the white plot, thirteen before one
// repeats.
mr_rgb mr_plot_draw_series_colour(size_t k);
// One marker of diameter size px centred at device (x, y).
void mr_plot_draw_marker(cairo_t* cr, int shape, double x, double y, double size, mr_rgb color);

typedef struct mr_legend_item {
    const char* label; // may contain '\n'
    mr_rgb color;
    int mark; // MR_MARK_*
} mr_legend_item;

// A legend as rows of items from x0 to x1 with its top at y, laid out above a plot so that it
// never covers data; a label wider than a third of the row is cut with an ellipsis.
// mr_plot_draw_legend_rows_height gives the height it takes without drawing it.
double mr_plot_draw_legend_rows_height(cairo_t* cr, const mr_legend_item* items, size_t n,
                                       double x0, double x1);
// Makes room for the legend rows between the title and the frame: moves f's top down by
// their height (the title stays where it was, through st) and returns the rows' top.
double mr_plot_draw_legend_make_room(cairo_t* cr, mr_frame* f, mr_axes_style* st,
                                     const mr_legend_item* items, size_t n);
void mr_plot_draw_legend_rows(cairo_t* cr, const mr_legend_item* items, size_t n, double x0,
                              double x1, double y);
// Draws the legend at matplotlib's "best" location: of the 9 candidate positions (in
// matplotlib's order), the first covering the fewest of the given device points.
void mr_plot_draw_legend(cairo_t* cr, const mr_frame* f, const mr_legend_item* items, size_t n,
                         const double* pts, size_t npts);

#endif
