// SPDX-License-Identifier: MIT
// memreport's exit codes and its messages on stderr.
#ifndef MR_MESSAGES_H
#define MR_MESSAGES_H

#include <stdbool.h>

enum { MR_EXIT_OK = 0, MR_EXIT_USAGE = 1, MR_EXIT_BAD_INPUT = 2, MR_EXIT_IO = 3 };

// The exit code of a failure given as a negative errno: the machine's (out of memory, a file
// that cannot be opened, read or written) MR_EXIT_IO, anything else the input's (a corrupt or
// unsupported capture) MR_EXIT_BAD_INPUT; 0 for 0.
int mr_messages_exit_code(int err);

// Prints "memreport: WHAT: message" on stderr (WHAT may be NULL).
void mr_messages_error(const char* what, const char* fmt, ...)
    __attribute__((format(printf, 2, 3)));
// The one line every subcommand prints for a file it wrote: "memreport: wrote FILE".
void mr_messages_note_written(const char* path);
// True when stderr is a terminal (progress indicators are shown only then).
bool mr_messages_progress_enabled(void);
// Prints "\rLABEL: NN%" at most every 100 ms when enabled; fraction < 0 clears the line.
void mr_messages_progress(const char* label, double fraction);

#endif
