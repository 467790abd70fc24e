// SPDX-License-Identifier: MIT
// The screen of `memreport live`: heap now and its peak, RSS and VSZ, events and their
// rate, the top sites by live bytes and a block-character plot of the heap's recent past.
// Plain text (one snapshot, for pipes and tests) or, on a terminal, a full screen redrawn
// in place with ANSI escapes only (no curses: works in any terminal, over ssh).
#ifndef MR_LIVE_VIEW_H
#define MR_LIVE_VIEW_H

#include "live.h"

#include <stdbool.h>
#include <stdio.h>

typedef struct mr_live_view {
    const char* path;
    bool ansi;          // redraw a terminal screen in place
    int columns, rows;  // the terminal's size (plain text: 80 x 24 is assumed)
    size_t top;         // site rows to show
    double events_rate; // events per second over the last update (negative: unknown)
    const char* footer; // a last line (keys), or NULL
} mr_live_view;

void mr_live_view_write(FILE* out, const mr_live* l, const mr_live_view* v);

#endif
