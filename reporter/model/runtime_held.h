// SPDX-License-Identifier: MIT
// Blocks held by the C runtime: memory that libc, the dynamic loader or libstdc++ allocate
// for their own use and never free (stdio buffers, thread DTVs and TLS blocks, locale data,
// message catalogs, dlerror results, the C++ exception emergency pool). Leak reports show
// them apart from the program's own leaks.
//
// The rule, on the stack of an allocation, leaf first: take the innermost run of frames in
// C runtime modules (libc.so, ld-linux / ld.so, libstdc++.so; the tracer's own frames are
// skipped), up to the first frame of any other module (the program or another library).
// The block is the runtime's when that run has a frame of the dynamic loader, or a frame of
// a function known to keep what it allocates (runtime_held.c lists them). A block the
// program asked for through libc (strdup, fopen, getline, newlocale...) is the program's:
// its run holds only those entry points. An empty run (the program called malloc) is the
// program's.
#ifndef MR_RUNTIME_HELD_H
#define MR_RUNTIME_HELD_H

#include "heapmap.h"
#include "profile.h"
#include "symbols.h"

#include <stdbool.h>
#include <stdint.h>

// Whether the blocks of a leaf callsite are held by the C runtime.
bool mr_runtime_held(const mr_symbols* s, uint32_t leaf);

// The leaks of every view are the program's: the blocks the C runtime holds at the end
// leave the rows' end metrics (and, at_end, the live metrics of a profile built at
// MR_AT_END), and the profile's sums. Their total goes to *bytes and *blocks (may be NULL).
// Returns 0, or -ENOMEM.
int mr_runtime_held_apart(mr_profile* p, const mr_symbols* s, bool at_end, uint64_t* bytes,
                          uint64_t* blocks);

#endif
