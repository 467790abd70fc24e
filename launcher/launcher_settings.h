// SPDX-License-Identifier: MIT
// The launcher's side of the MEMTRACE_* settings (launcher_settings.c): a value the tracer
// would not take is refused before anything runs, for a program start and for --pid alike.
#ifndef MT_LAUNCHER_SETTINGS_H
#define MT_LAUNCHER_SETTINGS_H

#include <stddef.h>
#include <stdio.h>

// 0 when every MEMTRACE_* setting of the environment has a value the tracer takes; else -1
// after saying on stderr which one is not and what it takes.
int mt_launcher_settings_check(void);
// The MEMTRACE_* settings of the launcher's environment that an attached process records with
// ("KEY=VALUE" lines into out; MEMTRACE_OUTPUT is -o's, launcher.c). 0, or -1 after saying on
// stderr which setting is refused: one only a program start takes, or a value out of range.
int mt_launcher_settings_for_attach(char* out, size_t len);
// `s` with every control character and byte outside ASCII written \xNN (lines and tabs
// kept): words that come from elsewhere (a process's names, a user's value) never reach the
// terminal as escape sequences.
void mt_launcher_settings_fputs_escaped(const char* s, FILE* f);

// The settings' section of `memtrace --help` (and so of the man page): from the table, one
// setting after another, each "NAME  what it does [default]" wrapped to the help's width.
void mt_launcher_settings_print(FILE* f);

#endif
