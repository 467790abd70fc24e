// SPDX-License-Identifier: MIT
// `memreport export`: one writer per file format (render/export_<format>.c), each given the
// same input: the capture, its symbols and the aggregation model's rows for the chosen
// moment and range (profile.h). cmd/cmd_export.c parses the options, builds the input and
// lists the formats in its table.
#ifndef MR_EXPORT_H
#define MR_EXPORT_H

#include "profile.h"
#include "symbols.h"

#include "memtrace/capture.h"

#include <stdbool.h>
#include <stdio.h>

// One process of several (memreport export DIR): its callsites are those of the merged
// profile from `first` on (its callsite c is first + c), its stacks read in its symbols,
// under a root frame naming it; a format over time (chrome) places it at its offset.
typedef struct mr_export_process {
    mt_capture* cap;
    const mr_symbols* sym;
    mr_symloc root; // "COMMAND (pid N)"
    uint32_t first;
    int64_t offset; // ns from the earliest process's start to this one's (meta start_realtime_ns)
} mr_export_process;

typedef struct mr_export_input {
    mt_capture* cap;
    const char* path;       // the capture's path, for messages
    const mr_symbols* sym;  // stacks and names
    const mr_query* query;  // what the profile holds (heap, moment, range, thread)
    const mr_profile* prof; // rows per callsite: live at the moment, allocated in the range
    mr_metric metric;       // --metric (formats with one weight per stack)
    bool all_frames;        // --all-frames: keep noise frames (allocator internals)
    bool steps;             // an imported NPU capture: times are allocation steps, not ns
    // Several processes, by first callsite (NULL: one capture, in sym): prof holds their
    // rows, and stacks start with the process's frame. Their live bytes are those of the
    // moment the processes together held the most (joint_peak, at joint_ts on the axis
    // from the earliest start), or each process's end (--leaks).
    const mr_export_process* procs;
    size_t nprocs;
    bool joint_peak;
    int64_t joint_ts;
} mr_export_input;

// A format writer: writes the whole file to `out`. Returns 0, or a negative errno with the
// reason in err (the command then removes the partial output).
typedef int (*mr_export_fn)(FILE* out, const mr_export_input* in, char* err, size_t errlen);

// folded: one "root;...;leaf VALUE" line per distinct symbolized stack with a non-zero
// value of in->metric, outermost frame first, inlined functions as frames of their own.
int mr_export_folded(FILE* out, const mr_export_input* in, char* err, size_t errlen);

// pprof: a gzipped profile.proto as Go writes heap profiles: per callsite the samples
// alloc_objects, alloc_space (in the range), inuse_objects, inuse_space (at the moment),
// locations with their mappings (build-ids), inlined functions as lines of a location.
int mr_export_pprof(FILE* out, const mr_export_input* in, char* err, size_t errlen);

// speedscope: speedscope's JSON file format, one "sampled" profile per metric (live bytes at
// the moment, bytes allocated and allocations in the range; in->metric's is the one shown
// first), stacks root first over shared frames (function, file, line).
int mr_export_speedscope(FILE* out, const mr_export_input* in, char* err, size_t errlen);

// csv: one row per heap event and per mark, range start and range end, in time order, in
// msMemScope's memscope_dump layout; streams the events (--range and --thread filter them).
// Several processes: each one's rows in turn (tree order), times on one axis.
int mr_export_csv(FILE* out, const mr_export_input* in, char* err, size_t errlen);

// massif: valgrind massif's massif.out (ms_print, massif-visualizer): live bytes in 100
// evenly spaced snapshots plus a detailed one at the query's moment holding the
// allocation tree (allocator at the root, callers below). Builds the profile itself, taking
// the snapshots in the same replay (in->prof is empty).
int mr_export_massif(FILE* out, const mr_export_input* in, char* err, size_t errlen);

// chrome: Chrome's trace-event JSON: counter tracks of the heap's live bytes (thinned to a
// few thousand intervals, each keeping its highest point), RSS, VSZ and the NPU counters;
// marks as instant events, ranges as complete events; times in microseconds. Replays the
// events itself: it needs no profile (in->prof is empty). Several processes: each under its
// own pid, on one time axis from the earliest start.
int mr_export_chrome(FILE* out, const mr_export_input* in, char* err, size_t errlen);

// The locations of the stack of `leaf`, outermost first, for the formats that list frames
// root first: each physical frame, then the functions inlined into it, outer to inner
// (noise frames left out unless in->all_frames); with several processes, the process's
// root frame first. Fills out[0..max) and returns the number filled; a stack deeper than
// max keeps its leaf-most locations (and the process's frame).
#define MR_EXPORT_MAX_LOCS 4096

// Several processes: the process whose callsites hold `leaf` of the merged profile
// (in->nprocs > 0).
const mr_export_process* mr_export_process_of(const mr_export_input* in, uint32_t leaf);
size_t mr_export_stack_locs(const mr_export_input* in, uint32_t leaf, const mr_symloc** out,
                            size_t max);

#endif
