// SPDX-License-Identifier: MIT
// Rust symbol names as rustfilt prints them: the legacy mangling (_ZN...17h<hash>E, its
// $LT$-style escapes decoded, the hash dropped) and the v0 mangling (_R..., the Rust
// compiler's "symbol-mangling-version=v0", which its standard library uses): paths, impls,
// generic arguments and types, with no crate disambiguator. Pure string work: no state,
// one malloc'd result; a name that does not parse is left to the caller (NULL).
#include "symbolize_frame.h"

#include <ctype.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// ---- output

typedef struct out {
    char* p;
    size_t len, cap;
    bool bad; // out of memory or too deep
} out;

static void put(out* o, const char* s, size_t n) {
    if (o->bad)
        return;
    if (o->len + n + 1 > o->cap) {
        size_t nc = o->cap ? o->cap * 2 : 128;
        while (nc < o->len + n + 1)
            nc *= 2;
        char* np = realloc(o->p, nc);
        if (!np) {
            o->bad = true;
            return;
        }
        o->p = np;
        o->cap = nc;
    }
    memcpy(o->p + o->len, s, n);
    o->len += n;
    o->p[o->len] = 0;
}

static void puts_(out* o, const char* s) {
    put(o, s, strlen(s));
}

// ---- legacy: _ZN <len><ident>... 17h<16 hex> E

// $LT$ and the like (rustc's legacy escapes) in one path component.
static void legacy_ident(out* o, const char* s, size_t n) {
    static const struct {
        const char* code;
        const char* text;
    } esc[] = {{"SP", "@"}, {"BP", "*"}, {"RF", "&"}, {"LT", "<"},
               {"GT", ">"}, {"LP", "("}, {"RP", ")"}, {"C", ","}};
    size_t i = 0;
    if (n > 1 && s[0] == '_' && s[1] == '$') // a leading '_' guards a '$'
        i = 1;
    while (i < n) {
        if (s[i] == '.' && i + 1 < n && s[i + 1] == '.') {
            puts_(o, "::");
            i += 2;
            continue;
        }
        if (s[i] == '$') {
            const char* end = memchr(s + i + 1, '$', n - i - 1);
            size_t k = end ? (size_t)(end - (s + i + 1)) : 0;
            bool done = false;
            for (size_t e = 0; end && e < sizeof esc / sizeof *esc && !done; e++)
                if (strlen(esc[e].code) == k && !strncmp(s + i + 1, esc[e].code, k)) {
                    puts_(o, esc[e].text);
                    done = true;
                }
            if (!done && end && k > 1 && s[i + 1] == 'u') { // $u7e$: a code point in hex
                unsigned long c = strtoul(s + i + 2, NULL, 16);
                char ch = c >= 0x20 && c < 0x7f ? (char)c : '?';
                put(o, &ch, 1);
                done = true;
            }
            if (done) {
                i += k + 2;
                continue;
            }
        }
        put(o, s + i, 1);
        i++;
    }
}

static bool is_hash(const char* s, size_t n) {
    if (n != 17 || s[0] != 'h')
        return false;
    for (size_t i = 1; i < n; i++)
        if (!isxdigit((unsigned char)s[i]))
            return false;
    return true;
}

static char* legacy(const char* name) {
    const char* p = name + 3; // past _ZN
    out o = {0};
    int parts = 0;
    while (*p && *p != 'E') {
        if (!isdigit((unsigned char)*p))
            goto fail;
        char* end;
        unsigned long n = strtoul(p, &end, 10);
        if (n == 0 || strlen(end) < n)
            goto fail;
        p = end;
        bool last = p[n] == 'E';
        if (!(last && is_hash(p, n))) {
            if (parts++)
                puts_(&o, "::");
            legacy_ident(&o, p, n);
        } else if (parts == 0) {
            goto fail;
        }
        p += n;
    }
    if (*p != 'E' || !parts || o.bad)
        goto fail;
    return o.p;
fail:
    free(o.p);
    return NULL;
}

// ---- v0: _R [<version>] <path> [<instantiating crate>]

typedef struct v0 {
    const char* s; // after "_R"
    size_t n, pos;
    int depth;
    bool bad;
    bool in_type;   // a type's path prints its generic arguments as <..>, a value's as ::<..>
    uint64_t bound; // lifetimes bound by the binders around: 'a, 'b, ...
    out* o;
} v0;

#define MAX_DEPTH 64

static char peek(v0* d) {
    return d->pos < d->n ? d->s[d->pos] : 0;
}

static bool eat(v0* d, char c) {
    if (peek(d) == c) {
        d->pos++;
        return true;
    }
    return false;
}

// <base-62-number>: "_" is 0, else digits then "_" give their value + 1.
static uint64_t base62(v0* d) {
    if (eat(d, '_'))
        return 0;
    uint64_t v = 0;
    for (char c; (c = peek(d)) != '_'; d->pos++) {
        int k = c >= '0' && c <= '9'   ? c - '0'
                : c >= 'a' && c <= 'z' ? c - 'a' + 10
                : c >= 'A' && c <= 'Z' ? c - 'A' + 36
                                       : -1;
        if (k < 0 || v > UINT64_MAX / 62) {
            d->bad = true;
            return 0;
        }
        v = v * 62 + (uint64_t)k;
    }
    d->pos++;
    return v + 1;
}

static uint64_t disambiguator(v0* d) {
    return eat(d, 's') ? base62(d) + 1 : 0;
}

// <undisambiguated-identifier>: the bytes in place (punycode, "u", shown as it is).
static void ident(v0* d, const char** s, size_t* n) {
    eat(d, 'u');
    uint64_t len = 0;
    if (!isdigit((unsigned char)peek(d))) {
        d->bad = true;
        return;
    }
    if (eat(d, '0')) { // no leading zeros: "0" is the empty name (a closure's)
        len = 0;
    } else {
        while (isdigit((unsigned char)peek(d)) && len < d->n)
            len = len * 10 + (uint64_t)(d->s[d->pos++] - '0');
        eat(d, '_');
    }
    if (len > d->n - d->pos) {
        d->bad = true;
        return;
    }
    *s = d->s + d->pos;
    *n = (size_t)len;
    d->pos += (size_t)len;
}

static void path(v0* d);
static void type(v0* d);
static const char* basic_type(char c);
static void lifetime(v0* d);
static void const_value(v0* d, const char* ty);

// Runs fn at a backref's target, then comes back.
static void backref(v0* d, void (*fn)(v0*)) {
    size_t at = d->pos - 1;
    uint64_t to = base62(d);
    if (d->bad || to >= at) {
        d->bad = true;
        return;
    }
    size_t back = d->pos;
    d->pos = (size_t)to;
    fn(d);
    d->pos = back;
}

static bool enter(v0* d) {
    if (++d->depth > MAX_DEPTH)
        d->bad = true;
    return !d->bad;
}

static void generic_args(v0* d) {
    puts_(d->o, "<");
    for (int i = 0; !d->bad && !eat(d, 'E'); i++) {
        if (i)
            puts_(d->o, ", ");
        if (eat(d, 'L')) {
            lifetime(d);
        } else if (eat(d, 'K')) { // a const: its type, then its value
            if (eat(d, 'p')) {
                puts_(d->o, "_");
                continue;
            }
            const char* ty = basic_type(peek(d));
            if (!ty) { // a backref or a structured const: not shown in full
                d->bad = true;
                break;
            }
            d->pos++;
            const_value(d, ty);
        } else {
            type(d);
        }
        if (peek(d) == 0)
            d->bad = true;
    }
    puts_(d->o, ">");
}

// A trait's path, printed as a type's.
static void trait_path(v0* d) {
    bool was = d->in_type;
    d->in_type = true;
    path(d);
    d->in_type = was;
}

// Parses a path without printing it.
static void skip_path(v0* d) {
    out skip = {0};
    out* keep = d->o;
    d->o = &skip;
    path(d);
    d->o = keep;
    free(skip.p);
}

static void path(v0* d) {
    if (!enter(d))
        return;
    char c = d->pos < d->n ? d->s[d->pos++] : 0;
    const char* s;
    size_t n;
    switch (c) {
    case 'C': // crate root: its name, without its disambiguator
        disambiguator(d);
        ident(d, &s, &n);
        if (!d->bad)
            put(d->o, s, n);
        break;
    case 'M': // inherent impl: <Type>
        disambiguator(d);
        skip_path(d); // the impl's own path: not shown
        puts_(d->o, "<");
        type(d);
        puts_(d->o, ">");
        break;
    case 'X': // trait impl: <Type as Trait>
        disambiguator(d);
        skip_path(d); // the impl's own path: not shown
        puts_(d->o, "<");
        type(d);
        puts_(d->o, " as ");
        trait_path(d);
        puts_(d->o, ">");
        break;
    case 'Y': // trait definition: <Type as Trait>
        puts_(d->o, "<");
        type(d);
        puts_(d->o, " as ");
        trait_path(d);
        puts_(d->o, ">");
        break;
    case 'N': { // nested: parent::name, closures and shims in braces
        char ns = d->pos < d->n ? d->s[d->pos++] : 0;
        path(d);
        uint64_t dis = disambiguator(d);
        ident(d, &s, &n);
        if (d->bad)
            break;
        if (ns >= 'a' && ns <= 'z') { // an internal name: just ::name
            puts_(d->o, "::");
            put(d->o, s, n);
        } else {
            char buf[64];
            const char* what = ns == 'C' ? "closure" : ns == 'S' ? "shim" : NULL;
            puts_(d->o, "::{");
            if (what)
                puts_(d->o, what);
            else
                put(d->o, &ns, 1);
            if (n) {
                puts_(d->o, ":");
                put(d->o, s, n);
            }
            snprintf(buf, sizeof buf, "#%" PRIu64 "}", dis);
            puts_(d->o, buf);
        }
        break;
    }
    case 'I': // generic instance: path<args>
        path(d);
        if (!d->bad) {
            // A function's or value's path prints its arguments as path::<args>, as rustfilt
            // does; a type's as Type<args>.
            if (!d->in_type)
                puts_(d->o, "::");
            bool was = d->in_type;
            d->in_type = true;
            generic_args(d);
            d->in_type = was;
        }
        break;
    case 'B':
        backref(d, path);
        break;
    default:
        d->bad = true;
    }
    d->depth--;
}

static const char* basic_type(char c) {
    switch (c) {
    case 'a':
        return "i8";
    case 'b':
        return "bool";
    case 'c':
        return "char";
    case 'd':
        return "f64";
    case 'e':
        return "str";
    case 'f':
        return "f32";
    case 'h':
        return "u8";
    case 'i':
        return "isize";
    case 'j':
        return "usize";
    case 'l':
        return "i32";
    case 'm':
        return "u32";
    case 'n':
        return "i128";
    case 'o':
        return "u128";
    case 's':
        return "i16";
    case 't':
        return "u16";
    case 'u':
        return "()";
    case 'v':
        return "...";
    case 'x':
        return "i64";
    case 'y':
        return "u64";
    case 'z':
        return "!";
    case 'p':
        return "_";
    default:
        return NULL;
    }
}

// L<index>: 0 is an erased lifetime; else counted back from the innermost bound one.
static void lifetime(v0* d) {
    uint64_t i = base62(d);
    if (i == 0 || i > d->bound) {
        puts_(d->o, "'_");
        return;
    }
    uint64_t k = d->bound - i;
    char name[32];
    if (k < 26)
        snprintf(name, sizeof name, "'%c", (char)('a' + k));
    else
        snprintf(name, sizeof name, "'_%" PRIu64, k);
    puts_(d->o, name);
}

// G<n>: for<'a, ...> binds n + 1 lifetimes for what follows; returns how many.
static uint64_t binder(v0* d) {
    if (!eat(d, 'G'))
        return 0;
    uint64_t n = base62(d) + 1;
    if (n > 64) {
        d->bad = true;
        return 0;
    }
    puts_(d->o, "for<");
    for (uint64_t k = 0; k < n; k++) {
        char name[32];
        uint64_t at = d->bound + k;
        if (at < 26)
            snprintf(name, sizeof name, "%s'%c", k ? ", " : "", (char)('a' + at));
        else
            snprintf(name, sizeof name, "%s'_%" PRIu64, k ? ", " : "", at);
        puts_(d->o, name);
    }
    puts_(d->o, "> ");
    d->bound += n;
    return n;
}

// A const's value after its type (already parsed into `ty`): 10: usize, true, 'x'.
static void const_value(v0* d, const char* ty) {
    bool neg = eat(d, 'n');
    uint64_t v = 0;
    while (isxdigit((unsigned char)peek(d))) {
        char c = d->s[d->pos++];
        v = v * 16 + (uint64_t)(isdigit((unsigned char)c) ? c - '0' : (c | 0x20) - 'a' + 10);
    }
    if (!eat(d, '_'))
        d->bad = true;
    char num[64];
    if (!strcmp(ty, "bool"))
        snprintf(num, sizeof num, "%s", v ? "true" : "false");
    else if (!strcmp(ty, "char") && v >= 0x20 && v < 0x7f)
        snprintf(num, sizeof num, "'%c'", (char)v);
    else
        snprintf(num, sizeof num, "%s%" PRIu64 ": %s", neg ? "-" : "", v, ty);
    puts_(d->o, num);
}

static void type(v0* d) {
    if (!enter(d))
        return;
    char c = peek(d);
    const char* basic = basic_type(c);
    if (basic) {
        d->pos++;
        puts_(d->o, basic);
    } else if (c == 'R' || c == 'Q') { // &T, &mut T
        d->pos++;
        puts_(d->o, "&");
        if (eat(d, 'L')) {
            size_t at = d->o->len;
            lifetime(d);
            if (d->o->len == at + 2 && !strcmp(d->o->p + at, "'_")) { // erased: not shown
                d->o->len = at;
                d->o->p[at] = 0;
            } else {
                puts_(d->o, " ");
            }
        }
        if (c == 'Q')
            puts_(d->o, "mut ");
        type(d);
    } else if (c == 'P' || c == 'O') { // *const T, *mut T
        d->pos++;
        puts_(d->o, c == 'P' ? "*const " : "*mut ");
        type(d);
    } else if (c == 'A' || c == 'S') { // [T; N], [T]
        d->pos++;
        puts_(d->o, "[");
        type(d);
        if (c == 'A') {
            puts_(d->o, "; ");
            out skip = {0};
            out* keep = d->o;
            d->o = &skip;
            type(d); // the length's type
            d->o = keep;
            free(skip.p);
            uint64_t v = 0;
            if (eat(d, 'p')) {
                puts_(d->o, "_");
            } else {
                while (isxdigit((unsigned char)peek(d))) {
                    char h = d->s[d->pos++];
                    v = v * 16 +
                        (uint64_t)(isdigit((unsigned char)h) ? h - '0' : (h | 0x20) - 'a' + 10);
                }
                if (!eat(d, '_'))
                    d->bad = true;
                char num[32];
                snprintf(num, sizeof num, "%" PRIu64, v);
                puts_(d->o, num);
            }
        }
        puts_(d->o, "]");
    } else if (c == 'T') { // tuple
        d->pos++;
        puts_(d->o, "(");
        int k = 0;
        for (; !d->bad && !eat(d, 'E'); k++) {
            if (k)
                puts_(d->o, ", ");
            type(d);
            if (!peek(d))
                d->bad = true;
        }
        puts_(d->o, k == 1 ? ",)" : ")");
    } else if (c == 'F') { // fn(...) -> T
        d->pos++;
        uint64_t bound = binder(d);
        if (eat(d, 'U'))
            puts_(d->o, "unsafe ");
        if (eat(d, 'K')) {
            if (eat(d, 'C')) {
                puts_(d->o, "extern \"C\" ");
            } else {
                const char* s;
                size_t n;
                ident(d, &s, &n);
                puts_(d->o, "extern \"");
                for (size_t k = 0; k < n && !d->bad; k++)
                    put(d->o, s[k] == '_' ? "-" : s + k, 1);
                puts_(d->o, "\" ");
            }
        }
        puts_(d->o, "fn(");
        for (int k = 0; !d->bad && !eat(d, 'E'); k++) {
            if (k)
                puts_(d->o, ", ");
            type(d);
            if (!peek(d))
                d->bad = true;
        }
        puts_(d->o, ")");
        if (peek(d) == 'u') {
            d->pos++;
        } else {
            puts_(d->o, " -> ");
            type(d);
        }
        d->bound -= bound;
    } else if (c == 'D') { // dyn Trait + ...
        d->pos++;
        puts_(d->o, "dyn ");
        uint64_t bound = binder(d);
        for (int k = 0; !d->bad && !eat(d, 'E'); k++) {
            if (k)
                puts_(d->o, " + ");
            trait_path(d);
            // Associated types go inside the trait's generic arguments: Fn<(A,), Output = R>.
            for (int b = 0; !d->bad && eat(d, 'p'); b++) {
                const char* s;
                size_t n;
                ident(d, &s, &n);
                if (b == 0 && d->o->len && d->o->p[d->o->len - 1] == '>') {
                    d->o->p[--d->o->len] = 0;
                    puts_(d->o, ", ");
                } else {
                    puts_(d->o, b ? ", " : "<");
                }
                put(d->o, s, n);
                puts_(d->o, " = ");
                type(d);
                if (peek(d) != 'p')
                    puts_(d->o, ">");
            }
            if (!peek(d))
                d->bad = true;
        }
        d->bound -= bound;
        if (eat(d, 'L')) { // the object's lifetime: + 'a unless erased
            size_t at = d->o->len;
            puts_(d->o, " + ");
            lifetime(d);
            if (!strcmp(d->o->p + at, " + '_")) {
                d->o->len = at;
                d->o->p[at] = 0;
            }
        }
    } else if (c == 'B') {
        d->pos++;
        backref(d, type);
    } else {
        bool was = d->in_type;
        d->in_type = true;
        path(d);
        d->in_type = was;
    }
    d->depth--;
}

static char* v0_name(const char* name) {
    out o = {0};
    v0 d = {.s = name + 2, .n = strlen(name + 2), .o = &o};
    if (isdigit((unsigned char)peek(&d))) // an encoding version: only 0 is known
        return NULL;
    path(&d);
    // What follows (the instantiating crate, a vendor suffix after '.') is not shown.
    if (d.bad || o.bad || !o.p) {
        free(o.p);
        return NULL;
    }
    return o.p;
}

char* mt_symbolize_frame_demangle_rust(const char* name) {
    if (!strncmp(name, "_R", 2))
        return v0_name(name);
    if (!strncmp(name, "_ZN", 3)) {
        // Legacy only when its last part is the 17h<16 hex digits> hash.
        const char* e = name + strlen(name);
        if (e - name > 23 && e[-1] == 'E' && e[-20] == '1' && e[-19] == '7' && is_hash(e - 18, 17))
            return legacy(name);
    }
    return NULL;
}
