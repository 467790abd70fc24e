// SPDX-License-Identifier: MIT
// Two runs compared: the functions or stacks of a base run and of a new run, matched by
// keys made of strings (a function's name and file, a stack's function names outermost
// first), never by addresses, so a program rebuilt elsewhere still matches. Each matched
// key gets both runs' numbers; the rows sort by their largest change. Also the limits of
// `memreport diff --fail-if` (their grammar and their check). Pure computation on the
// entries it is given: it never reads a capture or symbols.
#ifndef MR_DIFF_H
#define MR_DIFF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

// The measures compared.
typedef enum mr_diff_metric {
    MR_DIFF_PEAK_BYTES,   // live at the run's own peak
    MR_DIFF_ALLOC_BYTES,  // allocated over the run
    MR_DIFF_ALLOCATIONS,  // number of allocations over the run
    MR_DIFF_LEAKED_BYTES, // still live at the end
    // Gate only (--fail-if): the program's blocks of one leak kind at the end, from a
    // capture's leak scan (docs/leaks.md). Not in rows.
    MR_DIFF_DEFINITELY_LOST_BYTES,
    MR_DIFF_INDIRECTLY_LOST_BYTES,
    MR_DIFF_POSSIBLY_LOST_BYTES,
    MR_DIFF_STILL_REACHABLE_BYTES,
    // Totals and gate only: the blocks the C runtime holds for itself at the end (stdout's
    // buffer, a thread's DTV: runtime_held.h), which leaked_bytes leaves out.
    MR_DIFF_RUNTIME_HELD_BYTES,
} mr_diff_metric;
#define MR_DIFF_NMETRICS 4 // the metrics of rows
#define MR_DIFF_NGATE 9    // the metrics --fail-if takes

// "peak_bytes", "allocated_bytes", "allocations", "leaked_bytes", "definitely_lost_bytes"...
const char* mr_diff_metric_name(mr_diff_metric m);
// True for the metrics counted in bytes (all but allocations).
bool mr_diff_metric_is_bytes(mr_diff_metric m);

enum { MR_DIFF_BASE = 0, MR_DIFF_NEW = 1 };

// One function or stack of one run: the strings naming it (a NULL part, a function without
// a file, is a value of its own) and its numbers. The strings belong to the caller.
typedef struct mr_diff_entry {
    const char* const* key;
    size_t nkey;
    uint64_t v[MR_DIFF_NMETRICS];
} mr_diff_entry;

typedef struct mr_diff_row {
    const char* const* key; // the base entry's key when it has one, else the new entry's
    size_t nkey;
    uint64_t v[2][MR_DIFF_NMETRICS]; // [MR_DIFF_BASE or MR_DIFF_NEW][metric]; 0 when absent
    bool in[2];                      // the run has an entry with this key
    uint64_t weight;                 // the sort key of mr_diff_sort's last call
} mr_diff_row;

typedef struct mr_diff {
    mr_diff_row* rows;
    size_t n;
} mr_diff;

// Matches the entries of both runs by key. Entries of one run with equal keys are summed
// into one (two callsites that show the same functions are one stack). The rows come out
// sorted by key. Returns 0 or -ENOMEM.
int mr_diff_match(const mr_diff_entry* base, size_t nbase, const mr_diff_entry* next, size_t nnext,
                  mr_diff* out);
void mr_diff_free(mr_diff* d);

// new - base, clamped to the range of int64_t.
int64_t mr_diff_delta(const mr_diff_row* r, mr_diff_metric m);

// Sorts the rows by the largest absolute change first. With by < 0 a row weighs its
// largest absolute delta among the byte metrics; else the absolute delta of metric `by`.
// Ties go to the larger absolute delta of allocations, then of each byte metric in turn,
// then to the smaller key: the order is total and the same on every machine.
void mr_diff_sort(mr_diff* d, int by);

// A limit of --fail-if: METRIC>VALUE (see mr_diff_limit_parse).
typedef enum mr_diff_limit_kind {
    MR_LIMIT_VALUE,   // NEW's value above the limit
    MR_LIMIT_GROWTH,  // new - base above the limit
    MR_LIMIT_PERCENT, // new - base above that percentage of base
} mr_diff_limit_kind;

typedef struct mr_diff_limit {
    mr_diff_metric metric;
    mr_diff_limit_kind kind;
    double amount; // bytes or allocations (VALUE, GROWTH), or the percentage (PERCENT)
    char text[64]; // the VALUE as written, for messages
} mr_diff_limit;

// Parses "METRIC>VALUE". Spaces around '>' and before a unit are allowed. VALUE is
//   N[UNIT]    NEW's value may not exceed N                (leaked_bytes>0)
//   +N[UNIT]   NEW may exceed base by at most N             (peak_bytes>+1MiB)
//   +N%        NEW may exceed base by at most N% of base    (peak_bytes>+5%); a base of
//              0 breaks it as soon as NEW is above 0
// N is digits with an optional fraction. UNIT, for byte metrics only: B, KiB, MiB, GiB,
// TiB (powers of 1024) or KB, MB, GB, TB (powers of 1000), case as written. Returns 0, or
// -EINVAL with what is wrong in err.
int mr_diff_limit_parse(const char* text, mr_diff_limit* out, char* err, size_t errlen);

// True when the totals break the limit; then msg says how, as "peak_bytes grew 7.2%
// (+1.1 MiB), limit +5%".
bool mr_diff_limit_broken(const mr_diff_limit* l, uint64_t base, uint64_t next, char* msg,
                          size_t msglen);

#endif
