// SPDX-License-Identifier: MIT
// Short C++ names (cxx_names.h).
#include "cxx_names.h"

#include "escape.h"

#include <stdlib.h>
#include <string.h>

static bool full_names;

void mr_cxx_names_set_full(bool full) {
    full_names = full;
}

bool mr_cxx_names_full(void) {
    return full_names;
}

// The standard library's types as the demangler spells them (after "> >" became ">>"), and
// the names the standard gives them. libc++'s std::__1:: forms are read once std::__1:: is
// std::.
static const char* const aliases[][2] = {
    {"std::basic_string<char, std::char_traits<char>, std::allocator<char>>", "std::string"},
    {"std::basic_string<wchar_t, std::char_traits<wchar_t>, std::allocator<wchar_t>>",
     "std::wstring"},
    {"std::basic_string<char8_t, std::char_traits<char8_t>, std::allocator<char8_t>>",
     "std::u8string"},
    {"std::basic_string<char16_t, std::char_traits<char16_t>, std::allocator<char16_t>>",
     "std::u16string"},
    {"std::basic_string<char32_t, std::char_traits<char32_t>, std::allocator<char32_t>>",
     "std::u32string"},
    {"std::basic_string_view<char, std::char_traits<char>>", "std::string_view"},
    {"std::basic_ostringstream<char, std::char_traits<char>, std::allocator<char>>",
     "std::ostringstream"},
    {"std::basic_istringstream<char, std::char_traits<char>, std::allocator<char>>",
     "std::istringstream"},
    {"std::basic_stringstream<char, std::char_traits<char>, std::allocator<char>>",
     "std::stringstream"},
    {"std::basic_stringbuf<char, std::char_traits<char>, std::allocator<char>>", "std::stringbuf"},
    {"std::basic_ostream<char, std::char_traits<char>>", "std::ostream"},
    {"std::basic_istream<char, std::char_traits<char>>", "std::istream"},
    {"std::basic_iostream<char, std::char_traits<char>>", "std::iostream"},
    {"std::basic_ofstream<char, std::char_traits<char>>", "std::ofstream"},
    {"std::basic_ifstream<char, std::char_traits<char>>", "std::ifstream"},
    {"std::basic_fstream<char, std::char_traits<char>>", "std::fstream"},
    {"std::basic_filebuf<char, std::char_traits<char>>", "std::filebuf"},
    {"std::basic_streambuf<char, std::char_traits<char>>", "std::streambuf"},
    {"std::basic_ios<char, std::char_traits<char>>", "std::ios"},
};

// Inline namespaces that only version the library.
static const char* const versions[] = {"__cxx11::", "__1::", "__8::"};

// A growable string; on running out of memory it stops growing (the name then reads cut).
typedef struct str {
    char* p;
    size_t n, cap;
} str;

static void put(str* s, const char* p, size_t n) {
    if (s->n + n + 1 > s->cap) {
        size_t cap = (s->n + n + 1) * 2;
        char* q = realloc(s->p, cap);
        if (!q)
            return;
        s->p = q;
        s->cap = cap;
    }
    memcpy(s->p + s->n, p, n);
    s->n += n;
    s->p[s->n] = 0;
}

static bool starts(const char* s, const char* p) {
    return strncmp(s, p, strlen(p)) == 0;
}

static bool ends_with_operator(const char* begin, const char* at) {
    return at - begin >= 8 && !memcmp(at - 8, "operator", 8) &&
           (at - begin == 8 ||
            !(at[-9] == '_' || (at[-9] >= 'a' && at[-9] <= 'z') ||
              (at[-9] >= 'A' && at[-9] <= 'Z') || (at[-9] >= '0' && at[-9] <= '9')));
}

// The length of an operator's symbol right after "operator" ("<<=", "->", "()"...), 0 for
// a named one (new, delete, bool, a conversion).
static size_t operator_symbol(const char* p) {
    static const char* const ops[] = {
        "<=>", "<<=", ">>=", "<<", ">>", "<=", ">=", "->*", "->", "()", "[]", "<", ">", NULL};
    for (size_t i = 0; ops[i]; i++)
        if (starts(p, ops[i]))
            return strlen(ops[i]);
    return 0;
}

// Scans a name: where its qualified name starts, past a function template's return type
// (the text after the last space outside brackets before the parameter list, unless that
// space follows "operator": operator new, a conversion), and where its parameter list
// starts (NULL without one). "(anonymous namespace)" is part of a name.
static const char* scan(const char* s, const char** params) {
    int depth = 0;
    const char* after_space = s;
    *params = NULL;
    for (const char* p = s; *p; p++) {
        if (starts(p, "(anonymous namespace)")) {
            p += strlen("(anonymous namespace)") - 1;
        } else if (starts(p, "operator") && ends_with_operator(s, p + 8)) {
            p += 8;
            size_t k = operator_symbol(p);
            if (k) {
                p += k;
                while (*p == ' ') // operator<< <char>: the template's arguments follow
                    p++;
                p--;
            } else {
                while (*p == ' ')
                    p++;
                p--;
            }
        } else if (*p == '<' || *p == '{' || *p == '[') {
            depth++;
        } else if ((*p == '>' || *p == '}' || *p == ']') && depth > 0) {
            depth--;
        } else if (*p == '(' && depth == 0) {
            *params = p;
            return after_space;
        } else if (*p == ' ' && depth == 0) {
            after_space = p + 1;
        }
    }
    return s;
}

static const char* name_start(const char* s) {
    const char* params;
    return scan(s, &params);
}

// Rust's and Python's names open brackets where C++ has no template: a qualified path
// (<T as Trait>::f), a turbofish (f::<T>) or <module>. Those stay.
static bool template_open(const char* begin, const char* p) {
    return p > begin && !(p - begin >= 2 && p[-1] == ':' && p[-2] == ':');
}

// Copies s with every template argument list collapsed to <...>.
static void collapse(str* out, const char* s) {
    const char* begin = s;
    for (const char* p = s; *p;) {
        if (starts(p, "operator") && ends_with_operator(begin, p + 8)) {
            size_t k = 8 + operator_symbol(p + 8);
            put(out, p, k);
            p += k;
            continue;
        }
        if (*p == '<') {
            int depth = 0;
            const char* q = p;
            for (; *q; q++) {
                if (*q == '<')
                    depth++;
                else if (*q == '>' && --depth == 0)
                    break;
            }
            if (!*q) { // unbalanced: left as it is
                put(out, p, strlen(p));
                return;
            }
            if (template_open(begin, p))
                put(out, "<...>", 5);
            else
                put(out, p, (size_t)(q + 1 - p));
            p = q + 1;
            continue;
        }
        put(out, p, 1);
        p++;
    }
}

// The versioning namespaces out, then the aliases in.
static void aliased(str* out, const char* s) {
    str plain = {0};
    put(&plain, "", 0);
    for (const char* p = s; *p;) {
        size_t skip = 0;
        if (starts(p, "std::"))
            for (size_t i = 0; i < sizeof versions / sizeof *versions && !skip; i++)
                if (starts(p + 5, versions[i]))
                    skip = strlen(versions[i]);
        put(&plain, p, skip ? 5 : 1);
        p += skip ? 5 + skip : 1;
    }
    for (const char* p = plain.p ? plain.p : ""; *p;) {
        size_t i = 0;
        while (i < sizeof aliases / sizeof *aliases && !starts(p, aliases[i][0]))
            i++;
        if (i < sizeof aliases / sizeof *aliases) {
            put(out, aliases[i][1], strlen(aliases[i][1]));
            p += strlen(aliases[i][0]);
        } else {
            put(out, p++, 1);
        }
    }
    free(plain.p);
}

char* mr_cxx_names_short(const char* name, char* buf, size_t len) {
    str a = {0}, b = {0}, c = {0};
    put(&a, "", 0);
    put(&b, "", 0);
    put(&c, "", 0);
    // "> >" as older demanglers close nested templates; ">>" as newer ones do. ABI tags
    // ("[abi:cxx11]": the function returns a std::string of the C++11 ABI) tell overloads
    // apart for the linker, not for a reader.
    for (const char* p = name; *p; p++) {
        const char* tag_end = starts(p, "[abi:") ? strchr(p, ']') : NULL;
        if (tag_end)
            p = tag_end;
        else if (!(p[0] == ' ' && p > name && p[-1] == '>' && p[1] == '>'))
            put(&a, p, 1);
    }
    aliased(&b, a.p ? a.p : name);
    collapse(&c, name_start(b.p ? b.p : name));
    const char* got = c.p ? c.p : name;
    static const char ellipsis[] = "\xe2\x80\xa6"; // U+2026
    size_t n = strlen(got), el = 0;
    if (n > len - 1) {
        el = len - 1 >= 2 * (sizeof ellipsis - 1) ? sizeof ellipsis - 1 : 0;
        n = len - 1 - el;
        while (n > 0 && ((unsigned char)got[n] & 0xC0) == 0x80)
            n--;
    }
    memcpy(buf, got, n);
    memcpy(buf + n, ellipsis, el);
    buf[n + el] = 0;
    free(a.p);
    free(b.p);
    free(c.p);
    return buf;
}

// A demangled function's parameter list ends the name, but for qualifiers: "f<int>(int)",
// "g() const", "h() &&", "k() [clone .cold]".
static bool signature(const char* name) {
    const char* p = strrchr(name, ')');
    if (!p)
        return false;
    for (p++; *p; p++)
        if (!strchr(" &[]._", *p) && !(*p >= 'a' && *p <= 'z') && !(*p >= '0' && *p <= '9'))
            return false;
    return true;
}

const char* mr_cxx_names_display(const char* name, char* buf, size_t len) {
    // Only a C++ (or Rust) name has something to shorten: a scope or a parameter list, and
    // template arguments or a return type. C names, Python's <module> and whatever else a
    // program named its functions are shown as they are.
    if (full_names || !name ||
        (!strchr(name, '<') && !strchr(name, ' ') && !strstr(name, "[abi:")) ||
        (!strstr(name, "::") && !signature(name)))
        return name;
    return mr_cxx_names_short(name, buf, len);
}

char* mr_cxx_names_display_dup(const char* name) {
    // Shortening only drops text but for "<>", which reads "<...>": twice the name is room.
    size_t len = 2 * (name ? strlen(name) : 0) + 16;
    char* buf = malloc(len);
    if (buf && mr_cxx_names_display(name, buf, len) == buf)
        return buf;
    free(buf);
    return NULL;
}

void mr_cxx_names_fputs(FILE* out, const char* name) {
    char* dup = mr_cxx_names_display_dup(name);
    mr_escape_fputs_text(out, dup ? dup : name);
    free(dup);
}

bool mr_cxx_names_is_std(const char* name) {
    const char* p = name_start(name);
    if (starts(p, "::"))
        p += 2;
    return starts(p, "std::") || starts(p, "__gnu_cxx::");
}

size_t mr_cxx_names_params_at(const char* name) {
    const char* params;
    scan(name, &params);
    return params ? (size_t)(params - name) : strlen(name);
}
