// SPDX-License-Identifier: MIT
// Allocation sites for the leaks, stats and flamegraph reports, on top of the callsite
// tree and names of symbols.h: the frame that names a site, stacks as JSON and as text.
// Pure views of mr_symbols; never reads the capture itself.
#ifndef MR_SITES_H
#define MR_SITES_H

#include "symbols.h"

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

// Deepest stack the reports walk (the tracer's MEMTRACE_DEPTH is 64 by default).
#define MR_SITES_MAX_DEPTH 1024

// The frame naming the site of a leaf callsite: the leaf-most relevant frame, or the leaf
// frame when none is relevant. Returns 0 for an empty stack.
uint32_t mr_sites_site_frame(const mr_symbols* s, uint32_t leaf);
// The site's display name: the innermost location of that frame (the function containing
// the allocation call, inlined or not); "(no stack)" for an empty stack.
const char* mr_sites_site_name(const mr_symbols* s, uint32_t leaf);
// A stack as a JSON array, leaf first, every frame expanded into its locations (inlined
// functions first): {"function","file","line","module"}, file/line/module null if unknown.
json_t* mr_sites_stack_json(const mr_symbols* s, uint32_t leaf, bool all_frames);
// Maps every callsite id (0 .. mr_symbols_callsite_count - 1) to one representative id with
// the same symbolized stack (function, file and line of every frame, inlined ones included), so
// stacks that differ only in return addresses (an unrolled loop, two calls on one line)
// report as one site. Returns a malloc'd array, NULL when out of memory.
uint32_t* mr_sites_canonical(const mr_symbols* s);
// One JSON stack entry as text: "function (file:line) [module]"; returns buf.
char* mr_sites_format_json_frame(json_t* frame, char* buf, size_t len);

#endif
