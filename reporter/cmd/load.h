// SPDX-License-Identifier: MIT
// What a command reads through the model: each function says what is wrong on stderr
// ("memreport: FILE: ...") and returns 0 or memreport's exit code (messages.h).
#ifndef MR_LOAD_H
#define MR_LOAD_H

#include "aggregates.h"
#include "profile.h"
#include "symbols.h"

#include "memtrace/capture.h"

#include <stdbool.h>
#include <stdint.h>

// Opens a capture; on failure prints the reason and returns the exit code (2 or 3).
int mr_load_capture(const char* path, mt_capture** out);

// Opens a capture and loads its stacks and names (symbolizing it first if needed). Returns 0
// or an exit code after printing the reason; on failure nothing is left open.
int mr_load_capture_symbols(const char* path, mt_capture** cap, mr_symbols** sym);
// Loads an open capture's stacks and names (mr_symbols_load), printing what it says
// ("memreport: FILE: symbolized N frames", or why it failed). Returns 0 or an exit code.
int mr_load_symbols(mt_capture* cap, mr_symbols** sym);

// mr_profile_build for a command: on failure says why ("memreport: FILE: ...") and returns
// the exit code (3 out of memory, 2 a bad capture); 0 with *p built.
int mr_load_profile(const char* path, mt_capture* cap, const mr_query* q, mr_profile* p);

// mr_load_profile, with the blocks the C runtime holds at the end apart from the leaks
// (mr_runtime_held_apart): what every view but `leaks` (which shows them as a group of
// their own) counts as leaked.
int mr_load_program_profile(const char* path, mt_capture* cap, const mr_symbols* sym,
                            const mr_query* q, mr_profile* p);

// Of the blocks live at the end of a heap (its aggregates, aggregates.h), those the C runtime
// holds (runtime_held.h), their stacks read only when blocks are left. Returns 0, or an exit
// code after the reason.
int mr_load_runtime_held(mt_capture* cap, const mr_aggregates* a, uint64_t* bytes,
                         uint64_t* blocks);
// A heap's aggregates (read, or from a replay: aggregates.h), with a progress indicator
// labelled `progress` on a terminal. Returns 0, or an exit code after the reason.
int mr_load_aggregates(mt_capture* cap, int heap, const char* progress, mr_aggregates* a);

// The program's blocks live at the end per leak kind (docs/leaks.md), as `leaks` counts
// them (the C runtime's apart); *scanned false, and the totals 0, when the capture has no
// leak scan. Returns 0, or an exit code after the reason.
int mr_load_leak_totals(mt_capture* cap, bool* scanned, uint64_t* bytes, uint64_t* blocks);

#endif
