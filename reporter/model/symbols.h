// SPDX-License-Identifier: MIT
// Stacks and names for every report: makes sure a capture is symbolized (symbolizing and
// storing it on first open when the tracer could not), then holds the callsite tree and the
// frame names in memory so reports walk stacks without SQL. Read-only after loading; it
// never writes outputs itself.
#ifndef MR_SYMBOLS_H
#define MR_SYMBOLS_H

#include "memtrace/capture.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

// One source location of a frame. A physical frame expands to its inlined functions
// (innermost first, inlined = true) followed by the function the code belongs to.
typedef struct mr_symloc {
    const char* function; // never NULL (unresolved frames read "module+0xoffset")
    const char* file;     // NULL without line info
    int line;             // 0 without line info
    bool inlined;
} mr_symloc;

typedef struct mr_symbols mr_symbols;

// When meta 'symbolized' is not '1' (the program was killed, or the tracer left frames to
// name, meta 'symbols_deferred'), symbolizes the capture from its recorded mappings and
// stores the names. A capture that cannot be written (read-only file) is left as is and
// named in memory for this run; only if that fails too do its frames read as
// module+offset. Returns 0; what a user should hear of it goes into note ("symbolized N
// frames", "cannot store symbols (why); ..."), "" when nothing.
int mr_symbols_ensure(mt_capture* cap, char* note, size_t notelen);

// mr_symbols_ensure, then loads the callsite and frame tables. Returns 0 with
// mr_symbols_ensure's note in msg, or -ENOMEM or -EPROTO (stacks that cannot be read) with
// the reason in msg. The caller prints a non-empty msg either way.
int mr_symbols_load(mt_capture* cap, mr_symbols** out, char* msg, size_t msglen);
void mr_symbols_free(mr_symbols* s);

// ---- frames (ids as in the frame table; unknown ids read as "[unknown frame]")

// The physical function of a frame.
const char* mr_symbols_frame_name(const mr_symbols* s, uint32_t frame);
// The frame's locations, innermost first (inlined functions, then the physical function).
// Returns their number (>= 1).
size_t mr_symbols_frame_locs(const mr_symbols* s, uint32_t frame, const mr_symloc** locs);
// False for noise frames (allocator internals, start-up code, a Python program's
// interpreter frames): hidden by default, their bytes still count in their callers.
bool mr_symbols_frame_relevant(const mr_symbols* s, uint32_t frame);
// Basename of the frame's module (NULL when the frame has no mapping).
const char* mr_symbols_frame_module(const mr_symbols* s, uint32_t frame);

// ---- callsites (0 is the root; events carry their leaf callsite)

uint32_t mr_symbols_parent(const mr_symbols* s, uint32_t callsite);
uint32_t mr_symbols_frame_of(const mr_symbols* s, uint32_t callsite);
uint32_t mr_symbols_callsite_count(const mr_symbols* s); // highest id + 1

// True when the stack was cut at the tracer's depth limit (its outermost frames are lost;
// the root frame is then the marker named MT_SYMBOLIZE_TRUNCATED).
bool mr_symbols_truncated(const mr_symbols* s, uint32_t leaf);

// Whether no frame of the stack is relevant: such a stack is shown whole, in every view.
bool mr_symbols_noise_only(const mr_symbols* s, uint32_t leaf);
// The frames of a stack, leaf first, into out[0..max); noise frames are skipped unless
// all_frames or the stack has nothing else (mr_symbols_noise_only). Returns the number of
// frames in the stack (may exceed max: then out holds the leaf-most max).
size_t mr_symbols_stack(const mr_symbols* s, uint32_t leaf, bool all_frames, uint32_t* out,
                        size_t max);

#endif
