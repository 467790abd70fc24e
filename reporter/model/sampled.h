// SPDX-License-Identifier: MIT
// Which of the captures this run of memreport opened were sampled (MEMTRACE_SAMPLE_BYTES),
// so that every report says its figures are estimates through one shared line (render/json.c
// for the text and JSON reports, the flame graph page, the plot's title) instead of each
// report's own code. The weights themselves are applied by the event reader
// (memtrace/sampling.h). Process-wide; a handful of captures at most.
#ifndef MR_SAMPLED_H
#define MR_SAMPLED_H

#include "memtrace/capture.h"

#include <stddef.h>
#include <stdint.h>

// Notes cap if its meta says it is sampled (once per path). Called where captures are opened.
void mr_sampled_note(mt_capture* cap);
// How many sampled captures were noted.
size_t mr_sampled_count(void);
// The i-th sampled capture: its path and mean interval in bytes.
void mr_sampled_get(size_t i, const char** path, uint64_t* sample_bytes);
// The lines that say it, without a newline: "sampled: Poisson by bytes, mean interval
// 512.00 KiB (bytes are estimates; counts are of sampled allocations)"; with several
// captures opened, the capture's name first, or one line "K of M captures" when all the
// sampled ones have the same interval.
size_t mr_sampled_lines(void);
void mr_sampled_line(size_t i, char* buf, size_t len);

#endif
