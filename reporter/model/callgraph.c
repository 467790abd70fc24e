// SPDX-License-Identifier: MIT
// The call graph (callgraph.h). Each row's stack becomes its list of functions, leaf
// first; each adjacent pair is a call, found in a map keyed by (caller, callee) and
// stamped with the row so a recursive stack adds to it once.
#include "callgraph.h"

#include "sites.h"
#include "u64map.h"

#include "memtrace/vec.h"

#include <errno.h>
#include <stdlib.h>

typedef struct builder {
    const mr_symbols* sy;
    const mr_functions* fns;
    bool all_frames;
    mr_u64map index; // (caller << 32 | callee) -> index in out->v
    uint64_t* stamp; // call -> 1 + the last row added to it
    size_t cap, stamp_cap;
    uint32_t* chain; // the functions of the row's stack, leaf first
    size_t chain_cap;
    uint32_t frames[MR_SITES_MAX_DEPTH];
} builder;

// The functions of a row's stack, leaf first, into b->chain. Returns their number or -ENOMEM.
static ptrdiff_t function_chain(builder* b, uint32_t callsite) {
    size_t n = mr_functions_stack(b->sy, callsite, b->all_frames, b->frames), len = 0;
    if (n == 0) {
        ptrdiff_t fn = mr_functions_find(b->fns, MR_FUNCTIONS_NO_STACK, NULL);
        if (fn < 0 || MT_VEC_RESERVE(&b->chain, &b->chain_cap, 1))
            return fn < 0 ? 0 : -ENOMEM;
        b->chain[0] = (uint32_t)fn;
        return 1;
    }
    for (size_t j = 0; j < n; j++) {
        const mr_symloc* locs;
        size_t nl = mr_symbols_frame_locs(b->sy, b->frames[j], &locs);
        if (MT_VEC_RESERVE(&b->chain, &b->chain_cap, len + nl))
            return -ENOMEM;
        for (size_t k = 0; k < nl; k++) {
            ptrdiff_t fn = mr_functions_find(b->fns, locs[k].function, locs[k].file);
            if (fn >= 0) // always, for functions built from the same rows
                b->chain[len++] = (uint32_t)fn;
        }
    }
    return (ptrdiff_t)mr_functions_pass(b->fns, b->chain, len);
}

// Adds row `i` to the call caller -> callee, once per row.
static int add_call(builder* b, mr_callgraph* out, uint32_t caller, uint32_t callee,
                    const mr_profile_row* r, size_t i) {
    uint64_t key = (uint64_t)caller << 32 | callee;
    uint64_t* at = mr_u64map_get(&b->index, key);
    size_t c = at ? (size_t)*at : out->n;
    if (!at) {
        if (MT_VEC_RESERVE(&out->v, &b->cap, out->n + 1) ||
            MT_VEC_RESERVE(&b->stamp, &b->stamp_cap, out->n + 1) ||
            mr_u64map_put(&b->index, key, c))
            return -ENOMEM;
        out->v[out->n++] = (mr_call){.caller = caller, .callee = callee};
        b->stamp[c] = 0;
    }
    if (b->stamp[c] == i + 1)
        return 0;
    b->stamp[c] = i + 1;
    for (int m = 0; m < MR_NMETRICS; m++)
        out->v[c].value[m] += mr_profile_row_value(r, (mr_metric)m);
    return 0;
}

static int cmp_calls(const void* a, const void* b) {
    const mr_call *x = a, *y = b;
    if (x->caller != y->caller)
        return x->caller < y->caller ? -1 : 1;
    return (x->callee > y->callee) - (x->callee < y->callee);
}

static int build(builder* b, const mr_profile* p, mr_callgraph* out) {
    if (mr_u64map_init(&b->index))
        return -ENOMEM;
    for (size_t i = 0; i < p->nrows; i++) {
        ptrdiff_t n = function_chain(b, p->rows[i].callsite);
        if (n < 0)
            return (int)n;
        for (ptrdiff_t j = 0; j < n; j++) {
            uint32_t caller = j + 1 < n ? b->chain[j + 1] : MR_CALLGRAPH_ROOT;
            if (add_call(b, out, caller, b->chain[j], &p->rows[i], i))
                return -ENOMEM;
        }
    }
    if (out->n > 1) // qsort must never see the NULL of an empty vector
        qsort(out->v, out->n, sizeof *out->v, cmp_calls);
    return 0;
}

int mr_callgraph_build(const mr_profile* p, const mr_symbols* sy, bool all_frames,
                       const mr_functions* fns, mr_callgraph* out) {
    *out = (mr_callgraph){0};
    builder* b = calloc(1, sizeof *b);
    if (!b)
        return -ENOMEM;
    *b = (builder){.sy = sy, .fns = fns, .all_frames = all_frames};
    int e = build(b, p, out);
    mr_u64map_free(&b->index);
    free(b->stamp);
    free(b->chain);
    free(b);
    if (e)
        mr_callgraph_free(out);
    return e;
}

void mr_callgraph_free(mr_callgraph* g) {
    free(g->v);
    *g = (mr_callgraph){0};
}
