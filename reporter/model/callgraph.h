// SPDX-License-Identifier: MIT
// The calls between the functions of the function view (functions.h), weighted by a
// profile: for each caller -> callee pair, the metrics of the stacks that show that call,
// heaptrack's caller and callee lists. A call is two adjacent locations of a stack as the
// function view sees it (inlined functions included, noise frames hidden unless
// all_frames); a stack counts once for a pair even when recursion shows the pair twice.
// A stack's outermost function is called by MR_CALLGRAPH_ROOT. So, without recursion, the
// callers of a function add up to its total, and so do its callees plus its self. Pure
// computation; it never reads the capture.
#ifndef MR_CALLGRAPH_H
#define MR_CALLGRAPH_H

#include "functions.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define MR_CALLGRAPH_ROOT UINT32_MAX // the caller of a stack's outermost function

typedef struct mr_call {
    uint32_t caller, callee;     // indexes into the mr_functions (caller may be the root)
    uint64_t value[MR_NMETRICS]; // indexed by mr_metric
} mr_call;

typedef struct mr_callgraph {
    mr_call* v; // by caller, then callee
    size_t n;
} mr_callgraph;

// fns: mr_functions_build of the same profile, symbols and all_frames. Returns 0 or -ENOMEM.
int mr_callgraph_build(const mr_profile* p, const mr_symbols* sy, bool all_frames,
                       const mr_functions* fns, mr_callgraph* out);
void mr_callgraph_free(mr_callgraph* g);

#endif
