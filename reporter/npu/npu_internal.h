// SPDX-License-Identifier: MIT
// What the files of the NPU log parser share (not for use outside reporter/npu/). The parser
// applies upstream plot_memory_usage.py's rules (docs/npu-memory-usage-log.md §2; every §
// below is a section of that page) on bytes, in one streaming pass with memory bounded per
// line, plus the 2025 legacy format (§5):
//   npu_scan.c      finds every literal of a line in one pass (stateless)
//   npu_parse.c     the parser state: functions, points, events and their synthetic addresses
//   npu_pipeline.c  a reader thread splits and scans lines, the caller's thread applies them
//   npu_timeline.c  puts the functions' points and events in timeline order (§2.4)
//   npu_series.c    the five plotted series (§2.5-2.7)
// None of them writes files, talks to SQLite or draws: import (npu_import.c) and plot
// (npu_plot.c) consume what they build.
#ifndef MR_NPU_INTERNAL_H
#define MR_NPU_INTERNAL_H

#include "npu.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define READ_CHUNK (1u << 20)
// A log with more distinct function names than this is not a compiler log; refuse it
// rather than let a hostile file grow the table without bound.
#define MAX_FUNCS (1u << 20)

// ---- line scanning: every literal upstream (and the importer) looks for, found in one pass

enum {
    L_MAX,    // "Max allocated size " digits                          rule 1
    L_FRAG,   // "Increased allocation size to " digits " B due to fragmentation!"  rule 2
    L_USED,   // "DDR used memory" \s+ digits                          rule 3
    L_FREE,   // "DDR free memory" \s+ digits                          rule 4 (advances step)
    L_ALLOC,  // "Buffer size to allocate" \s+ digits                  event A
    L_HFREE,  // "Free buffer of size " digits                         event H
    L_BEFORE, // "free memory before alloc": line B, tells DDR from CMX_NN
    L_LFRAG,  // "Increased allocation size due to fragmentation!"     legacy flag (§5)
    L_COUNT
};

#define NUM_OVERFLOW UINT64_MAX

typedef struct scan {
    const char* key; // function key ("part12", "main"), NULL if none
    size_t keylen;
    bool found[L_COUNT];
    size_t pos[L_COUNT];
    uint64_t val[L_COUNT]; // NUM_OVERFLOW when the digits exceed INT64_MAX
    bool before_ddr;       // the B line is "DDR free memory before alloc"
} scan;

// ---- functions and the parser state

typedef struct func {
    char* name;
    size_t len;
    size_t seen;   // first-seen order (the stable sort's tie-break)
    int64_t steps; // "DDR free memory N" lines seen: the local step counter
    size_t nmax, nfree;
    uint64_t* pending; // sizes of A lines waiting for their step's B line
    size_t npending, cappending;
    bool cmx;       // the last B line was not DDR: its A/H lines are CMX_NN buffers
    bool frag_flag; // legacy: the next max point is a fragmentation one
} func;

// Points and events in file order, all functions in one array: point x holds
// (seen << LOCAL_BITS) | local step, event func the seen index and step the local step.
// Assembly turns them into timeline order in place when the file is already in that
// order (sequential logs), else with one stable counting sort: never per-function arrays
// copied into a global one.
#define LOCAL_BITS 40
typedef struct store {
    mr_points max, frag, used, free;
    mr_npu_event* ev;
    size_t nev, capev;
    uint64_t alloc_bytes; // the sizes of every allocation line so far (at most 2^63-1)
} store;

// (function, size) -> most recent live buffer id: the synthetic-address pairing.
typedef struct live_slot {
    uint64_t size;
    uint64_t head; // 0: no live buffer (slot unused when func == 0)
    uint32_t func; // seen index + 1
} live_slot;

typedef struct parser {
    const char* name;
    bool events; // collect allocation/free events
    bool gate;
    bool legacy_on; // the legacy reading is still possible (§5)
    func** funcs;   // seen order
    size_t nfuncs, capfuncs;
    func** table; // name hash -> func, open addressing
    size_t tmask;
    func* last;     // lines come in runs of one function: skip the hash
    func legacy;    // the single function of a legacy log
    store cur, leg; // what the current-format and the legacy reading collected
    uint64_t k0, k1;
    live_slot* live;
    size_t lmask, lcount;
    uint64_t* next_live; // buffer id -> the id below it in its stack
    size_t capnext;
    uint64_t ids;
    uint64_t lineno;
    uint64_t long_lines, cmx_events;
    uint64_t size; // bytes of the file (0: unknown), for progress
    char* err;
    size_t errlen;
} parser;

// ---- npu_scan.c
void mr_npu_scan_line(scan* sc, const unsigned char* s, size_t n);

// ---- npu_parse.c
int mr_npu_table_grow(parser* p);
func* mr_npu_func_get(parser* p, const char* name, size_t len);
void mr_npu_store_free(store* st);
int mr_npu_flush_pending(parser* p, store* st, func* f);
int mr_npu_choose(const scan* sc, const bool* ok, bool legacy);
int mr_npu_act(parser* p, store* st, func* f, int l, uint64_t v, bool before_ddr, bool legacy);
bool mr_npu_legacy_prefix(const unsigned char* s, size_t at);
void mr_npu_parser_free(parser* p);

// ---- npu_timeline.c: validates the end of the log and builds it in timeline order.
int mr_npu_finish(parser* p, int fd_rc, mr_npu_log* log);

#endif
