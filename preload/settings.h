// SPDX-License-Identifier: MIT
// The MEMTRACE_* settings the tracer reads (settings.c): their accepted values, and what
// `memtrace --pid` does with each. One table for the library (config.c) and the launcher
// (launcher_attach.c), so a value the launcher passes to an attached process is accepted by
// exactly the rule a program start uses. Pure string checks: no allocation, no I/O.
#ifndef MT_SETTINGS_H
#define MT_SETTINGS_H

#include <stdbool.h>

enum { MT_SETTING_INT, MT_SETTING_WORD, MT_SETTING_U64, MT_SETTING_TEXT };

// What an attach does with a setting found in the launcher's environment.
enum {
    MT_ATTACH_PASS,   // passed to the process: it records with it
    MT_ATTACH_REFUSE, // means something only at a program start: the launcher refuses it
    MT_ATTACH_OWN,    // not passed: the launcher's own (-o), or read by the process itself
};

typedef struct mt_setting {
    const char* name;
    int kind;
    long lo, hi;       // MT_SETTING_INT: the accepted range
    const char* words; // MT_SETTING_WORD: the accepted values, '|' between them
    int attach;
    const char* why;  // MT_ATTACH_REFUSE / MT_ATTACH_OWN: the launcher's words
    const char* def;  // the default as people read it (`memtrace --help`, docs/tracing.md)
    const char* help; // what it does, for `memtrace --help`; NULL: not one for people to set
} mt_setting;

// The setting called `name` (NULL for a name the tracer does not read).
const mt_setting* mt_settings_find(const char* name);
// The i-th setting, NULL past the last.
const mt_setting* mt_settings_at(int i);
// Whether `value` is one the setting accepts ("" is unset, always accepted).
bool mt_settings_valid(const mt_setting* s, const char* value);
// MT_SETTING_INT: `value` as a number, or `fallback` when unset or not valid.
int mt_settings_int(const char* name, const char* value, int fallback);

#endif
