// SPDX-License-Identifier: MIT
// Stacks in reports: as JSON arrays of frames, and one frame as a line of text.
#ifndef MR_STACK_JSON_H
#define MR_STACK_JSON_H

#include "sites.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

// A stack as a JSON array, leaf first, every frame expanded into its locations (inlined
// functions first): {"function","file","line","module"}, file/line/module null if unknown.
json_t* mr_sites_stack_json(const mr_symbols* s, uint32_t leaf, bool all_frames);
// One JSON stack entry as text: "function (file:line) [module]"; returns buf.
char* mr_sites_format_json_frame(json_t* frame, char* buf, size_t len);

#endif
