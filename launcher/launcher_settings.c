// SPDX-License-Identifier: MIT
// The launcher's side of the MEMTRACE_* settings (launcher_settings.h), on the table the
// tracer reads them with (settings.h).
#include "launcher_settings.h"

#include "settings.h"

#include <stdlib.h>
#include <string.h>

void mt_launcher_settings_fputs_escaped(const char* s, FILE* f) {
    for (const unsigned char* p = (const unsigned char*)s; *p; p++) {
        if ((*p < 0x20 && *p != '\n' && *p != '\t') || *p >= 0x7f)
            fprintf(f, "\\x%02x", *p);
        else
            fputc(*p, f);
    }
}

// "memtrace: NAME=VALUE: not a value it takes (what it takes); CONSEQUENCE".
static void refuse_value(const mt_setting* s, const char* value, const char* consequence) {
    char what[128];
    if (s->kind == MT_SETTING_INT) {
        snprintf(what, sizeof what, "a number from %ld to %ld", s->lo, s->hi);
    } else if (s->kind == MT_SETTING_WORD) {
        snprintf(what, sizeof what, "one of %s", s->words);
        for (char* c = what; (c = strchr(c, '|'));)
            *c = ',';
    } else {
        snprintf(what, sizeof what, "a number");
    }
    fprintf(stderr, "memtrace: %s=", s->name);
    mt_launcher_settings_fputs_escaped(value, stderr);
    fprintf(stderr, ": not a value it takes (%s); %s\n", what, consequence);
}

int mt_launcher_settings_check(void) {
    const mt_setting* s;
    for (int i = 0; (s = mt_settings_at(i)); i++) {
        const char* value = getenv(s->name);
        if (value && !mt_settings_valid(s, value)) {
            refuse_value(s, value, "nothing run");
            return -1;
        }
    }
    return 0;
}

int mt_launcher_settings_for_attach(char* out, size_t len) {
    size_t used = 0;
    out[0] = 0;
    const mt_setting* s;
    for (int i = 0; (s = mt_settings_at(i)); i++) {
        const char* value = getenv(s->name);
        if (!value || !*value || s->attach == MT_ATTACH_OWN)
            continue;
        if (s->attach == MT_ATTACH_REFUSE) {
            fprintf(stderr, "memtrace: %s does not apply to --pid (%s); unset it\n", s->name,
                    s->why);
            return -1;
        }
        // No blank, quote or backslash either (strtol would skip a leading blank): the value
        // goes into gdb's command line as it is.
        if (!mt_settings_valid(s, value) || strpbrk(value, " \t\n\r\v\f\"\\")) {
            refuse_value(s, value, "nothing attached");
            return -1;
        }
        int n = snprintf(out + used, len - used, "%s=%s\n", s->name, value);
        if (n < 0 || (size_t)n >= len - used) {
            fprintf(stderr, "memtrace: %s: value too long\n", s->name);
            return -1;
        }
        used += (size_t)n;
    }
    return 0;
}

void mt_launcher_settings_print(FILE* f) {
    enum { INDENT = 27, WIDTH = 89 };
    const mt_setting* s;
    for (int i = 0; (s = mt_settings_at(i)); i++) {
        if (!s->help)
            continue;
        char text[1024];
        snprintf(text, sizeof text, "%s [%s]", s->help, s->def);
        int col = fprintf(f, "  %-*s", INDENT - 2, s->name);
        bool first = true;
        for (const char* w = text; *w;) {
            size_t n = strcspn(w, " ");
            if (!first && col + 1 + (int)n > WIDTH)
                col = fprintf(f, "\n%*s", INDENT, "") - 1;
            else if (!first)
                col += fprintf(f, " ");
            col += fprintf(f, "%.*s", (int)n, w);
            first = false;
            w += n + (w[n] == ' ');
        }
        fputc('\n', f);
    }
}
