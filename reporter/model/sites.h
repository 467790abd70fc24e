// SPDX-License-Identifier: MIT
// Allocation sites for the leaks, stats and flamegraph reports, on top of the callsite
// tree and names of symbols.h: the frame that names a site, stacks as JSON and as text.
// Pure views of mr_symbols; never reads the capture itself.
#ifndef MR_SITES_H
#define MR_SITES_H

#include "symbols.h"

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
// Maps every callsite id (0 .. mr_symbols_callsite_count - 1) to one representative id with
// the same symbolized stack (function, file and line of every frame, inlined ones included), so
// stacks that differ only in return addresses (an unrolled loop, two calls on one line)
// report as one site. Returns a malloc'd array, NULL when out of memory.
uint32_t* mr_sites_canonical(const mr_symbols* s);

// The allocation plumbing: functions whose allocations every report of sites or functions
// counts as their caller's, because they allocate for whoever calls them and their rows
// would read alike (five std::__new_allocator<T>::allocate rows, one per element type).
// That is the C++ standard library's functions (mr_cxx_names_is_std), named in reports as
// MR_SITES_PLUMBING. The one list: stats' and plot --sites' labels pass them, and so do
// top's and diff's function tables (functions.h).
bool mr_sites_is_plumbing(const char* function);
#define MR_SITES_PLUMBING "the C++ standard library"

// Site labels for stats and plot --sites, where rows merge by label: the innermost relevant
// function of the stack that is not an allocation wrapper, so the callers of xmalloc,
// g_malloc, PyObject_Malloc, PyUnicode_New or sqlite3Malloc each get their own row. A
// wrapper is a function that
//   - is named like an allocator: its unqualified name, in any case, without template
//     arguments and parameters, contains "alloc", "strdup", "strndup" or "memdup", or ends
//     in "_new" (xmalloc, g_malloc0, PyObject_Malloc, sqlite3Malloc, xstrdup, PyUnicode_New,
//     std::allocator<T>::allocate), and
//   - allocates for at least two different calling functions in this capture (a function
//     with one caller already names its rows uniquely, and keeps its name).
// The name alone would relabel every function that says "alloc"; the callers alone would
// climb through every shared helper up to main. Both together pick the functions whose
// rows would otherwise look identical. The allocation plumbing is passed too, whatever its
// callers (std::__new_allocator<T>::allocate, std::vector<T>::_M_realloc_insert, each
// instantiation with its one caller), so a container's allocations are labelled by the
// code that uses it. A stack of wrappers only
// is labelled as mr_sites_site_name labels it.
typedef struct mr_site_labels mr_site_labels;
// Finds the wrappers of a capture's stacks. NULL when out of memory.
mr_site_labels* mr_sites_labels_new(const mr_symbols* s);
// The label of a leaf callsite; the string lives as long as the mr_symbols.
const char* mr_sites_label(const mr_site_labels* l, uint32_t leaf);
bool mr_sites_labels_is_wrapper(const mr_site_labels* l, const char* function);
void mr_sites_labels_free(mr_site_labels* l);

#endif
