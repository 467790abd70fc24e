// SPDX-License-Identifier: MIT
// What the export formats share (export.h): stacks as locations, root first.
#include "export.h"

#include "sites.h"

size_t mr_export_stack_locs(const mr_export_input* in, uint32_t leaf, const mr_symloc** out,
                            size_t max) {
    uint32_t frames[MR_SITES_MAX_DEPTH];
    size_t depth = mr_symbols_stack(in->sym, leaf, in->all_frames, frames, MR_SITES_MAX_DEPTH);
    if (depth > MR_SITES_MAX_DEPTH)
        depth = MR_SITES_MAX_DEPTH;
    // Count from the leaf, so that a stack deeper than max keeps its leaf-most locations.
    size_t total = 0;
    for (size_t i = 0; i < depth; i++) {
        const mr_symloc* locs;
        total += mr_symbols_frame_locs(in->sym, frames[i], &locs);
    }
    size_t skip = total > max ? total - max : 0, n = 0;
    for (size_t i = depth; i-- > 0;) {
        const mr_symloc* locs;
        size_t nl = mr_symbols_frame_locs(in->sym, frames[i], &locs);
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
