// SPDX-License-Identifier: MIT
// Reads a frame's inlined chain as the tracer stores it in the capture (docs/capture-format.md,
// frame.inlined): a JSON array of {"function": string, "file": string|null, "line":
// integer|null}, innermost first. Only that shape is read: any other text, or a string
// escape that is not valid (\u0000, a lone surrogate), makes the whole chain malformed,
// as it would for a JSON parser. Bytes that are not UTF-8 pass through as they are (the
// caller escapes names, escape.h). No allocation beyond one scratch buffer per call.
#ifndef MR_INLINED_H
#define MR_INLINED_H

#include <stddef.h>

// One inlined function: function and file are NULL when missing or null, line 0.
typedef struct mr_inlined_call {
    const char* function;
    const char* file;
    int line;
} mr_inlined_call;

// Called for the i-th call; the strings live until it returns. Returns 0 to go on.
typedef int (*mr_inlined_fn)(void* ud, size_t i, const mr_inlined_call* call);

// Parses text (NULL reads as an empty chain), calling fn (when not NULL) for each call in
// order. Returns the number of calls, -EPROTO when the text is malformed (fn was then not
// called), -ENOMEM, or fn's non-zero return.
int mr_inlined_parse(const char* text, mr_inlined_fn fn, void* ud);

#endif
