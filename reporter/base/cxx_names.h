// SPDX-License-Identifier: MIT
// C++ names as reports show them (docs/names.md): the standard library's spelled-out
// types read as their aliases (std::string for std::__cxx11::basic_string<char,
// std::char_traits<char>, std::allocator<char> >), template arguments collapse to <...>,
// a function template's return type and ABI tags ([abi:cxx11]) go, as IDEs and profilers'
// call trees show them; --full-names (mr_cxx_names_set_full) keeps names as demangled.
// Only text and what a page draws are shortened: JSON and hovers carry the full name.
// Knows no capture and never fails: a name it cannot read is returned as it is.
#ifndef MR_CXX_NAMES_H
#define MR_CXX_NAMES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

// The display form of every name shown from now on: full (--full-names) or short.
void mr_cxx_names_set_full(bool full);
bool mr_cxx_names_full(void);

// The short form of `name` into buf (len >= 1), NUL-terminated; one longer than len - 1
// bytes is cut visibly, ending in "…" (never in the middle of a UTF-8 sequence): for a
// view that cuts names by design (a plot's legend). Returns buf.
char* mr_cxx_names_short(const char* name, char* buf, size_t len);
// What a report shows for `name`: name itself with --full-names or when it has nothing to
// shorten, else its short form in buf. Returns one of the two.
const char* mr_cxx_names_display(const char* name, char* buf, size_t len);

// What a report shows for `name` (as mr_cxx_names_display), whole however long: malloc'd,
// or NULL when that is name itself (or out of memory): the caller then shows name.
char* mr_cxx_names_display_dup(const char* name);
// Writes what a report shows for `name` whole, however long, as terminal text
// (mr_escape_fputs_text: escaped). A NULL name writes nothing.
void mr_cxx_names_fputs(FILE* out, const char* name);

// Where the parameter list of a function's name starts ("(unsigned long)"), strlen(name)
// without one: compact rows (diff's stacks) show names without it.
size_t mr_cxx_names_params_at(const char* name);

// True for the C++ standard library's own functions (namespaces std:: and __gnu_cxx::,
// libc++'s std::__1:: included), read after a return type: std::vector<T>::_M_realloc_insert,
// std::__new_allocator<T>::allocate, std::allocator_traits<A>::allocate, std::make_unique.
// Site labels pass them as they pass allocation wrappers (sites.h).
bool mr_cxx_names_is_std(const char* name);

#endif
