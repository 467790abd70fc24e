// SPDX-License-Identifier: MIT
// The function view (functions.h). Two passes over the profile's stacks: the first gives
// every location of the frames they show a slot and names the distinct (name, file)
// pairs by sorting them, so functions are told apart by their strings, never by a hash;
// the second adds each row's metrics to its stack's functions.
#include "functions.h"

#include "sites.h"
#include "u64map.h"

#include "memtrace/vec.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static const char no_stack[] = MR_FUNCTIONS_NO_STACK;

typedef struct loc_entry {
    const char* name;
    const char* file;
    size_t slot;
} loc_entry;

typedef struct builder {
    const mr_symbols* sy;
    bool all_frames;
    mr_u64map first_slot; // frame id -> slot of its first location
    loc_entry* entries;   // one per slot; slot 0 is "(no stack)"
    size_t n, cap;
    uint32_t* fn_of; // slot -> function
    uint64_t* stamp; // function -> 1 + the last row added to its total
    uint32_t* chain; // the functions of a row's stack, leaf first
    size_t chain_cap;
    uint32_t frames[MR_SITES_MAX_DEPTH];
} builder;

size_t mr_functions_stack(const mr_symbols* sy, uint32_t callsite, bool all_frames,
                          uint32_t* frames) {
    if (callsite == 0 || callsite >= mr_symbols_callsite_count(sy))
        return 0;
    size_t n = mr_symbols_stack(sy, callsite, all_frames, frames, MR_SITES_MAX_DEPTH);
    return n < MR_SITES_MAX_DEPTH ? n : MR_SITES_MAX_DEPTH;
}

static size_t shown_stack(builder* b, uint32_t callsite) {
    return mr_functions_stack(b->sy, callsite, b->all_frames, b->frames);
}

// Gives the locations of a frame their slots, once.
static int add_frame(builder* b, uint32_t frame) {
    if (mr_u64map_get(&b->first_slot, frame))
        return 0;
    const mr_symloc* locs;
    size_t nl = mr_symbols_frame_locs(b->sy, frame, &locs);
    if (mr_u64map_put(&b->first_slot, frame, b->n) ||
        MT_VEC_RESERVE(&b->entries, &b->cap, b->n + nl))
        return -ENOMEM;
    for (size_t k = 0; k < nl; k++, b->n++)
        b->entries[b->n] = (loc_entry){locs[k].function, locs[k].file, b->n};
    return 0;
}

static int cmp_str(const char* x, const char* y) {
    if (!x || !y)
        return (x != NULL) - (y != NULL);
    return strcmp(x, y);
}

static int cmp_entries(const void* a, const void* b) {
    const loc_entry *x = a, *y = b;
    int c = cmp_str(x->name, y->name);
    return c ? c : cmp_str(x->file, y->file);
}

// Sorts the slots' (name, file) pairs into the function list; fn_of maps slots to it.
static int name_functions(builder* b, mr_functions* out) {
    b->fn_of = malloc(b->n * sizeof *b->fn_of);
    out->v = calloc(b->n, sizeof *out->v);
    b->stamp = calloc(b->n, sizeof *b->stamp);
    if (!b->fn_of || !out->v || !b->stamp)
        return -ENOMEM;
    if (b->n > 1) // qsort must never see the NULL of an empty vector
        qsort(b->entries, b->n, sizeof *b->entries, cmp_entries);
    for (size_t i = 0; i < b->n; i++) {
        const loc_entry* e = &b->entries[i];
        if (i == 0 || cmp_entries(e, e - 1) != 0)
            out->v[out->n++] =
                (mr_function){.name = e->name,
                              .file = e->file,
                              .plumbing = !b->all_frames && mr_sites_is_plumbing(e->name)};
        b->fn_of[e->slot] = (uint32_t)(out->n - 1);
    }
    return 0;
}

size_t mr_functions_pass(const mr_functions* f, uint32_t* chain, size_t n) {
    size_t kept = 0;
    for (size_t i = 0; i < n; i++)
        if (!f->v[chain[i]].plumbing)
            chain[kept++] = chain[i];
    return kept ? kept : n; // nothing written when every function is plumbing
}

static void add_values(uint64_t* to, const mr_profile_row* r) {
    for (int m = 0; m < MR_NMETRICS; m++)
        to[m] += mr_profile_row_value(r, (mr_metric)m);
}

// Adds row `i` to the functions of its stack, past the plumbing. Returns 0 or -ENOMEM.
static int add_row(builder* b, mr_functions* out, const mr_profile* p, size_t i) {
    const mr_profile_row* r = &p->rows[i];
    size_t n = shown_stack(b, r->callsite), len = 0;
    if (n == 0) {
        add_values(out->v[b->fn_of[0]].self, r);
        add_values(out->v[b->fn_of[0]].total, r);
        return 0;
    }
    for (size_t j = 0; j < n; j++) {
        const mr_symloc* locs;
        size_t nl = mr_symbols_frame_locs(b->sy, b->frames[j], &locs);
        size_t first = (size_t)*mr_u64map_get(&b->first_slot, b->frames[j]);
        if (MT_VEC_RESERVE(&b->chain, &b->chain_cap, len + nl))
            return -ENOMEM;
        for (size_t k = 0; k < nl; k++)
            b->chain[len++] = b->fn_of[first + k];
    }
    bool leaf_passed = out->v[b->chain[0]].plumbing;
    size_t kept = mr_functions_pass(out, b->chain, len);
    out->passed |= leaf_passed && kept < len;
    add_values(out->v[b->chain[0]].self, r);
    for (size_t k = 0; k < kept; k++) {
        uint32_t fn = b->chain[k];
        if (b->stamp[fn] != i + 1) {
            b->stamp[fn] = i + 1;
            add_values(out->v[fn].total, r);
        }
    }
    return 0;
}

// Keeps the functions some row counts in (noise frames of shown stacks are not).
static void drop_unused(mr_functions* out) {
    size_t n = 0;
    for (size_t i = 0; i < out->n; i++) {
        bool used = false;
        for (int m = 0; m < MR_NMETRICS; m++)
            used |= out->v[i].total[m] != 0;
        if (used)
            out->v[n++] = out->v[i];
    }
    out->n = n;
}

static int build(builder* b, const mr_profile* p, mr_functions* out) {
    if (mr_u64map_init(&b->first_slot) || MT_VEC_RESERVE(&b->entries, &b->cap, 1))
        return -ENOMEM;
    b->entries[b->n++] = (loc_entry){no_stack, NULL, 0};
    for (size_t i = 0; i < p->nrows; i++) {
        size_t n = shown_stack(b, p->rows[i].callsite);
        for (size_t j = 0; j < n; j++)
            if (add_frame(b, b->frames[j]))
                return -ENOMEM;
    }
    if (name_functions(b, out))
        return -ENOMEM;
    for (size_t i = 0; i < p->nrows; i++)
        if (add_row(b, out, p, i))
            return -ENOMEM;
    drop_unused(out);
    return 0;
}

int mr_functions_build(const mr_profile* p, const mr_symbols* sy, bool all_frames,
                       mr_functions* out) {
    *out = (mr_functions){0};
    builder* b = calloc(1, sizeof *b);
    if (!b)
        return -ENOMEM;
    b->sy = sy;
    b->all_frames = all_frames;
    int e = build(b, p, out);
    mr_u64map_free(&b->first_slot);
    free(b->entries);
    free(b->fn_of);
    free(b->stamp);
    free(b->chain);
    free(b);
    if (e)
        mr_functions_free(out);
    return e;
}

ptrdiff_t mr_functions_find(const mr_functions* f, const char* name, const char* file) {
    size_t lo = 0, hi = f->n; // binary search: the list is sorted as cmp_entries sorts
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = cmp_str(f->v[mid].name, name);
        if (!c)
            c = cmp_str(f->v[mid].file, file);
        if (!c)
            return (ptrdiff_t)mid;
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return -1;
}

void mr_functions_free(mr_functions* f) {
    free(f->v);
    *f = (mr_functions){0};
}
