// SPDX-License-Identifier: MIT
// Short C++ names (reporter/base/cxx_names.h) against names g++ 12 and libc++ demangle to,
// each with the short form written here by hand: the standard aliases, template arguments
// collapsed, return types and ABI tags dropped, operators kept; Rust, Python and C names left as
// they are; --full-names; the standard library's functions recognised; cutting on UTF-8.
#include "cxx_names.h"

#include "../check.h"

#include <stdlib.h>
#include <string.h>

#define STR "std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> >"

static const char* const cases[][2] = {
    {STR "::_M_construct(unsigned long, char)", "std::string::_M_construct(unsigned long, char)"},
    {"std::__new_allocator<std::_Rb_tree_node<std::pair<" STR
     " const, std::vector<int, std::allocator<int> > > > >::allocate(unsigned long, void const*)",
     "std::__new_allocator<...>::allocate(unsigned long, void const*)"},
    {"std::vector<" STR ", std::allocator<" STR " > >::push_back(" STR "&&)",
     "std::vector<...>::push_back(std::string&&)"},
    {"std::__detail::_MakeUniq<app::Record>::__single_object std::make_unique<app::Record>()",
     "std::make_unique<...>()"},
    {"void std::vector<int, std::allocator<int> >::_M_realloc_insert<int const&>(__gnu_cxx::"
     "__normal_iterator<int*, std::vector<int, std::allocator<int> > >, int const&)",
     "std::vector<...>::_M_realloc_insert<...>(__gnu_cxx::__normal_iterator<...>, int const&)"},
    {"std::__1::basic_string<char, std::__1::char_traits<char>, std::__1::allocator<char> >::"
     "__init(char const*, unsigned long)",
     "std::string::__init(char const*, unsigned long)"},
    {"std::basic_ostream<char, std::char_traits<char> >& std::operator<< <std::char_traits<char> "
     ">(std::basic_ostream<char, std::char_traits<char> >&, char const*)",
     "std::operator<< <...>(std::ostream&, char const*)"},
    {"std::vector<int, std::allocator<int> >::operator[](unsigned long)",
     "std::vector<...>::operator[](unsigned long)"},
    {"app::Store<app::Record>::add(app::Record const&)",
     "app::Store<...>::add(app::Record const&)"},
    {"(anonymous namespace)::fill(std::map<int, int, std::less<int>, std::allocator<std::pair<int "
     "const, int> > >&)",
     "(anonymous namespace)::fill(std::map<...>&)"},
    {"main::{lambda(int)#1}::operator()(int) const",
     "main::{lambda(int)#1}::operator()(int) const"},
    {"operator new(unsigned long)", "operator new(unsigned long)"},
    {"unsigned long count<long>(long)", "count<...>(long)"},
    {"core::ptr::drop_in_place::<alloc::vec::Vec<u8>>",
     "core::ptr::drop_in_place::<alloc::vec::Vec<u8>>"},
    {"<() as std::process::Termination>::report", "<() as std::process::Termination>::report"},
    {"app::load_names[abi:cxx11](int)", "app::load_names(int)"},
    {"std::map<" STR ", std::vector<int, std::allocator<int> >, std::less<" STR
     " >, std::allocator<std::pair<" STR " const, std::vector<int, std::allocator<int> > > > > "
     "app::build_index[abi:cxx11](int)",
     "app::build_index(int)"},
    {"app::Tagged[abi:v2][abi:cxx11]::name[abi:cxx11]() const", "app::Tagged::name() const"},
};

// Names reports leave alone: C, Python, an address, a name a program chose.
static const char* const kept[] = {"main", "<module>", "libstdc++.so.6!0xa5780",
                                   "</script><script>alert(1)</script>", "parse file"};

int main(void) {
    char buf[512];
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        CHECK_EQ_STR(mr_cxx_names_short(cases[i][0], buf, sizeof buf), cases[i][1]);
        CHECK_EQ_STR(mr_cxx_names_display(cases[i][0], buf, sizeof buf), cases[i][1]);
    }
    for (size_t i = 0; i < sizeof kept / sizeof *kept; i++)
        CHECK(mr_cxx_names_display(kept[i], buf, sizeof buf) == kept[i]);

    // The standard library's functions, past a return type; not the program's own.
    CHECK(mr_cxx_names_is_std(cases[1][0]));
    CHECK(mr_cxx_names_is_std(cases[3][0]));
    CHECK(mr_cxx_names_is_std(cases[4][0]));
    CHECK(
        mr_cxx_names_is_std("__gnu_cxx::new_allocator<int>::allocate(unsigned long, void const*)"));
    CHECK(!mr_cxx_names_is_std(cases[8][0]));
    CHECK(!mr_cxx_names_is_std("operator new(unsigned long)"));
    CHECK(!mr_cxx_names_is_std("stdio_setup(int)"));

    // A cut never splits a UTF-8 sequence: "é" is two bytes.
    CHECK_EQ_STR(mr_cxx_names_short("caf\xc3\xa9::f<int>()", buf, 5), "caf");
    CHECK_EQ_STR(mr_cxx_names_short("caf\xc3\xa9::f<int>()", buf, 6), "caf\xc3\xa9");
    // A buffer with room for more than an ellipsis says where it cut (a plot's legend).
    CHECK_EQ_STR(mr_cxx_names_short("app::abcdefghij::f<int>()", buf, 12), "app::abc\xe2\x80\xa6");
    CHECK_EQ_STR(mr_cxx_names_short("app::abcdefghij::f<int>()", buf, 26),
                 "app::abcdefghij::f<...>()");

    // Whole however long (flow's boxes elide a long name themselves, its tooltip whole):
    // 300 parameters of std::string read as std::string, 3,906 bytes from 24,306.
    char* longest = malloc(30000);
    char* want = malloc(30000);
    CHECK(longest && want);
    strcpy(longest, "app::g(");
    strcpy(want, "app::g(");
    for (int i = 0; i < 300; i++) {
        strcat(longest, i ? ", " : "");
        strcat(want, i ? ", " : "");
        strcat(longest, "std::__cxx11::basic_string<char, std::char_traits<char>, "
                        "std::allocator<char> >");
        strcat(want, "std::string");
    }
    strcat(longest, ")");
    strcat(want, ")");
    char* shown = mr_cxx_names_display_dup(longest);
    CHECK_EQ_STR(shown, want);
    CHECK_EQ_I64((int64_t)strlen(want), 3906);
    free(shown);
    CHECK(mr_cxx_names_display_dup("main") == NULL); // nothing to shorten: shown as it is
    free(longest);
    free(want);

    // --full-names: every name as demangled.
    mr_cxx_names_set_full(true);
    CHECK(mr_cxx_names_full());
    CHECK(mr_cxx_names_display(cases[0][0], buf, sizeof buf) == cases[0][0]);
    CHECK(mr_cxx_names_display_dup(cases[0][0]) == NULL);
    mr_cxx_names_set_full(false);
    CHECK_DONE();
}
