// SPDX-License-Identifier: MIT
// Stacks in reports: as JSON arrays of frames, and one frame as a line of text.
#ifndef MR_STACK_JSON_H
#define MR_STACK_JSON_H

#include "sites.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

// A stack as a JSON array, leaf first, every frame expanded into its locations (inlined
// functions first): {"function","file","line","module"}, file/line/module null if unknown.
json_t* mr_stack_json_make(const mr_symbols* s, uint32_t leaf, bool all_frames);
// The same, each frame's entries made once and shared by every stack made with the same
// cache (a JSON object, empty at first; the caller json_decref's it), so that a report of
// thousands of stacks holds each frame once.
json_t* mr_stack_json_make_shared(json_t* cache, const mr_symbols* s, uint32_t leaf,
                                  bool all_frames);
// Writes one JSON stack entry as terminal text, the function's name whole however long:
// "function (file:line) [module]" (without the line when `line` is false).
void mr_stack_json_fputs_frame(FILE* out, json_t* frame, bool line);

#endif
