// SPDX-License-Identifier: MIT
// Text of the live view (live_view.h). Strings from the capture are escaped for the
// terminal (escape.h): a hostile function name cannot send escapes of its own.
#include "live_view.h"

#include "cxx_names.h"
#include "escape.h"
#include "sampled.h"

#include "memtrace/units.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#define PLOT_HEIGHT 6
#define MAX_SITES 64

// Ends a line: on a terminal, also clears what an earlier, longer screen left there.
static void eol(FILE* out, const mr_live_view* v) {
    fputs(v->ansi ? "\033[K\n" : "\n", out);
}

static void plot(FILE* out, const mr_live* l, const mr_live_view* v) {
    int cols = (v->columns > 20 ? v->columns : 80) - 12;
    if (cols > MR_LIVE_BUCKETS)
        cols = MR_LIVE_BUCKETS;
    if (l->bucket_last < 0)
        return;
    int64_t first = l->bucket_last - cols + 1;
    if (first < 0)
        first = 0; // a run shorter than the plot: from its start
    uint64_t top = 1;
    for (int64_t b = first; b <= l->bucket_last; b++)
        if (b >= 0 && l->bucket[b % MR_LIVE_BUCKETS] > top)
            top = l->bucket[b % MR_LIVE_BUCKETS];
    char t1[32], t2[32];
    fprintf(out, "heap over the last %s (top %s):",
            mt_units_format_duration((l->bucket_last - first + 1) * l->bucket_ns, t1, sizeof t1),
            mt_units_format_bytes(top, t2, sizeof t2));
    eol(out, v);
    // Eighths of a cell per level: U+2581..U+2588.
    static const char* const blocks[] = {" ", "▁", "▂", "▃", "▄", "▅", "▆", "▇", "█"};
    for (int row = PLOT_HEIGHT - 1; row >= 0; row--) {
        fputs(row == PLOT_HEIGHT - 1 ? "  max |" : row == 0 ? "    0 |" : "      |", out);
        for (int64_t b = first; b <= l->bucket_last; b++) {
            uint64_t y = b >= 0 ? l->bucket[b % MR_LIVE_BUCKETS] : 0;
            int eighths = (int)((double)y / (double)top * PLOT_HEIGHT * 8 + 0.5) - row * 8;
            fputs(blocks[eighths < 0 ? 0 : eighths > 8 ? 8 : eighths], out);
        }
        eol(out, v);
    }
}

void mr_live_view_write(FILE* out, const mr_live* l, const mr_live_view* v) {
    char a[32], b[32], c[32];
    if (v->ansi)
        fputs("\033[H", out); // home; each line clears its own tail, the end clears below
    fputs("memreport live: ", out);
    mr_escape_fputs_text(out, v->path);
    fprintf(out, " (%s)", l->complete ? "complete: the program exited" : "recording");
    eol(out, v);
    if (l->command) {
        fputs("command:  ", out);
        mr_escape_fputs_text(out, l->command);
        eol(out, v);
    }
    for (size_t i = 0; i < mr_sampled_lines(); i++) { // model/sampled.h
        char line[4400];
        mr_sampled_line(i, line, sizeof line);
        mr_escape_fputs_text(out, line);
        eol(out, v);
    }
    fprintf(out, "time:     %s", mt_units_format_duration(l->now_ns, a, sizeof a));
    eol(out, v);
    fprintf(out, "heap:     %s live (%" PRIu64 " bytes in %zu blocks), peak %s (%" PRIu64 " bytes)",
            mt_units_format_bytes(l->heap.live_bytes, a, sizeof a), l->heap.live_bytes,
            l->heap.live.count, mt_units_format_bytes(l->heap.peak_bytes, b, sizeof b),
            l->heap.peak_bytes);
    eol(out, v);
    if (l->has_rss)
        fprintf(out, "rss:      %s (peak %s), vsz %s",
                mt_units_format_bytes((uint64_t)l->rss, a, sizeof a),
                mt_units_format_bytes((uint64_t)l->rss_peak, b, sizeof b),
                mt_units_format_bytes((uint64_t)l->vsz, c, sizeof c));
    else
        fputs("rss:      (no sample yet)", out);
    eol(out, v);
    fprintf(out, "events:   %" PRIu64, l->heap.events);
    if (v->events_rate >= 0)
        fprintf(out, " (%.0f/s)", v->events_rate);
    eol(out, v);
    eol(out, v);
    mr_live_site sites[MAX_SITES];
    size_t want = v->top < MAX_SITES ? v->top : MAX_SITES;
    size_t n = mr_live_top_sites(l, sites, want);
    fprintf(out, "top sites by live bytes:");
    eol(out, v);
    for (size_t i = 0; i < n; i++) {
        fprintf(out, "  %10s %12" PRIu64 " B %9" PRIu64 " blocks  ",
                mt_units_format_bytes(sites[i].bytes, a, sizeof a), sites[i].bytes,
                sites[i].blocks);
        mr_cxx_names_fputs(out, sites[i].name);
        eol(out, v);
    }
    if (n == 0) {
        fputs("  (nothing live)", out);
        eol(out, v);
    }
    eol(out, v);
    plot(out, l, v);
    if (v->footer) {
        eol(out, v);
        fputs(v->footer, out);
        eol(out, v);
    }
    if (v->ansi)
        fputs("\033[J", out); // clear the rest of the screen
    fflush(out);
}
