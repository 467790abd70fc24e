// SPDX-License-Identifier: MIT
// The flame graph's tree: the live rows of a profile (profile.h) merged into one node per
// (caller node, function name, relevance), physical frames expanded into their inlined
// functions; per-thread self values for a thread filter; a base run's tree grafted onto it
// for a differential flame graph; pruning of the nodes narrower than a threshold into their
// kept ancestors. Strings (names, modules, file:line) are
// interned into a table that the page ships as is. It never writes outputs.
#ifndef MR_FLAME_TREE_H
#define MR_FLAME_TREE_H

#include "profile.h"
#include "strtab.h"
#include "symbols.h"
#include "u64map.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define MR_FLAME_NO_STRING UINT32_MAX

typedef struct mr_flame_node {
    uint32_t parent;
    uint32_t name, module, loc; // string ids; MR_FLAME_NO_STRING = none
    bool relevant;
    uint64_t self_bytes, self_count, incl;
    // A differential tree (mr_flame_tree_add_base): the base run's values of the same path;
    // 0 in any other tree.
    uint64_t base_self_bytes, base_self_count, base_incl;
} mr_flame_node;

// Self bytes and blocks of one (node, thread slot), and a table of them keyed by both.
typedef struct mr_flame_self {
    uint32_t node, thread;
    uint64_t bytes, count;
} mr_flame_self;

typedef struct mr_flame_self_table {
    mr_u64map index; // node << 32 | thread -> row
    mr_flame_self* rows;
    size_t n, cap;
} mr_flame_self_table;

int mr_flame_tree_self_add(mr_flame_self_table* t, uint32_t node, uint32_t thread, uint64_t bytes,
                           uint64_t count);
void mr_flame_tree_self_free(mr_flame_self_table* t);

// The threads of the rows (with by_thread profiles): slot -> tid and bytes, and the self
// values per (node, slot).
typedef struct mr_flame_threads {
    mr_u64map index; // tid -> slot
    uint32_t* tids;
    uint64_t* bytes;
    size_t n, cap;
    mr_flame_self_table self;
} mr_flame_threads;

typedef struct mr_flame_tree {
    const mr_symbols* sym;
    mr_flame_node* nodes; // 0 is the root "all"; children come after their parent
    size_t n, cap;
    mr_u64map children;      // parent << 32 | name << 1 | relevant -> node index
    mr_strtab strings;       // the string table: id -> string, in the order first used
    uint32_t* node_of;       // callsite id -> leaf-most node of its frame; 0 = not yet resolved
    uint32_t* whole_node_of; // the same for stacks of noise frames only, drawn whole
    uint32_t ncallsites;
    uint64_t blocks; // live blocks in the tree
    bool diff;       // mr_flame_tree_add_base was called: the nodes carry base values
    uint64_t base_blocks;
    mr_flame_threads threads;
    bool split; // threads are kept
    // After mr_flame_tree_prune: the kept node each node folds into, the threshold in
    // bytes and the number of nodes merged away.
    uint32_t* target;
    uint64_t threshold;
    size_t nmerged;
} mr_flame_tree;

// The tree of the live rows of p (live_*: the profile's moment); with split (p built
// with by_thread), also per thread. Returns 0 or -ENOMEM.
int mr_flame_tree_build(mr_flame_tree* t, const mr_symbols* sym, const mr_profile* p, bool split);
// Grafts the (unpruned) tree of a base run onto g, a differential tree: each base node
// lands on g's node of the same path of (function name, relevance) from the root, made as
// needed, and adds its self values to that node's base values. Paths match by names only,
// never by address, so a run of the program built elsewhere matches. Returns 0 or -ENOMEM.
int mr_flame_tree_add_base(mr_flame_tree* g, const mr_flame_tree* base);
// Sums the inclusive bytes and folds the nodes below min_width of the total (and beyond
// the max_nodes widest) into their nearest kept ancestor; a node of a differential tree
// weighs the larger of its two runs' bytes. The self values of a folded node go to a node
// of its own function under that ancestor (at most max_nodes such nodes are added), under
// a node of the caller that holds them past the C++ standard library when that caller was
// folded too, so a function's self is the same in the pruned tree as in the whole one
// however the page shows the library. Returns 0 or -ENOMEM.
int mr_flame_tree_prune(mr_flame_tree* t, double min_width, size_t max_nodes);
void mr_flame_tree_free(mr_flame_tree* t);

#endif
