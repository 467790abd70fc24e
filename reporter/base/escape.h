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
// terminal raw. JSON strings are made with this rule in render/json.h.
#ifndef MR_ESCAPE_H
#define MR_ESCAPE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

enum mr_escape_mode {
    MR_ESCAPE_UTF8,      // invalid bytes only: for JSON strings and in-memory names
    MR_ESCAPE_TERMINAL,  // invalid bytes and control characters: for text output
    MR_ESCAPE_JSON_TEXT, // invalid bytes inside a JSON text, as \\xNN so the parsed string reads
                         // \xNN
    MR_ESCAPE_TERMINAL_LINES, // as MR_ESCAPE_TERMINAL, but tab, line feed and carriage return
                              // pass: any format's lines shown on a terminal
};

// s[0..n) escaped by mode, NUL-terminated, malloc'd (NULL when out of memory).
char* mr_escape(const char* s, size_t n, enum mr_escape_mode mode);

// A stream writing what it is given to `out` escaped by MR_ESCAPE_TERMINAL_LINES (a
// character split between two writes is kept whole): memreport's output of any format
// (CSV, folded stacks, SQL rows) when it goes to a terminal. fclose flushes `out` and leaves
// it open. NULL when out of memory.
FILE* mr_escape_terminal_stream(FILE* out);

// Writes s escaped for a terminal (MR_ESCAPE_TERMINAL); NULL writes nothing.
void mr_escape_fputs_text(FILE* out, const char* s);

// Writes s as one RFC 4180 CSV field: as it is, or quoted with " doubled when it holds a
// comma, a quote or a line break; NULL writes nothing. The bytes are s's own (a caller that
// needs UTF-8 escapes first).
void mr_escape_fputs_csv(FILE* out, const char* s);

#endif
