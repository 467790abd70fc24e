// SPDX-License-Identifier: MIT
// Inside common/ only: naming one frame from its module's file (symbolize_frame.c; the
// symbol table in symbolize_symtab.c), for the symbolization pass (symbolize.c): DWARF
// lookups with inlined functions, the symbol table, demangling, and where separate debug
// files are installed.
#ifndef MEMTRACE_SYMBOLIZE_FRAME_H
#define MEMTRACE_SYMBOLIZE_FRAME_H

#include "symbolize_dw.h" // libdw's functions: linked, or loaded on first need (the tracer)

#include <elfutils/libdwfl.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

// A growable string (the inlined functions as JSON).
typedef struct sbuf {
    char* p;
    size_t len, cap;
    bool oom;
} sbuf;

// A module: one Dwfl per (path, build-id).
typedef struct cu_index cu_index;
// A module's symbol table sorted by address (symbolize_symtab.c).
struct sym_index;

typedef struct module {
    char* path;
    char* build_id; // as recorded in the mapping (NULL: not recorded)
    Dwfl* dwfl;
    Dwfl_Module* mod; // NULL: the file is missing, unreadable or not the recorded build
    const char* base; // basename of path, for module+offset names
    cu_index* cus;    // indexed CUs, built on first use
    size_t ncus, capcus;
    size_t last_cu;         // frames come sorted by address: the previous CU is the likely one
    struct sym_index* syms; // built on the first symbol-table lookup
    bool opened;            // module_open has run (on first need: cached frames need no file)
    int has_dwarf;          // 1 yes, 0 no, -1 not known yet
    int debug_installed;    // the same for debug_file_installed
    bool dwarf_deferred;    // a bounded pass left this module's DWARF unread (symbolize.c)
} module;

// What a frame is named.
typedef struct result {
    char* function;
    char* file;
    int line;
    sbuf inlined; // empty: nothing inlined
    bool relevant;
} result;

// The module's libdwfl handle, opened on first use; NULL when its file cannot serve.
Dwfl_Module* mt_symbolize_frame_module_dwfl(module* m);
bool mt_symbolize_frame_module_has_dwarf(module* m);
void mt_symbolize_frame_module_close(module* m);
// Fills res->function, file, line and inlined from the DWARF at addr (a file address).
void mt_symbolize_frame_resolve_dwarf(module* m, Dwarf_Addr addr, result* res);
// The symbol table's name for addr, demangled, without symbol version; NULL when none (or
// when the module's file cannot serve). In symbolize_symtab.c, as is the next one.
char* mt_symbolize_frame_symtab_name(module* m, Dwarf_Addr addr);
// For an address no symbol names (a stripped binary): "MODULE!0xSTART", START the start of
// the function holding it, read from its .eh_frame FDE (every FDE covers one function),
// so every return address in one function gets one name; NULL when no FDE covers it.
char* mt_symbolize_frame_fde_name(module* m, Dwarf_Addr addr);
// Frees a module's symbol table (NULL: none was built).
void mt_symbolize_frame_symtab_free(struct sym_index* x);
// Returns a malloc'd demangled name, or a copy of name when it is not mangled C++ or Rust.
char* mt_symbolize_frame_demangle(const char* name);
// A Rust symbol (legacy _ZN...17h<hash>E or v0 _R...) as rustfilt prints it, without the
// hash; NULL when name is neither (symbolize_rust.c).
char* mt_symbolize_frame_demangle_rust(const char* name);
// Whether a debug file for m's build-id is installed in a .build-id tree of the debug path.
bool mt_symbolize_frame_debug_file_installed(module* m);
// What reading m's DWARF would read, in bytes, without reading it: its file's .debug_*
// sections, else its build-id debug file (0: no DWARF found that way). A debug file found
// only through .gnu_debuglink is not seen.
long long mt_symbolize_frame_dwarf_bytes(module* m);
const char* mt_symbolize_frame_basename(const char* path);

#endif
