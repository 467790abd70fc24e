// SPDX-License-Identifier: MIT
// NPU compiler "memory-usage-info" logs (docs: shared/docs/npu-memory-usage-log.md): a
// streaming parser that applies upstream plot_memory_usage.py's rules exactly (doc §2,
// legacy format §5) and the series builder (§2.5-2.7) shared by `import` and `plot`.
// Memory is bounded per line; nothing here writes files or draws.
#ifndef MR_IMPORT_NPU_H
#define MR_IMPORT_NPU_H

#include "memtrace/capture.h"
#include "memtrace/units.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

// Lines longer than this are skipped with a warning (real memory-usage lines are < 200 B).
#define MR_NPU_LINE_LIMIT (1u << 20)

typedef struct mr_npu_point {
    int64_t x;      // global allocation step
    uint64_t bytes; // exact value from the log
} mr_npu_point;

typedef struct mr_npu_points {
    mr_npu_point* v;
    size_t n, cap;
} mr_npu_points;

// One allocation ("Buffer size to allocate") or free ("Free buffer of size") line.
typedef struct mr_npu_event {
    int64_t step;  // global step (local while parsing)
    uint64_t size; // bytes
    uint64_t addr; // synthetic buffer id: a free takes the id of the most recent live
                   // buffer of the same size in its function; an unmatched free a fresh id
    uint32_t func; // index into mr_npu_log.funcs
    bool is_free;
} mr_npu_event;

typedef struct mr_npu_region {
    char* name;
    int64_t start, span;
    bool label_drawn; // set by mr_npu_series_build (span >= 0.25 % of the timeline)
} mr_npu_region;

// The parsed log in timeline order (doc §2.4): raw points with global x, regions, events.
typedef struct mr_npu_log {
    bool legacy;  // 2025 format without "{F}:" prefixes (doc §5)
    char** funcs; // function names in timeline order (all recognised ones)
    size_t nfuncs;
    mr_npu_region* regions; // functions with a max or free point, in order
    size_t nregions;
    mr_npu_points max_raw; // "Max allocated size" values, not yet running-maxed
    mr_npu_points frag;    // fragmentation candidates (legacy: the flagged max points)
    mr_npu_points used, free;
    mr_npu_event* ev; // DDR allocation/free events, ts order
    size_t nev;
    uint64_t lines;      // physical lines read
    uint64_t long_lines; // lines over MR_NPU_LINE_LIMIT, skipped
    uint64_t cmx_events; // A/H lines of CMX_NN steps, not imported as DDR events
} mr_npu_log;

// Parses the log at path. Returns 0, -EPROTO (not usable: the message in err says why, e.g.
// no gate line, no memory-usage lines, a number too large), -ENOMEM, or a negative errno
// from open/read. Skipped over-long lines are reported on stderr as "memreport: PATH: ...".
// With events false the allocation/free lines are not collected (the plot needs none).
int mr_npu_parse_file(const char* path, bool events, mr_npu_log* out, char* err, size_t errlen);
// The same on an open descriptor (read to EOF, not closed); `name` is used in warnings.
// Both read with one extra thread, joined before they return.
int mr_npu_parse_fd(int fd, const char* name, bool events, mr_npu_log* out, char* err,
                    size_t errlen);
void mr_npu_log_free(mr_npu_log* log);

// The five plotted series (doc §2.5), unit (§2.6) and regions with label visibility (§2.7).
typedef struct mr_npu_series {
    bool legacy;
    mr_npu_points max;       // running max (legacy: raw values)
    mr_npu_points increased; // points of max that set a new record
    mr_npu_points frag;      // fragmentation candidates that are increases
    mr_npu_points used, free;
    mr_npu_region* regions;
    size_t nregions;
    int64_t total_steps; // x of the last max point + 1
    uint64_t peak;       // last value of max (legacy: its largest)
    mt_byte_unit unit;
} mr_npu_series;

// Builds the series, taking ownership of the four point vectors and the regions (they are
// left empty in the arguments). `max_raw` must be non-empty. Returns 0 or -ENOMEM.
int mr_npu_series_build(mr_npu_series* s, bool legacy, mr_npu_points* max_raw, mr_npu_points* frag,
                        mr_npu_points* used, mr_npu_points* free_pts, mr_npu_region** regions,
                        size_t* nregions);
void mr_npu_series_free(mr_npu_series* s);

// Appends a point; returns 0 or -ENOMEM.
int mr_npu_points_push(mr_npu_points* p, int64_t x, uint64_t bytes);
void mr_npu_points_free(mr_npu_points* p);

// ---- the capture mapping: npu_import_cmd.c writes it, plot_npu.c reads it back.
// Heap MT_HEAP_NPU ('npu', time unit 'step'); counters MT_TRACK_NPU_* hold the raw max,
// used and free points in timeline order; marks: 'range' per region, and one mark of this
// kind per fragmentation line (ts_begin = step, attrs {"bytes": N}).
#define MR_NPU_MARK_FRAGMENTATION "fragmentation"

// Writes the capture at path (replacing any file there). Returns 0 or -EIO with err set.
int mr_npu_write_capture(const char* path, const mr_npu_log* log, const char* source, char* err,
                         size_t errlen);
// Reads an imported capture back into the plotted series. Returns 0, -EPROTO (not an NPU
// capture or inconsistent; message in err) or -ENOMEM.
int mr_npu_series_from_capture(mt_capture* cap, mr_npu_series* s, char* err, size_t errlen);
// The memreport exit code for a parse or write error.
int mr_npu_exit_code(int rc);

#endif
