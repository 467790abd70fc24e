// SPDX-License-Identifier: MIT
// Site names and stack renderings shared by leaks, stats and flamegraph (sites.h).
#include "sites.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

uint32_t mr_sites_site_frame(const mr_symbols* s, uint32_t leaf) {
    uint32_t out;
    if (mr_symbols_stack(s, leaf, false, &out, 1) > 0)
        return out;
    return mr_symbols_stack(s, leaf, true, &out, 1) > 0 ? out : 0;
}

const char* mr_sites_site_name(const mr_symbols* s, uint32_t leaf) {
    if (leaf == 0 || leaf >= mr_symbols_callsite_count(s))
        return "(no stack)";
    const mr_symloc* locs;
    mr_symbols_frame_locs(s, mr_sites_site_frame(s, leaf), &locs);
    return locs[0].function;
}

json_t* mr_sites_stack_json(const mr_symbols* s, uint32_t leaf, bool all_frames) {
    uint32_t frames[MR_SITES_MAX_DEPTH];
    size_t n = mr_symbols_stack(s, leaf, all_frames, frames, MR_SITES_MAX_DEPTH);
    if (n > MR_SITES_MAX_DEPTH)
        n = MR_SITES_MAX_DEPTH;
    json_t* a = json_array();
    for (size_t i = 0; i < n; i++) {
        const mr_symloc* locs;
        size_t nl = mr_symbols_frame_locs(s, frames[i], &locs);
        const char* module = mr_symbols_frame_module(s, frames[i]);
        for (size_t k = 0; k < nl; k++) {
            json_t* o = json_object();
            json_object_set_new(o, "function", json_string(locs[k].function));
            json_object_set_new(o, "file", locs[k].file ? json_string(locs[k].file) : json_null());
            json_object_set_new(o, "line",
                                locs[k].line > 0 ? json_integer(locs[k].line) : json_null());
            json_object_set_new(o, "module", module ? json_string(module) : json_null());
            json_array_append_new(a, o);
        }
    }
    return a;
}

char* mr_sites_format_json_frame(json_t* f, char* buf, size_t len) {
    const char* fn = json_string_value(json_object_get(f, "function"));
    const char* file = json_string_value(json_object_get(f, "file"));
    const char* module = json_string_value(json_object_get(f, "module"));
    json_int_t line = json_integer_value(json_object_get(f, "line"));
    int n = snprintf(buf, len, "%s", fn ? fn : "??");
    if (file && n >= 0 && (size_t)n < len)
        n += line > 0 ? snprintf(buf + n, len - (size_t)n, " (%s:%lld)", file, (long long)line)
                      : snprintf(buf + n, len - (size_t)n, " (%s)", file);
    if (module && n >= 0 && (size_t)n < len)
        snprintf(buf + n, len - (size_t)n, " [%s]", module);
    return buf;
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

uint32_t* mr_sites_canonical(const mr_symbols* s) {
    uint32_t n = mr_symbols_callsite_count(s);
    uint32_t* canon = calloc((size_t)n + 1, sizeof *canon); // 0 = not yet resolved
    json_t* seen = json_object();
    if (!canon || !seen) {
        free(canon);
        json_decref(seen);
        return NULL;
    }
    uint32_t path[MR_SITES_MAX_DEPTH];
    for (uint32_t c = 1; c < n; c++) {
        size_t np = 0;
        uint32_t cs = c;
        while (cs && cs < n && !canon[cs] && np < MR_SITES_MAX_DEPTH) {
            path[np++] = cs;
            cs = mr_symbols_parent(s, cs);
        }
        uint32_t parent = (cs && cs < n) ? canon[cs] : 0;
        while (np-- > 0) {
            uint32_t id = path[np];
            char* key = canonical_key(s, parent, mr_symbols_frame_of(s, id));
            if (!key) {
                free(canon);
                json_decref(seen);
                return NULL;
            }
            json_t* v = json_object_get(seen, key);
            if (v) {
                canon[id] = (uint32_t)json_integer_value(v);
            } else {
                canon[id] = id;
                json_object_set_new(seen, key, json_integer(id));
            }
            free(key);
            parent = canon[id];
        }
    }
    json_decref(seen);
    return canon;
}
