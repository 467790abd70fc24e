// SPDX-License-Identifier: MIT
// Site names, canonical stacks and site labels (sites.h).
#include "sites.h"

#include "cxx_names.h"
#include "strtab.h"

#include "memtrace/vec.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

uint32_t mr_sites_site_frame(const mr_symbols* s, uint32_t leaf) {
    uint32_t out;
    return mr_symbols_stack(s, leaf, false, &out, 1) > 0 ? out : 0;
}

const char* mr_sites_site_name(const mr_symbols* s, uint32_t leaf) {
    if (leaf == 0 || leaf >= mr_symbols_callsite_count(s))
        return "(no stack)";
    const mr_symloc* locs;
    mr_symbols_frame_locs(s, mr_sites_site_frame(s, leaf), &locs);
    return locs[0].function;
}

// The identity of a callsite: its caller's canonical id, then its frame's locations.
static char* canonical_key(const mr_symbols* s, uint32_t parent, uint32_t frame) {
    const mr_symloc* locs;
    size_t nl = mr_symbols_frame_locs(s, frame, &locs);
    size_t cap = 32, len;
    for (size_t k = 0; k < nl; k++)
        cap += strlen(locs[k].function) + (locs[k].file ? strlen(locs[k].file) : 0) + 16;
    char* key = malloc(cap);
    if (!key)
        return NULL;
    len = (size_t)snprintf(key, cap, "%u", parent);
    for (size_t k = 0; k < nl; k++)
        len += (size_t)snprintf(key + len, cap - len, "\x1e%s\x1f%s\x1f%d", locs[k].function,
                                locs[k].file ? locs[k].file : "", locs[k].line);
    return key;
}

// The canonical id of a callsite given its canonical parent: the first callsite seen with
// the same key. first[] holds, per interned key, that callsite. Returns 0 or -ENOMEM.
static int canonical_of(const mr_symbols* s, mr_strtab* keys, uint32_t** first, size_t* cap,
                        uint32_t parent, uint32_t id, uint32_t* out) {
    char* key = canonical_key(s, parent, mr_symbols_frame_of(s, id));
    uint32_t k;
    bool added;
    int rc = key ? mr_strtab_intern(keys, key, &k, &added) : -ENOMEM;
    free(key);
    if (rc)
        return rc;
    if (added) {
        if (MT_VEC_RESERVE(first, cap, (size_t)k + 1))
            return -ENOMEM;
        (*first)[k] = id;
    }
    *out = (*first)[k];
    return 0;
}

uint32_t* mr_sites_canonical(const mr_symbols* s) {
    uint32_t n = mr_symbols_callsite_count(s);
    uint32_t* canon = calloc((size_t)n + 1, sizeof *canon); // 0 = not yet resolved
    uint32_t* first = NULL;                                 // key id -> its first callsite
    size_t cap = 0;
    mr_strtab keys;
    if (mr_strtab_init(&keys) || !canon) {
        mr_strtab_free(&keys);
        free(canon);
        return NULL;
    }
    uint32_t path[MR_SITES_MAX_DEPTH];
    for (uint32_t c = 1; c < n && canon; c++) {
        size_t np = 0;
        uint32_t cs = c;
        while (cs && cs < n && !canon[cs] && np < MR_SITES_MAX_DEPTH) {
            path[np++] = cs;
            cs = mr_symbols_parent(s, cs);
        }
        uint32_t parent = (cs && cs < n) ? canon[cs] : 0;
        while (np-- > 0) {
            if (canonical_of(s, &keys, &first, &cap, parent, path[np], &canon[path[np]])) {
                free(canon);
                canon = NULL;
                break;
            }
            parent = canon[path[np]];
        }
    }
    mr_strtab_free(&keys);
    free(first);
    return canon;
}

// ---- site labels past allocation wrappers

struct mr_site_labels {
    const mr_symbols* s;
    mr_strtab wrappers;        // allocator-named functions that have a caller
    const char** first_caller; // per function of `wrappers`: its first caller, NULL for >= 2
    size_t cap;
};

// The unqualified name of a function, lower-cased, without template arguments, parameters
// or lambda decorations: "std::__new_allocator<int>::allocate(unsigned long)" -> "allocate".
static void bare_name(const char* fn, char* out, size_t len) {
    size_t n = 0;
    int depth = 0;
    for (const char* p = fn; *p; p++) {
        if (strchr("<({[", *p)) {
            depth++;
        } else if (strchr(">)}]", *p)) {
            depth -= depth > 0;
        } else if (depth == 0 && p[0] == ':' && p[1] == ':') {
            n = 0;
            p++;
        } else if (depth == 0 && n + 1 < len) {
            out[n++] = (char)tolower((unsigned char)*p);
        }
    }
    out[n] = 0;
}

static bool allocator_named(const char* fn) {
    char b[256];
    bare_name(fn, b, sizeof b);
    size_t n = strlen(b);
    return strstr(b, "alloc") || strstr(b, "strdup") || strstr(b, "strndup") ||
           strstr(b, "memdup") || (n >= 4 && strcmp(b + n - 4, "_new") == 0);
}

// Records that `caller` calls the allocator-named `fn` (callers are mr_symbols strings,
// which outlive the labels). Returns 0 or -ENOMEM.
static int note_caller(mr_site_labels* l, const char* fn, const char* caller) {
    if (!allocator_named(fn))
        return 0;
    uint32_t id;
    bool added;
    if (mr_strtab_intern(&l->wrappers, fn, &id, &added))
        return -ENOMEM;
    if (added) {
        if (MT_VEC_RESERVE(&l->first_caller, &l->cap, (size_t)id + 1))
            return -ENOMEM;
        l->first_caller[id] = caller;
    } else if (l->first_caller[id] && strcmp(l->first_caller[id], caller) != 0) {
        l->first_caller[id] = NULL;
    }
    return 0;
}

mr_site_labels* mr_sites_labels_new(const mr_symbols* s) {
    mr_site_labels* l = calloc(1, sizeof *l);
    if (!l || mr_strtab_init(&l->wrappers)) {
        mr_sites_labels_free(l);
        return NULL;
    }
    l->s = s;
    // Every callsite is one call: each location of its frame is called by the next one
    // outwards (inlined functions first), the outermost by the parent's innermost location.
    uint32_t n = mr_symbols_callsite_count(s);
    for (uint32_t c = 1; c < n; c++) {
        uint32_t frame = mr_symbols_frame_of(s, c);
        if (!mr_symbols_frame_relevant(s, frame))
            continue;
        const mr_symloc *locs, *plocs;
        size_t nl = mr_symbols_frame_locs(s, frame, &locs);
        uint32_t parent = mr_symbols_parent(s, c);
        const char* outer = NULL;
        if (parent && parent < n) {
            mr_symbols_frame_locs(s, mr_symbols_frame_of(s, parent), &plocs);
            outer = plocs[0].function;
        }
        for (size_t k = 0; k < nl; k++) {
            const char* caller = k + 1 < nl ? locs[k + 1].function : outer;
            if (caller && note_caller(l, locs[k].function, caller)) {
                mr_sites_labels_free(l);
                return NULL;
            }
        }
    }
    return l;
}

bool mr_sites_is_plumbing(const char* function) {
    return mr_cxx_names_is_std(function);
}

bool mr_sites_labels_is_wrapper(const mr_site_labels* l, const char* function) {
    if (mr_sites_is_plumbing(function))
        return true;
    uint32_t id = mr_strtab_find(&l->wrappers, function);
    return id != MR_STRTAB_NONE && !l->first_caller[id];
}

const char* mr_sites_label(const mr_site_labels* l, uint32_t leaf) {
    if (leaf == 0 || leaf >= mr_symbols_callsite_count(l->s))
        return "(no stack)";
    uint32_t frames[MR_SITES_MAX_DEPTH];
    size_t n = mr_symbols_stack(l->s, leaf, false, frames, MR_SITES_MAX_DEPTH);
    for (size_t i = 0; i < n && i < MR_SITES_MAX_DEPTH; i++) {
        const mr_symloc* locs;
        size_t nl = mr_symbols_frame_locs(l->s, frames[i], &locs);
        for (size_t k = 0; k < nl; k++)
            if (!mr_sites_labels_is_wrapper(l, locs[k].function))
                return locs[k].function;
    }
    return mr_sites_site_name(l->s, leaf);
}

void mr_sites_labels_free(mr_site_labels* l) {
    if (l) {
        mr_strtab_free(&l->wrappers);
        free(l->first_caller);
    }
    free(l);
}
