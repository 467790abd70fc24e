// SPDX-License-Identifier: MIT
// The state of `memreport live`: follows a capture while its program writes it. Each
// update reads only the event chunks and counter points written since the previous one
// and applies them to a replay (replay.h) kept between updates, so a long run stays as
// cheap to follow as a short one. Never writes the capture (mt_capture_open_live).
#ifndef MR_LIVE_H
#define MR_LIVE_H

#include "replay.h"
#include "sites.h"
#include "symbols.h"
#include "u64map.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

// Heap samples kept for the time plot: the highest live bytes of each bucket of time.
#define MR_LIVE_BUCKETS 240

typedef struct mr_live {
    mr_replay heap;       // live blocks and totals of the libc heap, with the python heap
                          // in a python process (heap.cap unused)
    mr_u64map site_bytes; // leaf callsite -> live bytes
    mr_u64map site_blocks;
    mr_symbols* sym;        // names of the callsites, reloaded when new ones appear
    mr_site_labels* labels; // their site labels (sites.h), with sym; NULL: out of memory
    int64_t sym_callsites;
    int64_t last_chunk; // chunks with ids up to this are read
    // Events read after a gap in seq, held back one update: a thread's event can reach
    // the capture one commit after a later event of another thread.
    mt_event* held;
    size_t nheld, capheld;
    uint64_t max_seq;
    // Counters: the latest RSS and VSZ, the highest RSS, and the time read up to.
    int64_t rss, vsz, rss_peak, rss_ts, vsz_ts;
    bool has_rss;
    // Time plot: bucket[i % MR_LIVE_BUCKETS] is the highest live bytes in bucket i.
    int64_t bucket_ns;
    uint64_t bucket[MR_LIVE_BUCKETS];
    int64_t bucket_last; // index of the newest bucket (-1: none)
    // The capture: complete (its program exited), its latest time (ns since start).
    bool complete;
    int64_t now_ns;
    char* command;
    uint64_t updates, events_read; // events read by the latest update
} mr_live;

int mr_live_init(mr_live* l, int64_t bucket_ns);
void mr_live_free(mr_live* l);
// Reads what the program wrote since the last update. `all` applies every event read
// (the last update, or a one-off snapshot) instead of holding back those after a gap.
// Returns 0, or a negative errno with the reason in err (-EIO, -EPROTO, -ENOENT...).
int mr_live_update(mr_live* l, const char* path, bool all, char* err, size_t errlen);

// The top sites by live bytes now: rows merged by site label as stats labels them (sites.h:
// past allocation wrappers and the plumbing), highest first.
typedef struct mr_live_site {
    const char* name; // lives until the next update
    uint64_t bytes, blocks;
} mr_live_site;
// Fills out[0..max) and returns the number of rows.
size_t mr_live_top_sites(const mr_live* l, mr_live_site* out, size_t max);

#endif
