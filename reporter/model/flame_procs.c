// SPDX-License-Identifier: MIT
// The flame graph of several processes (flame_procs.h).
#include "flame_procs.h"

#include "escape.h"

#include "memtrace/vec.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static uint32_t intern(mr_flame_tree* g, const char* s, int* e) {
    uint32_t id = MR_FLAME_NO_STRING;
    if (s && mr_strtab_intern(&g->strings, s, &id, NULL))
        *e = -ENOMEM;
    return id;
}

static int push(mr_flame_tree* g, mr_flame_node n, uint32_t* id) {
    if (MT_VEC_RESERVE(&g->nodes, &g->cap, g->n + 1))
        return -ENOMEM;
    *id = (uint32_t)g->n;
    g->nodes[g->n++] = n;
    return 0;
}

int mr_flame_procs_init(mr_flame_tree* g) {
    *g = (mr_flame_tree){0};
    if (mr_strtab_init(&g->strings) || mr_u64map_init(&g->children) ||
        mr_u64map_init(&g->threads.index) || mr_u64map_init(&g->threads.self.index))
        return -ENOMEM;
    int e = 0;
    mr_flame_node root = {.name = intern(g, "all", &e),
                          .module = MR_FLAME_NO_STRING,
                          .loc = MR_FLAME_NO_STRING,
                          .relevant = true};
    uint32_t id;
    return e ? e : push(g, root, &id);
}

// A string of `from` as an id of g's table.
static uint32_t reintern(mr_flame_tree* g, const mr_flame_tree* from, uint32_t id, int* e) {
    return id == MR_FLAME_NO_STRING ? id : intern(g, mr_strtab_get(&from->strings, id), e);
}

int mr_flame_procs_add(mr_flame_tree* g, const char* label, const mr_flame_tree* from) {
    int e = 0;
    char* name = mr_escape(label, strlen(label), MR_ESCAPE_UTF8);
    mr_flame_node top = {.name = intern(g, name ? name : "?", &e),
                         .module = MR_FLAME_NO_STRING,
                         .loc = MR_FLAME_NO_STRING,
                         .relevant = true,
                         // Blocks allocated with an empty stack stay in the process frame.
                         .self_bytes = from->nodes[0].self_bytes,
                         .self_count = from->nodes[0].self_count};
    free(name);
    uint32_t base;
    uint32_t* newid = malloc(from->n * sizeof *newid);
    if (e || !newid || push(g, top, &base)) {
        free(newid);
        return -ENOMEM;
    }
    // The kept nodes of from (pruned: their self values hold what folded into them), each
    // after its parent as in from; its root is the process frame.
    newid[0] = base;
    for (size_t i = 1; i < from->n && !e; i++) {
        const mr_flame_node* n = &from->nodes[i];
        if (from->target && from->target[i] != i)
            continue;
        mr_flame_node copy = *n;
        copy.parent = newid[n->parent];
        copy.name = reintern(g, from, n->name, &e);
        copy.module = reintern(g, from, n->module, &e);
        copy.loc = reintern(g, from, n->loc, &e);
        if (!e)
            e = push(g, copy, &newid[i]);
    }
    free(newid);
    g->blocks += from->blocks;
    return e;
}
