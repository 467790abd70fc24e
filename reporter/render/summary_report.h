// SPDX-License-Identifier: MIT
// The report of `memreport summary`: the totals of a capture's heap (status, counts,
// peak, leaks, calls per entry point) with what the capture says of its process or NPU
// log, as text for people or JSON for scripts. Reads the capture's meta and call counts;
// never replays anything itself.
#ifndef MR_SUMMARY_REPORT_H
#define MR_SUMMARY_REPORT_H

#include "replay.h"
#include "report.h"

#include "memtrace/capture.h"
#include "memtrace/schema.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct mr_summary {
    mt_capture* cap;
    const mr_heap_totals* totals; // of the heap reported, at its end
    size_t threads;               // distinct thread ids of the events
    // Of the blocks live at the end, those the C runtime holds for itself (runtime_held.h);
    // a native capture only.
    bool runtime_held;
    uint64_t held_bytes, held_blocks;
    // The mmap heap's totals (MEMTRACE_MMAP=1), when the capture has one and the report is
    // of another heap; else NULL. With them the capture's file mappings (meta).
    const mr_heap_totals* mmap;
    // The leak scan's kinds of the program's blocks live at the end (docs/leaks.md), when
    // the capture has one.
    bool scanned;
    uint64_t kind_bytes[MT_LEAK_COUNT_], kind_blocks[MT_LEAK_COUNT_];
    // Else why the capture's scan did not run, as it says (NULL: a capture made before it).
    const char* no_scan;
    // A process with a python or pool heap: its libc heap, CPython's allocators and the
    // blocks of the program's own pool (memtrace.h; named pool_name), each when the capture
    // has it and the report is of another heap (else NULL), and the heaps together (else
    // NULL).
    const mr_heap_totals* libc;
    const mr_heap_totals* python;
    const mr_heap_totals* pool;
    const char* pool_name;
    const mr_heap_totals* total;
    const char* total_of; // which heaps total adds up ("libc and python")
} mr_summary;

// Writes the report. Returns 0 or an exit code (after printing the reason).
int mr_summary_report_write(const mr_report_to* to, const mr_summary* s);

#endif
