// SPDX-License-Identifier: MIT
// The leak kinds of the blocks live at the end of a capture (docs/leaks.md): the verdicts
// of the tracer's leak scan (the leak table), summed per callsite and kind. A capture
// without a scan has none, and says why. Reads the capture; classifies nothing itself.
#ifndef MR_LEAK_KINDS_H
#define MR_LEAK_KINDS_H

#include "symbols.h"
#include "u64map.h"

#include "memtrace/capture.h"
#include "memtrace/schema.h"

#include <stdbool.h>
#include <stdint.h>

typedef struct mr_leak_kinds {
    bool scanned;  // the capture holds the scan's verdicts
    char why[256]; // else why not
    uint32_t ncallsites;
    // Per callsite c (0..ncallsites, ids beyond the stack table counted as 0) and kind k
    // (MT_LEAK_*): bytes[c * MT_LEAK_COUNT_ + k]. Kind 0 is left 0: what is live at the end
    // without a verdict is the profile's end minus these.
    uint64_t* bytes;
    uint64_t* blocks;
    uint64_t total_bytes[MT_LEAK_COUNT_], total_blocks[MT_LEAK_COUNT_];
} mr_leak_kinds;

// Table derived's key for the whole run's sums: kind 4 in the top byte, no parameter.
int64_t mr_leak_kinds_key(void);

// Whether the capture's leak scan ran to its end (its verdicts can be read); else why not,
// in words, into why.
bool mr_leak_kinds_scan_complete(mt_capture* cap, char* why, size_t whylen);
// Reads the verdicts of heap `heap`'s blocks, summed. 0 (err: empty, or the note of damaged
// stored sums, counted anew), or a negative errno with the reason in err (a damaged table
// is -EPROTO).
int mr_leak_kinds_load(mt_capture* cap, int heap, uint32_t ncallsites, mr_leak_kinds* out,
                       char* err, size_t errlen);
// The same, of the blocks allocated between from and to (ns, or steps) only.
int mr_leak_kinds_load_range(mt_capture* cap, int heap, uint32_t ncallsites, int64_t from,
                             int64_t to, mr_leak_kinds* out, char* err, size_t errlen);
void mr_leak_kinds_free(mr_leak_kinds* k);
// Every sum back to 0 (the arrays kept).
void mr_leak_kinds_clear(mr_leak_kinds* k);
// The verdicts alone, allocation seq -> kind, into an initialised map (empty without a scan).
// 0, -ENOMEM, or -EPROTO for a damaged table.
int mr_leak_kinds_verdicts_load(mt_capture* cap, mr_u64map* out);

// Whether the capture says its leak scan did not run, and why into why[len] (docs/leaks.md:
// a process that ended unseen, MEMTRACE_LEAKS=0...). A capture made before the scan existed
// says nothing: false.
bool mr_leak_kinds_scan_skipped(mt_capture* cap, char* why, size_t len);

// The totals per kind of the program's blocks: those of callsites the C runtime holds
// (runtime_held.h) left out, as `leaks` shows them apart.
void mr_leak_kinds_program(const mr_leak_kinds* k, const mr_symbols* s,
                           uint64_t bytes[MT_LEAK_COUNT_], uint64_t blocks[MT_LEAK_COUNT_]);

// The kind a word names: memcheck's --show-leak-kinds words (definite, indirect, possible,
// reachable) or the kinds' own names (definitely_lost...); 0 if none.
int mr_leak_kinds_parse(const char* word);
// A comma list of such words, or "all", as a mask of bits 1 << kind. 0 and the bad word in
// *bad when one is not a kind.
unsigned mr_leak_kinds_mask(const char* list, char* bad, size_t badlen);

#endif
