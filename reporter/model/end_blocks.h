// SPDX-License-Identifier: MIT
// The blocks live at the end of a heap's run, each with its callsite, size, the time it was
// allocated and the leak scan's verdict, stored in table `derived` when first asked
// (docs/capture-format.md, "Derived", kind 3), so that the leaks of a time range (the
// blocks allocated within it and never freed: memreport leaks --range, top --range on the
// bytes live at the end, and their leak kinds) read them instead of every event. Used only
// where the aggregates are (never with --replay).
#ifndef MR_END_BLOCKS_H
#define MR_END_BLOCKS_H

#include "leak_kinds.h"
#include "profile.h"

#include "memtrace/capture.h"

#include <stddef.h>
#include <stdint.h>

#define MR_END_BLOCKS_FORMAT 2
// Table derived's key: kind 3 in the top byte, no parameter.
int64_t mr_end_blocks_key(void);

// Per callsite, the bytes and blocks live at the end that were allocated at from <= ts <=
// to: rows (end_* and live_* set, tid 0) by callsite in *rows (malloc'd) and *n. Read when
// stored for these events, else computed by one replay and stored. Returns 0 (err: empty, or
// the note of damaged stored blocks, replaced), 1 when they are neither stored nor storable
// (a capture memreport may not write, --replay: the caller replays), or a negative errno
// with the reason in err.
int mr_end_blocks_in_range(mt_capture* cap, int heap, int64_t from, int64_t to,
                           mr_profile_row** rows, size_t* n, char* err, size_t errlen);
// The same blocks summed per callsite and kind into *kinds (its arrays allocated and zeroed,
// ncallsites set; scanned and why left as they are). Returns as mr_end_blocks_in_range.
int mr_end_blocks_kinds_in_range(mt_capture* cap, int heap, int64_t from, int64_t to,
                                 mr_leak_kinds* kinds, char* err, size_t errlen);

#endif
