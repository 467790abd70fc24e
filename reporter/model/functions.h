// SPDX-License-Identifier: MIT
// The function view of the aggregation model: a profile's rows (profile.h) summed per
// function, heaptrack's and memray's "self" and "total" (inclusive). A function is a name
// and a source file; inlined functions count as functions of their own. Over the
// locations a stack shows (symbols.h: frames leaf first, each expanded into its inlined
// functions, innermost first; noise frames hidden unless all_frames):
//   - self: the function of the leaf-most location;
//   - total: every function of the stack, counted once per stack even when recursive.
// A stack of noise frames only is shown whole (as sites.h names its site by its leaf
// frame); a row without a stack counts under "(no stack)". Unless all_frames, the
// allocation plumbing (sites.h: the C++ standard library) is passed as noise frames are:
// its locations are not shown where the stack has another function, whose self its bytes
// become. So the self values of every function add up to the profile's totals. Pure
// computation; it never reads the capture.
#ifndef MR_FUNCTIONS_H
#define MR_FUNCTIONS_H

#include "profile.h"
#include "symbols.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct mr_function {
    const char* name;           // lives as long as the mr_symbols
    const char* file;           // NULL without line info
    bool plumbing;              // allocation plumbing a stack passes (never with all_frames)
    uint64_t self[MR_NMETRICS]; // indexed by mr_metric
    uint64_t total[MR_NMETRICS];
} mr_function;

typedef struct mr_functions {
    mr_function* v; // the functions some stack shows, by name then file
    size_t n;
    bool passed; // some row's self passed the allocation plumbing to a caller
} mr_functions;

// Returns 0 or -ENOMEM.
int mr_functions_build(const mr_profile* p, const mr_symbols* sy, bool all_frames,
                       mr_functions* out);
void mr_functions_free(mr_functions* f);

// The index in f of the function (name, file), or -1 when no stack shows it.
ptrdiff_t mr_functions_find(const mr_functions* f, const char* name, const char* file);

// The frames a profile row's stack shows to the function view (the rules above), leaf
// first, into frames[0..MR_SITES_MAX_DEPTH) (sites.h); 0 for a row counted under
// MR_FUNCTIONS_NO_STACK. Their locations still include the plumbing, which a view that
// counts functions drops as mr_functions_pass says. For views that walk the same stacks
// (callgraph.h).
size_t mr_functions_stack(const mr_symbols* sy, uint32_t callsite, bool all_frames,
                          uint32_t* frames);
// Drops the plumbing from chain[0..n), a stack's functions (indexes of f) leaf first,
// unless it has nothing else, as the function view counts them. Returns the new n.
size_t mr_functions_pass(const mr_functions* f, uint32_t* chain, size_t n);
#define MR_FUNCTIONS_NO_STACK "(no stack)"

#endif
