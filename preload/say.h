// SPDX-License-Identifier: MIT
// What the tracer says on stderr: a line now and then (a setting it does not take, a capture
// it could not start). The tracer's bottom floor: every part of it may say something, and
// this file calls no other part. Never allocates.
#ifndef MT_SAY_H
#define MT_SAY_H
#include <stddef.h>
// What the tracer says on stderr goes to the stderr the process started with, or nowhere:
// mt_say_note_stderr (when tracing starts) remembers which file descriptor 2 is, and
// mt_say writes the line only while descriptor 2 is still that file. A program
// started with stderr closed (`prog 2>&-`) gets descriptor 2 for the first file it opens.
void mt_say_note_stderr(void);
void mt_say(const char* line, size_t n);
#endif
