// SPDX-License-Identifier: MIT
// The flow graph (flowgraph.h). Lines are told apart by their strings: the function and
// file names get ids from an interned-string table, and (function, file, line) an id
// through two maps keyed on those ids. Each stack added gets a serial number; a line or an
// edge stamped with it already is not counted again (recursion counts once per stack).
#include "flowgraph.h"

#include "strtab.h"
#include "u64map.h"

#include "memtrace/vec.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

typedef struct edge {
    uint32_t from, to; // caller, callee line ids
} edge;

struct mr_flow_build {
    mr_strtab names;      // function and file names
    mr_u64map name_pairs; // function id << 32 | (file id + 1) -> pair id
    mr_u64map line_ids;   // pair id << 32 | line -> line id
    uint32_t npairs;
    size_t lines_cap, local_cap, cumulative_cap;
    uint64_t* line_stamp; // line -> serial of the last stack counted in its cumulative
    size_t stamp_cap;
    mr_u64map edge_ids; // from << 32 | to -> edge id
    edge* edges;
    uint64_t* edge_bytes; // [edge * nt + t]
    uint64_t* edge_stamp;
    size_t nedges, edges_cap, edge_bytes_cap, edge_stamp_cap;
    uint64_t serial;
};

int mr_flowgraph_init(mr_flow* g, size_t nt) {
    *g = (mr_flow){.nt = nt};
    g->b = calloc(1, sizeof *g->b);
    g->stack_bytes = calloc(nt, sizeof *g->stack_bytes);
    if (!g->b || !g->stack_bytes || mr_strtab_init(&g->b->names) ||
        mr_u64map_init(&g->b->name_pairs) || mr_u64map_init(&g->b->line_ids) ||
        mr_u64map_init(&g->b->edge_ids)) {
        mr_flowgraph_free(g);
        return -ENOMEM;
    }
    return 0;
}

static void free_build(mr_flow_build* b) {
    if (!b)
        return;
    mr_strtab_free(&b->names);
    mr_u64map_free(&b->name_pairs);
    mr_u64map_free(&b->line_ids);
    mr_u64map_free(&b->edge_ids);
    free(b->line_stamp);
    free(b->edges);
    free(b->edge_bytes);
    free(b->edge_stamp);
    free(b);
}

void mr_flowgraph_free(mr_flow* g) {
    free_build(g->b);
    for (size_t i = 0; i < g->nboxes; i++) {
        free(g->boxes[i].lines);
        free(g->boxes[i].local);
    }
    for (size_t i = 0; i < g->nlinks; i++)
        free(g->links[i].bytes);
    free(g->boxes);
    free(g->links);
    free(g->lines);
    free(g->local);
    free(g->cumulative);
    free(g->stack_bytes);
    free(g->total);
    free(g->hidden_local);
    *g = (mr_flow){0};
}

// A map lookup that adds key -> *next (then increments *next) when the key is new.
static int map_id(mr_u64map* m, uint64_t key, uint32_t* next, uint32_t* id, bool* added) {
    uint64_t* v = mr_u64map_get(m, key);
    *added = !v;
    if (v) {
        *id = (uint32_t)*v;
        return 0;
    }
    if (mr_u64map_put(m, key, *next))
        return -ENOMEM;
    *id = (*next)++;
    return 0;
}

int mr_flowgraph_line_id(mr_flow* g, const char* function, const char* file, int line,
                         uint32_t* id) {
    mr_flow_build* b = g->b;
    uint32_t fn, fl = MR_STRTAB_NONE, pair, next = (uint32_t)g->nlines;
    bool added;
    if (mr_strtab_intern(&b->names, function, &fn, NULL) ||
        (file && mr_strtab_intern(&b->names, file, &fl, NULL)))
        return -ENOMEM;
    uint64_t pair_key = (uint64_t)fn << 32 | (uint32_t)(fl + 1);
    if (map_id(&b->name_pairs, pair_key, &b->npairs, &pair, &added) ||
        map_id(&b->line_ids, (uint64_t)pair << 32 | (uint32_t)line, &next, id, &added))
        return -ENOMEM;
    if (!added)
        return 0;
    size_t n = g->nlines + 1;
    if (MT_VEC_RESERVE(&g->lines, &b->lines_cap, n) ||
        MT_VEC_RESERVE(&b->line_stamp, &b->stamp_cap, n) ||
        MT_VEC_RESERVE(&g->local, &b->local_cap, n * g->nt) ||
        MT_VEC_RESERVE(&g->cumulative, &b->cumulative_cap, n * g->nt))
        return -ENOMEM;
    g->lines[g->nlines] = (mr_flow_line){function, file, line};
    b->line_stamp[g->nlines] = 0;
    memset(&g->local[g->nlines * g->nt], 0, g->nt * sizeof *g->local);
    memset(&g->cumulative[g->nlines * g->nt], 0, g->nt * sizeof *g->cumulative);
    g->nlines = n;
    return 0;
}

// Adds bytes to the call from -> to at moment t, once per stack.
static int add_edge(mr_flow* g, uint32_t from, uint32_t to, size_t t, uint64_t bytes) {
    mr_flow_build* b = g->b;
    uint32_t id, next = (uint32_t)b->nedges;
    bool added;
    if (map_id(&b->edge_ids, (uint64_t)from << 32 | to, &next, &id, &added))
        return -ENOMEM;
    if (added) {
        size_t n = b->nedges + 1;
        if (MT_VEC_RESERVE(&b->edges, &b->edges_cap, n) ||
            MT_VEC_RESERVE(&b->edge_stamp, &b->edge_stamp_cap, n) ||
            MT_VEC_RESERVE(&b->edge_bytes, &b->edge_bytes_cap, n * g->nt))
            return -ENOMEM;
        b->edges[id] = (edge){from, to};
        b->edge_stamp[id] = 0;
        memset(&b->edge_bytes[id * g->nt], 0, g->nt * sizeof *b->edge_bytes);
        b->nedges = n;
    }
    if (b->edge_stamp[id] != b->serial) {
        b->edge_stamp[id] = b->serial;
        b->edge_bytes[id * g->nt + t] += bytes;
    }
    return 0;
}

int mr_flowgraph_add_stack(mr_flow* g, size_t t, const uint32_t* lines, size_t n, uint64_t bytes) {
    mr_flow_build* b = g->b;
    if (n == 0 || t >= g->nt)
        return 0;
    b->serial++;
    g->stack_bytes[t] += bytes;
    g->local[lines[0] * g->nt + t] += bytes;
    for (size_t i = 0; i < n; i++) {
        if (b->line_stamp[lines[i]] != b->serial) {
            b->line_stamp[lines[i]] = b->serial;
            g->cumulative[lines[i] * g->nt + t] += bytes;
        }
        if (i + 1 < n && add_edge(g, lines[i + 1], lines[i], t, bytes))
            return -ENOMEM;
    }
    return 0;
}

// ---- what is drawn

typedef struct finish {
    mr_flow* g;
    const uint64_t* total;
    double min_share;
    bool* shown_line;             // [line]
    bool* shown_edge;             // [edge]
    uint32_t *outs, *ins;         // shown edges out of and into each line, self-calls included
    uint32_t *only_out, *only_in; // the other end when there is one
    uint32_t* merge_next;         // line -> the line merged under it, or UINT32_MAX
    uint32_t* box_of;             // line -> box, or UINT32_MAX
} finish;

static bool big_enough(const finish* f, const uint64_t* v) {
    for (size_t t = 0; t < f->g->nt; t++)
        if (v[t] && (double)v[t] >= f->min_share * (double)f->total[t])
            return true;
    return false;
}

static bool allocates(const mr_flow* g, uint32_t line) {
    for (size_t t = 0; t < g->nt; t++)
        if (g->local[line * g->nt + t])
            return true;
    return false;
}

static void choose_shown(finish* f) {
    mr_flow* g = f->g;
    mr_flow_build* b = g->b;
    for (size_t i = 0; i < g->nlines; i++) {
        f->shown_line[i] = big_enough(f, &g->cumulative[i * g->nt]);
        if (!f->shown_line[i])
            for (size_t t = 0; t < g->nt; t++)
                g->hidden_local[t] += g->local[i * g->nt + t];
    }
    for (size_t e = 0; e < b->nedges; e++) {
        const edge* x = &b->edges[e];
        f->shown_edge[e] = f->shown_line[x->from] && f->shown_line[x->to] &&
                           big_enough(f, &b->edge_bytes[e * g->nt]);
        if (!f->shown_edge[e])
            continue;
        f->outs[x->from]++;
        f->only_out[x->from] = x->to;
        f->ins[x->to]++;
        f->only_in[x->to] = x->from;
    }
}

// A line merges the one it calls when it allocates nothing, calls only that line, and that
// line has no other caller.
static void find_chains(finish* f) {
    mr_flow* g = f->g;
    for (uint32_t i = 0; i < g->nlines; i++) {
        f->merge_next[i] = UINT32_MAX;
        if (!f->shown_line[i] || f->outs[i] != 1 || allocates(g, i))
            continue;
        uint32_t to = f->only_out[i];
        if (to != i && f->ins[to] == 1)
            f->merge_next[i] = to;
    }
}

static int new_box(finish* f, mr_flow_box* box, uint32_t top) {
    mr_flow* g = f->g;
    *box = (mr_flow_box){0};
    box->local = calloc(2 * g->nt, sizeof *box->local);
    if (!box->local)
        return -ENOMEM;
    box->cumulative = box->local + g->nt;
    size_t cap = 0;
    for (uint32_t l = top; l != UINT32_MAX && f->box_of[l] == UINT32_MAX; l = f->merge_next[l]) {
        if (MT_VEC_RESERVE(&box->lines, &cap, box->nlines + 1))
            return -ENOMEM;
        box->lines[box->nlines++] = l;
        f->box_of[l] = (uint32_t)g->nboxes; // stops a walk that would come back (a cycle)
        for (size_t t = 0; t < g->nt; t++)
            box->local[t] += g->local[l * g->nt + t];
    }
    for (size_t t = 0; t < g->nt; t++) {
        box->cumulative[t] = g->cumulative[top * g->nt + t];
        double s = f->total[t] ? (double)box->cumulative[t] / (double)f->total[t] : 0;
        box->share = s > box->share ? s : box->share;
    }
    return 0;
}

// Boxes from the heads of chains (a shown line no other line merges), then any line left
// (those of a cycle of merges, which stay apart).
static int make_boxes(finish* f) {
    mr_flow* g = f->g;
    bool* merged = calloc(g->nlines ? g->nlines : 1, sizeof *merged);
    g->boxes = calloc(g->nlines ? g->nlines : 1, sizeof *g->boxes);
    if (!merged || !g->boxes) {
        free(merged);
        return -ENOMEM;
    }
    for (uint32_t i = 0; i < g->nlines; i++) {
        f->box_of[i] = UINT32_MAX;
        if (f->merge_next[i] != UINT32_MAX)
            merged[f->merge_next[i]] = true;
    }
    int e = 0;
    for (int pass = 0; pass < 2 && !e; pass++)
        for (uint32_t i = 0; i < g->nlines && !e; i++) {
            if (!f->shown_line[i] || f->box_of[i] != UINT32_MAX || (pass == 0 && merged[i]))
                continue;
            if (pass == 1) // a line of a cycle: a box of its own
                f->merge_next[i] = UINT32_MAX;
            e = new_box(f, &g->boxes[g->nboxes], i);
            g->nboxes++;
        }
    free(merged);
    return e;
}

static int cmp_boxes(const void* a, const void* b) {
    const mr_flow_box *x = a, *y = b;
    if (x->share != y->share)
        return x->share < y->share ? 1 : -1;
    return (x->lines[0] > y->lines[0]) - (x->lines[0] < y->lines[0]);
}

static int cmp_links(const void* a, const void* b) {
    const mr_flow_link *x = a, *y = b;
    if (x->from != y->from)
        return x->from < y->from ? -1 : 1;
    return (x->to > y->to) - (x->to < y->to);
}

// Sorts the boxes and gives the shown edges between two boxes (or a box and itself, a
// recursive call) as links.
static int make_links(finish* f) {
    mr_flow* g = f->g;
    mr_flow_build* b = g->b;
    if (g->nboxes > 1)
        qsort(g->boxes, g->nboxes, sizeof *g->boxes, cmp_boxes);
    for (uint32_t i = 0; i < g->nboxes; i++)
        for (size_t k = 0; k < g->boxes[i].nlines; k++)
            f->box_of[g->boxes[i].lines[k]] = i;
    g->links = calloc(b->nedges ? b->nedges : 1, sizeof *g->links);
    if (!g->links)
        return -ENOMEM;
    for (size_t e = 0; e < b->nedges; e++) {
        const edge* x = &b->edges[e];
        uint32_t from = f->box_of[x->from], to = f->box_of[x->to];
        // The calls that make a chain are the chain itself.
        if (!f->shown_edge[e] || f->merge_next[x->from] == x->to)
            continue;
        mr_flow_link* l = &g->links[g->nlinks];
        *l = (mr_flow_link){.from = from, .to = to, .bytes = malloc(g->nt * sizeof *l->bytes)};
        if (!l->bytes)
            return -ENOMEM;
        memcpy(l->bytes, &b->edge_bytes[e * g->nt], g->nt * sizeof *l->bytes);
        g->nlinks++;
    }
    if (g->nlinks > 1)
        qsort(g->links, g->nlinks, sizeof *g->links, cmp_links);
    return 0;
}

int mr_flowgraph_finish(mr_flow* g, const uint64_t* total, double min_share) {
    size_t nl = g->nlines ? g->nlines : 1, ne = g->b->nedges ? g->b->nedges : 1;
    finish f = {.g = g, .min_share = min_share};
    g->total = malloc(g->nt * sizeof *g->total);
    g->hidden_local = calloc(g->nt, sizeof *g->hidden_local);
    f.shown_line = calloc(nl, sizeof *f.shown_line);
    f.shown_edge = calloc(ne, sizeof *f.shown_edge);
    uint32_t* ids = calloc(6 * nl, sizeof *ids);
    int e = -ENOMEM;
    if (g->total && g->hidden_local && f.shown_line && f.shown_edge && ids) {
        memcpy(g->total, total, g->nt * sizeof *g->total);
        f.total = g->total;
        f.outs = ids, f.ins = ids + nl, f.only_out = ids + 2 * nl, f.only_in = ids + 3 * nl;
        f.merge_next = ids + 4 * nl, f.box_of = ids + 5 * nl;
        choose_shown(&f);
        find_chains(&f);
        e = make_boxes(&f);
        if (!e)
            e = make_links(&f);
    }
    free(f.shown_line);
    free(f.shown_edge);
    free(ids);
    return e;
}
