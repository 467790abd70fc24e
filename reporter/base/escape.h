// SPDX-License-Identifier: MIT
// Names, paths and arguments read from a capture are bytes the traced program chose: they
// may be invalid UTF-8 (a C function named with __asm__("caf\xe9")) or hold terminal
// control sequences (an argv of "\e]0;title\a"). Every report writes them through these
// helpers, which share one rule:
//   - valid UTF-8 passes through, backslashes included;
//   - a byte that is not part of valid UTF-8 becomes the four characters \xNN;
//   - in text for a terminal, C0 controls and DEL become \xNN too (\x1b, \x0a, \x7f), and
//     the C1 controls U+0080..U+009F become \u0080..\u009f.
// So nothing is lost (JSON keeps every name, as valid UTF-8) and nothing reaches a
// terminal raw. HTML pages embed JSON with < > & escaped (mr_json_dump_html).
#ifndef MR_ESCAPE_H
#define MR_ESCAPE_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

enum mr_escape_mode {
    MR_ESCAPE_UTF8,      // invalid bytes only: for JSON strings and in-memory names
    MR_ESCAPE_TERMINAL,  // invalid bytes and control characters: for text output
    MR_ESCAPE_JSON_TEXT, // invalid bytes inside a JSON text, as \\xNN so the parsed string reads
                         // \xNN
};

// s[0..n) escaped by mode, NUL-terminated, malloc'd (NULL when out of memory).
char* mr_escape(const char* s, size_t n, enum mr_escape_mode mode);

// Writes s escaped for a terminal (MR_ESCAPE_TERMINAL); NULL writes nothing.
void mr_fputs_text(FILE* out, const char* s);

// A JSON string holding s made valid UTF-8 (MR_ESCAPE_UTF8); JSON null for NULL.
json_t* mr_json_bytes(const char* s);
// Sets object[tid as decimal text] = mr_json_bytes(name): an mt_capture_threads callback.
void mr_json_add_thread(void* object, int64_t tid, const char* name);

// Parses a JSON text written by the tracer, whose strings may hold raw bytes that are not
// UTF-8 (meta 'cmdline', frame 'inlined'); such bytes read as \xNN. NULL when malformed.
json_t* mr_json_loads_bytes(const char* text);

// Writes JSON that is safe inside an HTML <script> element: compact, with < > & written as
// \u003c \u003e \u0026 (valid JSON, so "</script>" or "<!--" in a name never reach the
// HTML parser). Returns 0, or -1 on a write error.
int mr_json_dump_html(const json_t* json, FILE* out);

#endif
