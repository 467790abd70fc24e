// SPDX-License-Identifier: MIT
// A small shared library for the symbolizer tests: built with debug info, then copied
// stripped of DWARF, stripped of .symtab, and split with a .gnu_debuglink, so each lookup
// path of the symbolizer (DWARF, .symtab, .dynsym, separate debug file) has a subject.
#define SYMTEST_API __attribute__((visibility("default")))

typedef void (*symtest_cb)(int slot);

SYMTEST_API void symtest_run(symtest_cb cb);

// Source lines of the two calls, for the test's expectations (index = callback slot).
SYMTEST_API int symtest_lines[2];
// Where symtest_hidden starts, which a fully stripped copy's frames are named by.
SYMTEST_API unsigned long symtest_hidden_at;

// Static: present in .symtab and DWARF, absent from .dynsym.
__attribute__((noinline)) static void symtest_hidden(symtest_cb cb) {
    symtest_lines[1] = __LINE__ + 1;
    cb(1);
    __asm__ volatile("" ::: "memory"); // keeps the call from becoming a tail jump
}

SYMTEST_API __attribute__((noinline)) void symtest_run(symtest_cb cb) {
    symtest_lines[0] = __LINE__ + 1;
    cb(0);
    symtest_hidden_at = (unsigned long)&symtest_hidden;
    symtest_hidden(cb);
    __asm__ volatile("" ::: "memory");
}
