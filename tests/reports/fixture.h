// SPDX-License-Identifier: MIT
// Captures with known truth for the report tests, written with mt_capture_writer plus SQL rows
// for threads, mappings, frames and callsites. Test-only; aborts on any setup failure.
#ifndef MT_REPORTS_FIXTURE_H
#define MT_REPORTS_FIXTURE_H

#include "memtrace/capture.h"

#include <stddef.h>
#include <stdint.h>

typedef struct fx {
    mt_capture_writer* w;
    mt_event* ev;
    size_t n, cap;
    uint64_t seq;
} fx;

void fx_open(fx* f, const char* path);
// Runs SQL on the capture being written (mappings, frames, callsites, threads, meta).
void fx_sql(fx* f, const char* sql);
// Appends one event; seq is assigned in order, ts = seq * 1000 ns.
void fx_alloc(fx* f, uint32_t tid, uint64_t addr, uint64_t size, uint32_t callsite);
void fx_event(fx* f, int kind, uint32_t tid, uint64_t addr, uint64_t size, uint32_t callsite);
void fx_free(fx* f, uint32_t tid, uint64_t addr);
// Writes the events as chunks (one run of chunks per thread, so readers must merge them)
// and finishes the capture with `status`.
void fx_finish(fx* f, const char* status);

// The standard scenario used by the leaks, stats and flamegraph tests; its truth is
// spelled out in fixture.c next to the events.
void fx_standard(const char* path);

// Hostile names (see fixture.c): function, file, thread names and command-line arguments
// that are invalid UTF-8, hold terminal escape sequences, or HTML that would run script.
// One block is live at the end per frame 2..7 (callsites 2..7, 100 * id bytes each).
void fx_hostile(const char* path);

// Adds to a finished capture the leak scan's verdicts on the blocks of seq 1..300, of every
// kind (1 + seq % 4), and says the scan complete.
void fx_leak_verdicts(const char* path);

// Runs a memreport subcommand in-process with a NULL-terminated argument list (argv[0] is
// the subcommand name), resetting getopt between runs. Returns its exit code.
int fx_run(int (*cmd)(int, char**), const char* arg0, ...);
// Reads a whole file (NULL when missing); the caller frees.
char* fx_read(const char* path);

#endif
