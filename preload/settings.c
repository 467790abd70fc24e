// SPDX-License-Identifier: MIT
// The MEMTRACE_* settings table (settings.h): names, accepted values, attach policy. Called
// at initialisation and by the launcher; never from a hook.
#include "settings.h"

#include <stdlib.h>
#include <string.h>

#define RUNS_AT_START "recording starts at the attach and stops at --detach"

static const mt_setting settings[] = {
    {"MEMTRACE_UNWIND", MT_SETTING_WORD, 0, 0, "auto|fp|libunwind", MT_ATTACH_PASS, NULL},
    {"MEMTRACE_DEPTH", MT_SETTING_INT, 1, 1024, NULL, MT_ATTACH_PASS, NULL},
    {"MEMTRACE_SAMPLE_MS", MT_SETTING_INT, 1, 60000, NULL, MT_ATTACH_PASS, NULL},
    {"MEMTRACE_COMMIT_MS", MT_SETTING_INT, 1, 60000, NULL, MT_ATTACH_PASS, NULL},
    {"MEMTRACE_FOLLOW_FORK", MT_SETTING_INT, 0, 1, NULL, MT_ATTACH_PASS, NULL},
    {"MEMTRACE_SYMBOLIZE", MT_SETTING_INT, 0, 1, NULL, MT_ATTACH_PASS, NULL},
    {"MEMTRACE_SYMBOLIZE_MS", MT_SETTING_INT, 0, 3600000, NULL, MT_ATTACH_PASS, NULL},
    {"MEMTRACE_MAX_MB", MT_SETTING_INT, 0, 1 << 30, NULL, MT_ATTACH_PASS, NULL},
    {"MEMTRACE_MMAP", MT_SETTING_INT, 0, 1, NULL, MT_ATTACH_PASS, NULL},
    {"MEMTRACE_PYTHON", MT_SETTING_INT, 0, 1, NULL, MT_ATTACH_PASS, NULL},
    {"MEMTRACE_TIME_NS", MT_SETTING_INT, 1, 1000000, NULL, MT_ATTACH_PASS, NULL},
    {"MEMTRACE_SAMPLE_BYTES", MT_SETTING_INT, 0, 1 << 30, NULL, MT_ATTACH_PASS, NULL},
    {"MEMTRACE_SAMPLE_SEED", MT_SETTING_U64, 0, 0, NULL, MT_ATTACH_PASS, NULL},
    {"MEMTRACE_LEAKS", MT_SETTING_INT, 0, 1, NULL, MT_ATTACH_PASS, NULL},
    {"MEMTRACE_START", MT_SETTING_TEXT, 0, 0, NULL, MT_ATTACH_REFUSE, RUNS_AT_START},
    {"MEMTRACE_SIGNAL", MT_SETTING_TEXT, 0, 0, NULL, MT_ATTACH_REFUSE,
     "an attach leaves the process's signal handlers as they are; stop with --detach"},
    {"MEMTRACE_DELAY_MS", MT_SETTING_INT, 0, 2000000000, NULL, MT_ATTACH_REFUSE, RUNS_AT_START},
    {"MEMTRACE_OUTPUT", MT_SETTING_TEXT, 0, 0, NULL, MT_ATTACH_OWN, "used as -o"},
    {"MEMTRACE_REPORT", MT_SETTING_TEXT, 0, 0, NULL, MT_ATTACH_OWN, "the launcher's own"},
};
#define COUNT (int)(sizeof settings / sizeof *settings)

const mt_setting* mt_settings_find(const char* name) {
    for (int i = 0; i < COUNT; i++)
        if (!strcmp(settings[i].name, name))
            return &settings[i];
    return NULL;
}

const mt_setting* mt_settings_at(int i) {
    return i >= 0 && i < COUNT ? &settings[i] : NULL;
}

static bool is_word(const char* words, const char* value) {
    size_t n = strlen(value);
    for (const char* w = words; *w;) {
        size_t k = strcspn(w, "|");
        if (k == n && !strncmp(w, value, n))
            return true;
        w += k + (w[k] == '|');
    }
    return false;
}

bool mt_settings_valid(const mt_setting* s, const char* value) {
    if (!value || !*value)
        return true;
    char* end;
    switch (s->kind) {
    case MT_SETTING_INT: {
        long n = strtol(value, &end, 10);
        return !*end && n >= s->lo && n <= s->hi;
    }
    case MT_SETTING_WORD:
        return is_word(s->words, value);
    case MT_SETTING_U64:
        strtoull(value, &end, 10);
        return !*end;
    default:
        return true;
    }
}

int mt_settings_int(const char* name, const char* value, int fallback) {
    const mt_setting* s = mt_settings_find(name);
    if (!s || s->kind != MT_SETTING_INT || !value || !*value || !mt_settings_valid(s, value))
        return fallback;
    return (int)strtol(value, NULL, 10);
}
