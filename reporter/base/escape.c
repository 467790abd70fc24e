// SPDX-License-Identifier: MIT
// The one escaping rule for bytes from a capture (escape.h): a UTF-8 validator (RFC 3629:
// no overlong forms, no surrogates, nothing above U+10FFFF) and a writer that sends each
// character either as it is or escaped, to a buffer or straight to a FILE.
#include "escape.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// Length of the valid UTF-8 sequence starting s[0..n), 0 when none starts there.
static size_t utf8_length(const unsigned char* s, size_t n) {
    unsigned char c = s[0], lo = 0x80, hi = 0xbf;
    size_t len;
    if (c < 0x80)
        return 1;
    if (c >= 0xc2 && c <= 0xdf) {
        len = 2;
    } else if (c >= 0xe0 && c <= 0xef) {
        len = 3;
        lo = c == 0xe0 ? 0xa0 : 0x80; // overlong
        hi = c == 0xed ? 0x9f : 0xbf; // surrogates
    } else if (c >= 0xf0 && c <= 0xf4) {
        len = 4;
        lo = c == 0xf0 ? 0x90 : 0x80; // overlong
        hi = c == 0xf4 ? 0x8f : 0xbf; // above U+10FFFF
    } else {
        return 0;
    }
    if (n < len || s[1] < lo || s[1] > hi)
        return 0;
    for (size_t i = 2; i < len; i++)
        if ((s[i] & 0xc0) != 0x80)
            return 0;
    return len;
}

// Where escaped text goes: a buffer large enough for the worst case, or a FILE.
typedef struct sink {
    char* buf;
    size_t len;
    FILE* fp;
} sink;

static void put(sink* k, const char* p, size_t n) {
    if (k->fp) {
        fwrite(p, 1, n, k->fp);
    } else {
        memcpy(k->buf + k->len, p, n);
        k->len += n;
    }
}

static void put_escape(sink* k, const char* prefix, unsigned value, int digits) {
    char e[16];
    int n = snprintf(e, sizeof e, "%s%0*x", prefix, digits, value);
    put(k, e, (size_t)n);
}

// The worst case is a byte written as \\xNN (5 characters).
#define MAX_EXPANSION 5

// A C0 control or DEL that the mode escapes.
static bool escaped_control(unsigned char c, enum mr_escape_mode mode) {
    if (mode == MR_ESCAPE_TERMINAL_LINES && (c == '\t' || c == '\n' || c == '\r'))
        return false;
    return (mode == MR_ESCAPE_TERMINAL || mode == MR_ESCAPE_TERMINAL_LINES) &&
           (c < 0x20 || c == 0x7f);
}

static void escape_to(sink* k, const char* str, size_t n, enum mr_escape_mode mode) {
    const unsigned char* s = (const unsigned char*)str;
    bool terminal = mode == MR_ESCAPE_TERMINAL || mode == MR_ESCAPE_TERMINAL_LINES;
    const char* byte_prefix = mode == MR_ESCAPE_JSON_TEXT ? "\\\\x" : "\\x";
    size_t i = 0;
    while (i < n) {
        size_t len = utf8_length(s + i, n - i);
        if (len == 0) {
            put_escape(k, byte_prefix, s[i], 2);
            i++;
        } else if (len == 1 && escaped_control(s[i], mode)) {
            put_escape(k, "\\x", s[i], 2);
            i++;
        } else if (terminal && len == 2 && s[i] == 0xc2 && s[i + 1] < 0xa0) {
            put_escape(k, "\\u", s[i + 1], 4); // C1 control U+0080..U+009F
            i += 2;
        } else {
            // A run of characters that pass through, written at once.
            size_t start = i;
            i += len;
            while (i < n && (len = utf8_length(s + i, n - i)) == 1 && !escaped_control(s[i], mode))
                i++;
            put(k, str + start, i - start);
        }
    }
}

char* mr_escape(const char* s, size_t n, enum mr_escape_mode mode) {
    if (n > (SIZE_MAX - 1) / MAX_EXPANSION)
        return NULL;
    sink k = {.buf = malloc(n * MAX_EXPANSION + 1)};
    if (!k.buf)
        return NULL;
    escape_to(&k, s, n, mode);
    k.buf[k.len] = 0;
    return k.buf;
}

void mr_escape_fputs_text(FILE* out, const char* s) {
    if (!s)
        return;
    sink k = {.fp = out};
    escape_to(&k, s, strlen(s), MR_ESCAPE_TERMINAL);
}

void mr_escape_fputs_csv(FILE* out, const char* s) {
    if (!s)
        return;
    if (!strpbrk(s, ",\"\r\n")) {
        fputs(s, out);
        return;
    }
    fputc('"', out);
    for (; *s; s++) {
        if (*s == '"')
            fputc('"', out);
        fputc(*s, out);
    }
    fputc('"', out);
}

// ---- a stream escaping everything written through it (mr_escape_terminal_stream)

typedef struct terminal_stream {
    FILE* out;
    char held[3]; // the start of a character whose other bytes come with the next write
    size_t nheld;
} terminal_stream;

// How many bytes at the end of s[0..n) start a UTF-8 character not complete yet.
static size_t incomplete_tail(const unsigned char* s, size_t n) {
    for (size_t back = 1; back <= 3 && back <= n; back++) {
        unsigned char c = s[n - back];
        if ((c & 0xc0) == 0x80)
            continue; // a continuation byte: its lead is further back
        size_t need = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : c >= 0xc2 ? 2 : 1;
        return need > back ? back : 0;
    }
    return 0;
}

static ssize_t terminal_write(void* cookie, const char* buf, size_t n) {
    terminal_stream* t = cookie;
    char* all = malloc(t->nheld + n);
    if (!all)
        return -1;
    memcpy(all, t->held, t->nheld);
    memcpy(all + t->nheld, buf, n);
    size_t total = t->nheld + n, tail = incomplete_tail((const unsigned char*)all, total);
    sink k = {.fp = t->out};
    escape_to(&k, all, total - tail, MR_ESCAPE_TERMINAL_LINES);
    memcpy(t->held, all + total - tail, tail);
    t->nheld = tail;
    free(all);
    return (ssize_t)n;
}

static int terminal_close(void* cookie) {
    terminal_stream* t = cookie;
    sink k = {.fp = t->out};
    escape_to(&k, t->held, t->nheld, MR_ESCAPE_TERMINAL_LINES); // never completed
    int rc = fflush(t->out) == 0 && !ferror(t->out) ? 0 : EOF;
    free(t);
    return rc;
}

FILE* mr_escape_terminal_stream(FILE* out) {
    terminal_stream* t = calloc(1, sizeof *t);
    if (!t)
        return NULL;
    t->out = out;
    cookie_io_functions_t io = {.write = terminal_write, .close = terminal_close};
    FILE* f = fopencookie(t, "w", io);
    if (!f) {
        free(t);
        return NULL;
    }
    // Unbuffered: what is written through it reaches `out` in order with what is written
    // to `out` directly.
    setvbuf(f, NULL, _IONBF, 0);
    return f;
}
