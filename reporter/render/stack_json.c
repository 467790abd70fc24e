// SPDX-License-Identifier: MIT
// Stacks in reports as JSON and text (stack_json.h).
#include "stack_json.h"

#include "cxx_names.h"
#include "escape.h"

#include <stdio.h>
#include <string.h>

// One frame's entries, its inlined functions first, as a JSON array.
static json_t* frame_entries(const mr_symbols* s, uint32_t frame) {
    const mr_symloc* locs;
    size_t nl = mr_symbols_frame_locs(s, frame, &locs);
    const char* module = mr_symbols_frame_module(s, frame);
    json_t* a = json_array();
    for (size_t k = 0; k < nl; k++) {
        json_t* o = json_object();
        json_object_set_new(o, "function", json_string(locs[k].function));
        json_object_set_new(o, "file", locs[k].file ? json_string(locs[k].file) : json_null());
        json_object_set_new(o, "line", locs[k].line > 0 ? json_integer(locs[k].line) : json_null());
        json_object_set_new(o, "module", module ? json_string(module) : json_null());
        json_array_append_new(a, o);
    }
    return a;
}

json_t* mr_stack_json_make_shared(json_t* cache, const mr_symbols* s, uint32_t leaf,
                                  bool all_frames) {
    uint32_t frames[MR_SITES_MAX_DEPTH];
    size_t n = mr_symbols_stack(s, leaf, all_frames, frames, MR_SITES_MAX_DEPTH);
    if (n > MR_SITES_MAX_DEPTH)
        n = MR_SITES_MAX_DEPTH;
    json_t* a = json_array();
    for (size_t i = 0; i < n; i++) {
        char key[48]; // the symbols too: a report of several processes has a table each
        snprintf(key, sizeof key, "%p/%u", (const void*)s, frames[i]);
        json_t* entries = cache ? json_object_get(cache, key) : NULL;
        if (!entries) {
            entries = frame_entries(s, frames[i]);
            if (cache)
                json_object_set_new(cache, key, entries);
        }
        json_array_extend(a, entries);
        if (!cache)
            json_decref(entries);
    }
    return a;
}

json_t* mr_stack_json_make(const mr_symbols* s, uint32_t leaf, bool all_frames) {
    return mr_stack_json_make_shared(NULL, s, leaf, all_frames);
}

void mr_stack_json_fputs_frame(FILE* out, json_t* f, bool with_line) {
    const char* fn = json_string_value(json_object_get(f, "function"));
    const char* file = json_string_value(json_object_get(f, "file"));
    const char* module = json_string_value(json_object_get(f, "module"));
    json_int_t line = with_line ? json_integer_value(json_object_get(f, "line")) : 0;
    if (fn)
        mr_cxx_names_fputs(out, fn);
    else
        fputs("??", out);
    if (file) {
        fputs(" (", out);
        mr_escape_fputs_text(out, file);
        if (line > 0)
            fprintf(out, ":%lld", (long long)line);
        fputc(')', out);
    }
    // A Python frame reads `function (file.py:line)`: its file says where it is.
    if (module && strcmp(module, "[python]")) {
        fputs(" [", out);
        mr_escape_fputs_text(out, module);
        fputc(']', out);
    }
}
