// SPDX-License-Identifier: MIT
// What the export formats share (export.h): stacks as locations, root first.
#include "export.h"

#include "sites.h"

// The last process whose callsites start at or before `leaf`.
const mr_export_process* mr_export_process_of(const mr_export_input* in, uint32_t leaf) {
    size_t lo = 0, hi = in->nprocs; // procs[lo].first <= leaf < procs[hi].first
    while (hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2;
        if (in->procs[mid].first <= leaf)
            lo = mid;
        else
            hi = mid;
    }
    return &in->procs[lo];
}

size_t mr_export_stack_locs(const mr_export_input* in, uint32_t leaf, const mr_symloc** out,
                            size_t max) {
    const mr_symbols* sym = in->sym;
    size_t n = 0;
    if (in->nprocs && max) {
        const mr_export_process* p = mr_export_process_of(in, leaf);
        sym = p->sym;
        leaf -= p->first;
        out[n++] = &p->root;
        max--;
    }
    uint32_t frames[MR_SITES_MAX_DEPTH];
    size_t depth = mr_symbols_stack(sym, leaf, in->all_frames, frames, MR_SITES_MAX_DEPTH);
    if (depth > MR_SITES_MAX_DEPTH)
        depth = MR_SITES_MAX_DEPTH;
    // Count from the leaf, so that a stack deeper than max keeps its leaf-most locations.
    size_t total = 0;
    for (size_t i = 0; i < depth; i++) {
        const mr_symloc* locs;
        total += mr_symbols_frame_locs(sym, frames[i], &locs);
    }
    size_t skip = total > max ? total - max : 0;
    for (size_t i = depth; i-- > 0;) {
        const mr_symloc* locs;
        size_t nl = mr_symbols_frame_locs(sym, frames[i], &locs);
        for (size_t k = nl; k-- > 0;) {
            if (skip) {
                skip--;
                continue;
            }
            out[n++] = &locs[k];
        }
    }
    return n;
}
