// SPDX-License-Identifier: MIT
// The flame graph of several processes: one tree whose root "all" has a frame per process
// (its label, e.g. "make -j2 (pid 123)"), each holding that process's own flame tree
// (flame_tree.h, built from its capture and symbols, and pruned on its own so that a small
// process keeps its frame and its detail), strings interned anew. Prune and render the
// result as any flame tree; it has no callsites and no threads.
#ifndef MR_FLAME_PROCS_H
#define MR_FLAME_PROCS_H

#include "flame_tree.h"

// An empty tree: its root "all". Returns 0 or -ENOMEM.
int mr_flame_procs_init(mr_flame_tree* g);
// Adds a frame `label` under the root and the kept nodes of `from` (pruned, or all when
// not) under it. Returns 0 or -ENOMEM.
int mr_flame_procs_add(mr_flame_tree* g, const char* label, const mr_flame_tree* from);

#endif
