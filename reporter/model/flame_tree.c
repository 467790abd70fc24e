// SPDX-License-Identifier: MIT
// The flame graph's merged tree (flame_tree.h).
#include "flame_tree.h"

#include "escape.h"
#include "sites.h"

#include "memtrace/vec.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// The id of a string in the page's string table. Strings are made valid UTF-8 first: JSON
// (and so the table and its index) holds nothing else.
static uint32_t intern(mr_flame_tree* g, const char* str) {
    char* s = str ? mr_escape(str, strlen(str), MR_ESCAPE_UTF8) : NULL;
    if (!s)
        return MR_FLAME_NO_STRING;
    uint32_t id;
    if (mr_strtab_intern(&g->strings, s, &id, NULL))
        id = MR_FLAME_NO_STRING;
    free(s);
    return id;
}

static int child(mr_flame_tree* g, uint32_t parent, uint32_t name, bool relevant, uint32_t* out) {
    uint64_t key = (uint64_t)parent << 32 | (uint64_t)name << 1 | relevant;
    const uint64_t* known = mr_u64map_get(&g->children, key);
    if (known) {
        *out = (uint32_t)*known;
        return 0;
    }
    if (MT_VEC_RESERVE(&g->nodes, &g->cap, g->n + 1))
        return -ENOMEM;
    uint32_t id = (uint32_t)g->n++;
    g->nodes[id] = (mr_flame_node){.parent = parent,
                                   .name = name,
                                   .module = MR_FLAME_NO_STRING,
                                   .loc = MR_FLAME_NO_STRING,
                                   .relevant = relevant};
    if (mr_u64map_put(&g->children, key, id))
        return -ENOMEM;
    *out = id;
    return 0;
}

// Appends the nodes of one physical frame under `parent`: the function, then the functions
// inlined into it, innermost last (the flame graph grows from caller to callee).
// `whole`: the frame of a stack shown whole (mr_symbols_noise_only), drawn relevant.
static int add_frame(mr_flame_tree* g, uint32_t parent, uint32_t frame, bool whole, uint32_t* out) {
    const mr_symloc* locs;
    size_t nl = mr_symbols_frame_locs(g->sym, frame, &locs);
    bool relevant = whole || mr_symbols_frame_relevant(g->sym, frame);
    uint32_t module = intern(g, mr_symbols_frame_module(g->sym, frame));
    for (size_t k = nl; k-- > 0;) {
        uint32_t id;
        if (child(g, parent, intern(g, locs[k].function), relevant, &id))
            return -ENOMEM;
        mr_flame_node* n = &g->nodes[id];
        if (n->loc == MR_FLAME_NO_STRING && locs[k].file) {
            char buf[1024];
            if (locs[k].line > 0)
                snprintf(buf, sizeof buf, "%s:%d", locs[k].file, locs[k].line);
            else
                snprintf(buf, sizeof buf, "%s", locs[k].file);
            n->loc = intern(g, buf);
        }
        if (n->module == MR_FLAME_NO_STRING)
            n->module = module;
        parent = id;
    }
    *out = parent;
    return 0;
}

// The node of a leaf callsite, creating the path from the root as needed.
static int resolve(mr_flame_tree* g, uint32_t callsite, uint32_t* out) {
    if (callsite == 0 || callsite >= g->ncallsites) {
        *out = 0;
        return 0;
    }
    // A stack of noise frames only is drawn whole, on nodes of its own: the same callsites
    // under a stack that has a relevant frame stay hidden there. The callers of such a
    // callsite have noise frames only too.
    bool whole = mr_symbols_noise_only(g->sym, callsite);
    uint32_t* node_of = whole ? g->whole_node_of : g->node_of;
    if (node_of[callsite]) {
        *out = node_of[callsite];
        return 0;
    }
    uint32_t path[MR_SITES_MAX_DEPTH];
    size_t n = 0;
    uint32_t cs = callsite;
    // Walk up to a resolved ancestor (or the root); bounded against parent cycles.
    while (cs && cs < g->ncallsites && !node_of[cs] && n < MR_SITES_MAX_DEPTH) {
        path[n++] = cs;
        cs = mr_symbols_parent(g->sym, cs);
    }
    uint32_t node = (cs && cs < g->ncallsites) ? node_of[cs] : 0;
    while (n-- > 0) {
        if (add_frame(g, node, mr_symbols_frame_of(g->sym, path[n]), whole, &node))
            return -ENOMEM;
        node_of[path[n]] = node;
    }
    *out = node;
    return 0;
}

void mr_flame_tree_self_free(mr_flame_self_table* t) {
    mr_u64map_free(&t->index);
    free(t->rows);
}

int mr_flame_tree_self_add(mr_flame_self_table* t, uint32_t node, uint32_t thread, uint64_t bytes,
                           uint64_t count) {
    uint64_t key = (uint64_t)node << 32 | thread;
    const uint64_t* row = mr_u64map_get(&t->index, key);
    if (!row) {
        if (MT_VEC_RESERVE(&t->rows, &t->cap, t->n + 1) || mr_u64map_put(&t->index, key, t->n))
            return -ENOMEM;
        t->rows[t->n] = (mr_flame_self){.node = node, .thread = thread};
        row = mr_u64map_get(&t->index, key);
        t->n++;
    }
    t->rows[*row].bytes += bytes;
    t->rows[*row].count += count;
    return 0;
}

static int thread_slot(mr_flame_threads* t, uint32_t tid, uint32_t* slot) {
    const uint64_t* known = mr_u64map_get(&t->index, tid);
    if (known) {
        *slot = (uint32_t)*known;
        return 0;
    }
    // Two arrays, one capacity: it grows once both have.
    size_t tids_cap = t->cap, bytes_cap = t->cap;
    if (MT_VEC_RESERVE(&t->tids, &tids_cap, t->n + 1) ||
        MT_VEC_RESERVE(&t->bytes, &bytes_cap, t->n + 1))
        return -ENOMEM;
    t->cap = tids_cap;
    *slot = (uint32_t)t->n;
    t->tids[t->n] = tid;
    t->bytes[t->n++] = 0;
    return mr_u64map_put(&t->index, tid, *slot);
}

// Adds the live rows to the tree. Rows come in callsite order, not in the order of a live
// map (keyed at random), so nodes and strings come out in the same order on every run.
static int collect(mr_flame_tree* g, const mr_profile* p) {
    for (size_t i = 0; i < p->nrows; i++) {
        const mr_profile_row* r = &p->rows[i];
        if (!r->live_blocks)
            continue;
        uint32_t node;
        if (resolve(g, r->callsite, &node))
            return -ENOMEM;
        g->nodes[node].self_bytes += r->live_bytes;
        g->nodes[node].self_count += r->live_blocks;
        g->blocks += r->live_blocks;
        if (g->split) {
            mr_flame_threads* t = &g->threads;
            uint32_t slot;
            if (thread_slot(t, r->tid, &slot) ||
                mr_flame_tree_self_add(&t->self, node, slot, r->live_bytes, r->live_blocks))
                return -ENOMEM;
            t->bytes[slot] += r->live_bytes;
        }
    }
    return 0;
}

static int cmp_u64_desc(const void* a, const void* b) {
    uint64_t x = *(const uint64_t*)a, y = *(const uint64_t*)b;
    return x < y ? 1 : x > y ? -1 : 0;
}

// The width below which nodes fold: min_width of the total, raised so that at most
// max_nodes stay. Returns 0 or -ENOMEM.
// A node's width for pruning: in a differential tree, the wider of its two runs.
static uint64_t width_of(const mr_flame_node* n) {
    return n->base_incl > n->incl ? n->base_incl : n->incl;
}

static int threshold_of(const mr_flame_tree* g, double min_width, size_t max_nodes, uint64_t* out) {
    uint64_t threshold = (uint64_t)ceil(min_width * (double)width_of(&g->nodes[0]));
    if (max_nodes && g->n > max_nodes) {
        uint64_t* v = malloc(g->n * sizeof *v);
        if (!v)
            return -ENOMEM;
        for (size_t i = 0; i < g->n; i++)
            v[i] = width_of(&g->nodes[i]);
        qsort(v, g->n, sizeof *v, cmp_u64_desc);
        if (v[max_nodes - 1] + 1 > threshold)
            threshold = v[max_nodes - 1] + 1;
        free(v);
    }
    *out = threshold ? threshold : 1; // empty subtrees (threads filtered out elsewhere) go
    return 0;
}

// The node under `anc` that holds the self values of the folded node i: one per (kept
// ancestor, function name, relevance), so the bytes a function allocated stay that
// function's in every view the page derives from the tree (its inverted graph and its
// Functions tab give top's self). Returns 0 or -ENOMEM.
static int folded_leaf(mr_flame_tree* g, mr_u64map* leaves, uint32_t** target, size_t* cap,
                       uint32_t anc, uint32_t i, uint32_t* out) {
    const mr_flame_node* n = &g->nodes[i];
    uint64_t key = (uint64_t)anc << 32 | (uint64_t)n->name << 1 | n->relevant;
    const uint64_t* known = mr_u64map_get(leaves, key);
    if (known) {
        *out = (uint32_t)*known;
        return 0;
    }
    if (MT_VEC_RESERVE(&g->nodes, &g->cap, g->n + 1) || MT_VEC_RESERVE(target, cap, g->n + 1))
        return -ENOMEM;
    uint32_t id = (uint32_t)g->n++;
    n = &g->nodes[i];
    g->nodes[id] = (mr_flame_node){.parent = anc,
                                   .name = n->name,
                                   .module = n->module,
                                   .loc = n->loc,
                                   .relevant = n->relevant};
    (*target)[id] = id;
    *out = id;
    return mr_u64map_put(leaves, key, id);
}

// The caller a folded node i's bytes are the self of where the page hides noise frames
// and passes the C++ standard library (mr_sites_is_plumbing) as top does: the nearest
// ancestor below anc that is relevant and not plumbing, when i is noise or plumbing (else
// none: UINT32_MAX). Its node keeps them that function's however the page hides frames.
static uint32_t holding_caller(const mr_flame_tree* g, uint32_t anc, uint32_t i) {
    for (uint32_t k = i; k != anc; k = g->nodes[k].parent) {
        const mr_flame_node* n = &g->nodes[k];
        bool p = n->name != MR_FLAME_NO_STRING &&
                 mr_sites_is_plumbing(mr_strtab_get(&g->strings, n->name));
        if (n->relevant && !p)
            return k != i ? k : UINT32_MAX;
    }
    return UINT32_MAX;
}

// Nodes below the threshold fold into their nearest kept ancestor, and the self values of
// each into a node of its function under that ancestor (folded_leaf), under a node of the
// caller that holds them past noise and the C++ standard library (holding_caller) if need be.
// Children always come after their parent in g->nodes, so one backward pass sums and one
// forward pass decides.
int mr_flame_tree_prune(mr_flame_tree* g, double min_width, size_t max_nodes) {
    for (size_t i = 0; i < g->n; i++) {
        g->nodes[i].incl = g->nodes[i].self_bytes;
        g->nodes[i].base_incl = g->nodes[i].base_self_bytes;
    }
    for (size_t i = g->n; i-- > 1;) {
        g->nodes[g->nodes[i].parent].incl += g->nodes[i].incl;
        g->nodes[g->nodes[i].parent].base_incl += g->nodes[i].base_incl;
    }
    if (threshold_of(g, min_width, max_nodes, &g->threshold))
        return -ENOMEM;
    // A temporal page's tree holds, per callsite, the most it held at any moment: a node
    // that holds bytes at some moment has self values here.
    size_t n0 = g->n, cap = n0;
    uint32_t* target = malloc(cap * sizeof *target);
    uint32_t* anc = malloc(n0 * sizeof *anc);
    mr_u64map leaves;
    int e = mr_u64map_init(&leaves);
    if (!target || !anc || e) {
        e = -ENOMEM;
        goto out;
    }
    size_t kept = 1;
    target[0] = anc[0] = 0;
    for (size_t i = 1; i < n0; i++) {
        const mr_flame_node* n = &g->nodes[i];
        bool keep = width_of(n) >= g->threshold && anc[n->parent] == n->parent;
        anc[i] = keep ? (uint32_t)i : anc[n->parent];
        target[i] = anc[i];
        kept += keep;
    }
    for (size_t i = 1; i < n0 && !e; i++) {
        if (anc[i] == i || (!g->nodes[i].self_count && !g->nodes[i].base_self_count))
            continue;
        // Within max_nodes nodes in all, the page's bound; past it, the rest fold into their
        // kept ancestor itself.
        uint32_t into_id = anc[i], under = anc[i];
        uint32_t caller = holding_caller(g, anc[i], (uint32_t)i);
        size_t used = kept + (g->n - n0);
        if (caller != UINT32_MAX && max_nodes && used + 1 >= max_nodes)
            caller = UINT32_MAX; // no room for two
        if (caller != UINT32_MAX)
            e = folded_leaf(g, &leaves, &target, &cap, anc[i], caller, &under);
        if (!e && (!max_nodes || used < max_nodes))
            e = folded_leaf(g, &leaves, &target, &cap, under, (uint32_t)i, &into_id);
        target[i] = into_id;
        const mr_flame_node* n = &g->nodes[i];
        mr_flame_node* into = &g->nodes[into_id];
        into->self_bytes += n->self_bytes;
        into->self_count += n->self_count;
        into->base_self_bytes += n->base_self_bytes;
        into->base_self_count += n->base_self_count;
    }
    if (!e) {
        free(g->target);
        g->target = target;
        target = NULL;
        g->nmerged = n0 - kept;
    }
out:
    free(target);
    free(anc);
    mr_u64map_free(&leaves);
    return e;
}

// An empty tree: its root "all", the callsite -> node table and the string table.
static int init(mr_flame_tree* g) {
    g->ncallsites = mr_symbols_callsite_count(g->sym);
    g->cap = 1024;
    g->nodes = calloc(g->cap, sizeof *g->nodes);
    g->node_of = calloc((size_t)g->ncallsites + 1, sizeof *g->node_of);
    g->whole_node_of = calloc((size_t)g->ncallsites + 1, sizeof *g->whole_node_of);
    if (!g->nodes || !g->node_of || !g->whole_node_of || mr_strtab_init(&g->strings) ||
        mr_u64map_init(&g->children) || mr_u64map_init(&g->threads.index) ||
        mr_u64map_init(&g->threads.self.index))
        return -ENOMEM;
    g->n = 1;
    g->nodes[0] = (mr_flame_node){.name = intern(g, "all"),
                                  .module = MR_FLAME_NO_STRING,
                                  .loc = MR_FLAME_NO_STRING,
                                  .relevant = true};
    return 0;
}

int mr_flame_tree_build(mr_flame_tree* g, const mr_symbols* sym, const mr_profile* p, bool split) {
    *g = (mr_flame_tree){.sym = sym, .split = split};
    int e = init(g);
    return e ? e : collect(g, p);
}

// The id in g's table of a string of another tree's table.
static uint32_t intern_from(mr_flame_tree* g, const mr_flame_tree* other, uint32_t id) {
    return id == MR_FLAME_NO_STRING ? id : intern(g, mr_strtab_get(&other->strings, id));
}

int mr_flame_tree_add_base(mr_flame_tree* g, const mr_flame_tree* base) {
    uint32_t* into = malloc((base->n ? base->n : 1) * sizeof *into);
    if (!into)
        return -ENOMEM;
    g->diff = true;
    g->base_blocks = base->blocks;
    into[0] = 0;
    // Parents come before their children in base->nodes: each parent is placed already.
    for (size_t i = 0; i < base->n; i++) {
        const mr_flame_node* b = &base->nodes[i];
        if (i > 0) {
            uint32_t name = intern_from(g, base, b->name); // no name is a name, as in add_frame
            if (child(g, into[b->parent], name, b->relevant, &into[i])) {
                free(into);
                return -ENOMEM;
            }
        }
        mr_flame_node* n = &g->nodes[into[i]];
        if (n->module == MR_FLAME_NO_STRING)
            n->module = intern_from(g, base, b->module);
        if (n->loc == MR_FLAME_NO_STRING)
            n->loc = intern_from(g, base, b->loc);
        n->base_self_bytes += b->self_bytes;
        n->base_self_count += b->self_count;
    }
    free(into);
    return 0;
}

void mr_flame_tree_free(mr_flame_tree* g) {
    free(g->nodes);
    free(g->node_of);
    free(g->whole_node_of);
    free(g->target);
    mr_u64map_free(&g->children);
    mr_strtab_free(&g->strings);
    mr_u64map_free(&g->threads.index);
    mr_flame_tree_self_free(&g->threads.self);
    free(g->threads.tids);
    free(g->threads.bytes);
    memset(g, 0, sizeof *g);
}
