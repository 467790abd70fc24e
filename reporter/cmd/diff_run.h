// SPDX-License-Identifier: MIT
// One side of memreport diff (cmd_diff.c): a capture, its numbers at its peak (the
// aggregation model: profile.h, functions.h) and the entries the diff matches, per function
// and per stack (model/diff.h).
#ifndef MR_DIFF_RUN_H
#define MR_DIFF_RUN_H

#include "diff.h"
#include "functions.h"
#include "profile.h"
#include "symbols.h"

#include "memtrace/capture.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

// One capture with its numbers and the entries the diff matches.
typedef struct mr_diff_run {
    const char* path;
    mt_capture* cap;
    mr_symbols* sy;
    mr_profile prof;
    mr_functions fns;
    bool npu;
    uint64_t held_bytes;       // what the C runtime holds for itself at the end (runtime_held.h)
    mr_diff_entry* fn_entries; // one per function with numbers: key (name, file name)
    const char** fn_keys;
    size_t nfns;
    mr_diff_entry* stack_entries; // one per profile row: key (functions, outermost first)
    size_t nstacks;
    char err[256]; // what went wrong computing the numbers, else a note (mr_profile_build)
} mr_diff_run;

// Computes the numbers of open captures (each run's cap, sy and path set) at their peaks
// (all_frames, inclusive: as diff's options), two at a time on two threads. An error is
// reported as if one run were read after the other: the first failed run's. Returns an
// exit code.
int mr_diff_run_numbers(mr_diff_run** runs, size_t n, bool all_frames, bool inclusive);
// Opens both captures, then computes their numbers at the same time (mr_diff_run_numbers:
// each on one of two threads). An error is reported as if one side were read after the other: the
// base run's first. Returns an exit code.
int mr_diff_run_open(mr_diff_run* base, mr_diff_run* next, const char* base_path,
                     const char* new_path, bool all_frames, bool inclusive);
// Frees what r holds, and closes its capture and symbols when set.
void mr_diff_run_close(mr_diff_run* r);
// A path's file name (after its last '/'); NULL for NULL.
const char* mr_diff_run_file_name(const char* file);

#endif
