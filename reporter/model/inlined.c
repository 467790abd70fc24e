// SPDX-License-Identifier: MIT
// The inlined-chain reader (inlined.h): a recursive-descent reader of the one JSON shape
// the tracer writes. It validates the whole text before calling back, so a malformed chain
// reports nothing rather than its first half.
#include "inlined.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct reader {
    const char* p;
    char* out; // decoded strings of the current object go here, one after another
    size_t used;
} reader;

static void skip_ws(reader* r) {
    while (*r->p == ' ' || *r->p == '\t' || *r->p == '\n' || *r->p == '\r')
        r->p++;
}

static bool eat(reader* r, char c) {
    skip_ws(r);
    if (*r->p != c)
        return false;
    r->p++;
    return true;
}

static int hex4(const char* p) {
    int v = 0;
    for (int i = 0; i < 4; i++) {
        char c = p[i];
        int d = c >= '0' && c <= '9'   ? c - '0'
                : c >= 'a' && c <= 'f' ? c - 'a' + 10
                : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                       : -1;
        if (d < 0)
            return -1;
        v = v * 16 + d;
    }
    return v;
}

static void put_utf8(reader* r, uint32_t cp) {
    char* o = r->out + r->used;
    if (cp < 0x80) {
        o[0] = (char)cp;
        r->used += 1;
    } else if (cp < 0x800) {
        o[0] = (char)(0xc0 | cp >> 6);
        o[1] = (char)(0x80 | (cp & 0x3f));
        r->used += 2;
    } else if (cp < 0x10000) {
        o[0] = (char)(0xe0 | cp >> 12);
        o[1] = (char)(0x80 | (cp >> 6 & 0x3f));
        o[2] = (char)(0x80 | (cp & 0x3f));
        r->used += 3;
    } else {
        o[0] = (char)(0xf0 | cp >> 18);
        o[1] = (char)(0x80 | (cp >> 12 & 0x3f));
        o[2] = (char)(0x80 | (cp >> 6 & 0x3f));
        o[3] = (char)(0x80 | (cp & 0x3f));
        r->used += 4;
    }
}

// A \u escape at r->p (after the backslash and 'u'), a surrogate pair taken whole.
static bool unicode_escape(reader* r) {
    int hi = hex4(r->p);
    if (hi <= 0 || (hi >= 0xdc00 && hi <= 0xdfff)) // \u0000 or a lone low surrogate
        return false;
    r->p += 4;
    uint32_t cp = (uint32_t)hi;
    if (hi >= 0xd800 && hi <= 0xdbff) {
        int lo = r->p[0] == '\\' && r->p[1] == 'u' ? hex4(r->p + 2) : -1;
        if (lo < 0xdc00 || lo > 0xdfff)
            return false;
        r->p += 6;
        cp = 0x10000 + ((uint32_t)(hi - 0xd800) << 10) + (uint32_t)(lo - 0xdc00);
    }
    put_utf8(r, cp);
    return true;
}

// A string at r->p, decoded into r->out; *s points at it. Decoding never lengthens text,
// so the scratch buffer (as long as the whole text) always has room.
static bool string(reader* r, const char** s) {
    if (!eat(r, '"'))
        return false;
    *s = r->out + r->used;
    for (;;) {
        unsigned char c = (unsigned char)*r->p++;
        if (c == '"')
            break;
        if (c < 0x20) // the end of the text, or a raw control character
            return false;
        if (c != '\\') {
            r->out[r->used++] = (char)c;
            continue;
        }
        const char* simple = strchr("\"\\/bfnrt", *r->p);
        if (*r->p && simple) {
            r->out[r->used++] = "\"\\/\b\f\n\r\t"[simple - "\"\\/bfnrt"];
            r->p++;
        } else if (*r->p == 'u') {
            r->p++;
            if (!unicode_escape(r))
                return false;
        } else {
            return false;
        }
    }
    r->out[r->used++] = 0;
    return true;
}

// A line: null, or a whole number (digits, an optional minus sign).
static bool line_value(reader* r, int* line) {
    skip_ws(r);
    if (!strncmp(r->p, "null", 4)) {
        r->p += 4;
        *line = 0;
        return true;
    }
    const char* start = r->p;
    if (*r->p == '-')
        r->p++;
    if (*r->p < '0' || *r->p > '9')
        return false;
    long long v = strtoll(start, (char**)&r->p, 10);
    *line = v > INT32_MAX || v < INT32_MIN ? 0 : (int)v;
    return true;
}

// A string or null (a file, a function).
static bool text_value(reader* r, const char** s) {
    skip_ws(r);
    if (!strncmp(r->p, "null", 4)) {
        r->p += 4;
        *s = NULL;
        return true;
    }
    return string(r, s);
}

static bool object(reader* r, mr_inlined_call* call) {
    *call = (mr_inlined_call){0};
    r->used = 0;
    if (!eat(r, '{'))
        return false;
    if (eat(r, '}'))
        return true;
    do {
        const char* key;
        if (!string(r, &key) || !eat(r, ':'))
            return false;
        bool ok = !strcmp(key, "function") ? text_value(r, &call->function)
                  : !strcmp(key, "file")   ? text_value(r, &call->file)
                  : !strcmp(key, "line")   ? line_value(r, &call->line)
                                           : false;
        if (!ok)
            return false;
    } while (eat(r, ','));
    return eat(r, '}');
}

// One pass over the chain: counts its calls, calling fn for each when fn is set.
static int pass(reader* r, const char* text, mr_inlined_fn fn, void* ud) {
    r->p = text;
    if (!eat(r, '['))
        return -EPROTO;
    size_t n = 0;
    if (!eat(r, ']')) {
        do {
            mr_inlined_call call;
            if (!object(r, &call))
                return -EPROTO;
            int rc = fn ? fn(ud, n, &call) : 0;
            if (rc)
                return rc;
            n++;
        } while (eat(r, ','));
        if (!eat(r, ']'))
            return -EPROTO;
    }
    skip_ws(r);
    return *r->p || n > INT32_MAX ? -EPROTO : (int)n;
}

int mr_inlined_parse(const char* text, mr_inlined_fn fn, void* ud) {
    if (!text)
        return 0;
    reader r = {.out = malloc(strlen(text) + 1)};
    if (!r.out)
        return -ENOMEM;
    int n = pass(&r, text, NULL, NULL);
    if (n > 0 && fn)
        n = pass(&r, text, fn, ud);
    free(r.out);
    return n;
}
