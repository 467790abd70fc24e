// SPDX-License-Identifier: MIT
// The line scanner: every literal upstream (and the importer) looks for, found in one pass.
#include "messages.h"
#include "npu_internal.h"
#include "output_file.h"
#include "siphash.h"

#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static const struct {
    const char* text;
    size_t len;
} lits[L_COUNT] = {
#define LIT(s)                                                                                     \
    { s, sizeof s - 1 }
    [L_MAX] = LIT("Max allocated size "),
    [L_FRAG] = LIT("Increased allocation size to "),
    [L_USED] = LIT("DDR used memory"),
    [L_FREE] = LIT("DDR free memory"),
    [L_ALLOC] = LIT("Buffer size to allocate"),
    [L_HFREE] = LIT("Free buffer of size "),
    [L_BEFORE] = LIT("free memory before alloc"),
    [L_LFRAG] = LIT("Increased allocation size due to fragmentation!"),
#undef LIT
};
static const char frag_tail[] = " B due to fragmentation!";

// Python's \s on ASCII (str patterns also take \x1c-\x1f).
static bool is_space(unsigned char c) {
    return c == ' ' || (c >= '\t' && c <= '\r') || (c >= 0x1c && c <= 0x1f);
}

static bool is_digit(unsigned char c) {
    return c >= '0' && c <= '9';
}

// Leading digits at s[i..n): returns the index after them (i if none) and the value.
static size_t digits(const unsigned char* s, size_t i, size_t n, uint64_t* v) {
    uint64_t acc = 0;
    size_t j = i;
    for (; j < n && is_digit(s[j]); j++) {
        unsigned d = s[j] - '0';
        if (acc != NUM_OVERFLOW && acc > ((uint64_t)INT64_MAX - d) / 10)
            acc = NUM_OVERFLOW;
        else if (acc != NUM_OVERFLOW)
            acc = acc * 10 + d;
    }
    *v = acc;
    return j;
}

// Whether the character ending just before s[i] is a word character for Python's Unicode
// \b: ASCII alnum or '_', or a code point Python's re counts as \w (decoded from UTF-8).
static bool word_before(const unsigned char* s, size_t i) {
    if (i == 0)
        return false;
    unsigned char c = s[i - 1];
    if (c < 0x80)
        return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
               c == '_';
    size_t b = i - 1, k = 0;
    while (b > 0 && k < 3 && (s[b] & 0xc0) == 0x80) {
        b--;
        k++;
    }
    unsigned char lead = s[b];
    size_t need = lead >= 0xf0 ? 3 : lead >= 0xe0 ? 2 : lead >= 0xc0 ? 1 : 99;
    if (need != k)
        return false; // invalid UTF-8 (upstream would have crashed): not a word character
    uint32_t cp = lead & (0x3f >> need);
    for (size_t j = b + 1; j < i; j++)
        cp = cp << 6 | (s[j] & 0x3f);
    return mr_npu_is_word(cp);
}

static bool lit_at(const unsigned char* s, size_t i, size_t n, int l) {
    // The second byte first: most candidate bytes start ordinary words ("memory", "free").
    return n - i >= lits[l].len && s[i + 1] == (unsigned char)lits[l].text[1] &&
           memcmp(s + i, lits[l].text, lits[l].len) == 0;
}

// Checks literal l at i with its required continuation; on a match records it.
static void try_lit(scan* sc, const unsigned char* s, size_t i, size_t n, int l) {
    if (sc->found[l] || !lit_at(s, i, n, l))
        return;
    size_t j = i + lits[l].len, e;
    uint64_t v = 0;
    switch (l) {
    case L_USED:
    case L_FREE:
    case L_ALLOC:
        if (j >= n || !is_space(s[j]))
            return;
        while (j < n && is_space(s[j]))
            j++;
        /* fall through */
    case L_MAX:
    case L_HFREE:
        if ((e = digits(s, j, n, &v)) == j)
            return;
        break;
    case L_FRAG:
        if ((e = digits(s, j, n, &v)) == j || n - e < sizeof frag_tail - 1 ||
            memcmp(s + e, frag_tail, sizeof frag_tail - 1) != 0)
            return;
        break;
    default:
        break;
    }
    if (l == L_BEFORE)
        sc->before_ddr = i >= 4 && memcmp(s + i - 4, "DDR ", 4) == 0;
    sc->found[l] = true;
    sc->pos[l] = i;
    sc->val[l] = v;
}

// One pass over the line: the leftmost function key (\b(part\d+|main):) and, for every
// literal, its leftmost occurrence whose continuation matches (what re.search returns).
// s[n] must be '\0': strpbrk (SSE4.2 in glibc) skips the bytes that start nothing we look
// for; a NUL inside the line only ends one strpbrk run, not the scan.
void mr_npu_scan_line(scan* sc, const unsigned char* s, size_t n) {
    memset(sc, 0, sizeof *sc);
    for (size_t i = 0; i < n; i++) {
        const char* hit = strpbrk((const char*)s + i, "MIDBFfpm");
        if (!hit) {
            i += strlen((const char*)s + i); // at a NUL: the loop steps over it
            continue;
        }
        i = (size_t)((const unsigned char*)hit - s);
        switch (s[i]) {
        case 'M':
            try_lit(sc, s, i, n, L_MAX);
            break;
        case 'I':
            try_lit(sc, s, i, n, L_FRAG);
            try_lit(sc, s, i, n, L_LFRAG);
            break;
        case 'D':
            try_lit(sc, s, i, n, L_USED);
            try_lit(sc, s, i, n, L_FREE);
            break;
        case 'B':
            try_lit(sc, s, i, n, L_ALLOC);
            break;
        case 'F':
            try_lit(sc, s, i, n, L_HFREE);
            break;
        case 'f':
            try_lit(sc, s, i, n, L_BEFORE);
            break;
        case 'p':
            if (!sc->key && n - i > 5 && memcmp(s + i, "part", 4) == 0 && is_digit(s[i + 4])) {
                size_t j = i + 4;
                while (j < n && is_digit(s[j]))
                    j++;
                if (j < n && s[j] == ':' && !word_before(s, i)) {
                    sc->key = (const char*)s + i;
                    sc->keylen = j - i;
                }
            }
            break;
        case 'm':
            if (!sc->key && n - i >= 5 && memcmp(s + i, "main:", 5) == 0 && !word_before(s, i)) {
                sc->key = (const char*)s + i;
                sc->keylen = 4;
            }
            break;
        default:
            break;
        }
    }
}
