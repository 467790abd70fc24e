// SPDX-License-Identifier: MIT
// A native capture's memory over time, as the time plot draws it: the live heap (from a
// replay), RSS and VSZ (counter tracks), the peak, marks and ranges, and optional rows of
// bytes held per call site and their share of the live heap. Series keep at most four
// points (first, min, max, last) per time bucket, so memory does not grow with the capture.
#ifndef MR_HEAP_TIMELINE_H
#define MR_HEAP_TIMELINE_H

#include "series.h"

#include "memtrace/capture.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct mr_timeline_opts {
    int64_t buckets;    // time buckets across the capture (the plot's pixel columns)
    int top_sites;      // rows for the N call sites holding most bytes (0: none)
    const char** sites; // or rows for these site labels, in this order
    size_t nsites;
    // For a process of a tree on a common axis (procs_timeline.h): ns added to every time,
    // and the buckets' width (0: the capture's duration over `buckets`).
    int64_t shift, bucket_ns;
} mr_timeline_opts;

// Bytes held by one call site (sites.h labels) over time.
typedef struct mr_site_series {
    const char* name;
    uint64_t peak;   // the most it held at once
    mr_points bytes; // (ts, bytes held) at the last event of each bucket
    mr_points share; // (ts, bytes held * 1e6 / live bytes): parts per million
} mr_site_series;

typedef struct mr_timeline_mark {
    char* name;
    bool range;
    int64_t begin, end; // end == begin for a mark
} mr_timeline_mark;

typedef struct mr_heap_timeline {
    int64_t duration; // ns: the latest of events, counters, marks and the recorded duration
    mr_points heap, rss, vsz;
    uint64_t peak;
    int64_t peak_ts;
    mr_site_series* sites; // the chosen rows, in display order
    size_t nsites;
    mr_timeline_mark* marks; // outside the NPU heap, by time
    size_t nmarks;
    struct mr_symbols* symbols; // holds the site names (NULL without site rows)
} mr_heap_timeline;

// Reads the libc heap's timeline (two replays with site rows). Returns 0, or a negative
// errno (-ENOMEM; -EINVAL for a site name the capture has not; the replay's -EPROTO...) with
// the reason in msg; with site rows msg may hold a note even then (mr_symbols_load's). The
// caller prints a non-empty msg.
int mr_heap_timeline_build(mt_capture* cap, const mr_timeline_opts* o, mr_heap_timeline* t,
                           char* msg, size_t msglen);
void mr_heap_timeline_free(mr_heap_timeline* t);
// Without site rows, the live heap's series is stored in the capture when first computed
// (table derived, kind 2, under the default heap's fingerprint; never with
// mr_aggregates_enable(false)) and read back for the same buckets; a damaged one gets a note
// in msg and is replaced. The bytes and their reading back (tests compare them with a
// replay): decode returns 0 (t's heap, peak and peak_ts), 1 when they are another
// query's, -ENOMEM, or -EPROTO with why.
#define MR_HEAP_TIMELINE_FORMAT 1
int64_t mr_heap_timeline_key(int64_t t0, int64_t width);
uint8_t* mr_heap_timeline_encode(const mr_heap_timeline* t, int64_t t0, int64_t width, size_t* len);
int mr_heap_timeline_decode(const uint8_t* p, size_t len, int64_t t0, int64_t width,
                            mr_heap_timeline* t, char* why, size_t whylen);
// The duration the timeline of cap spans (its `duration`), computed alone.
int64_t mr_heap_timeline_duration(mt_capture* cap);

#endif
