// SPDX-License-Identifier: MIT
// Inside common/ only: the elfutils functions the symbolizer calls, and where they come from.
// memreport links libdw. The tracer's copy of common (built with MEMTRACE_LAZY_LIBDW) does
// not: libdw, libelf, libz and libbz2 would be mapped and relocated at every traced
// program's start, while a program whose frames all come from the symbol cache never calls
// them. There each name below stands for a pointer in mt_dw, which mt_symbolize_dw_load fills from
// dlopen("libdw.so.1") when a frame first needs its module's file (symbolize_dw.c).
// Included after the elfutils headers: their declarations give the pointers' types, so no
// signature is written twice.
#ifndef MEMTRACE_SYMBOLIZE_DW_H
#define MEMTRACE_SYMBOLIZE_DW_H

#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <gelf.h>

// Every elfutils function common/symbolize*.c calls (libelf's come through libdw's
// dependency on it).
#define MT_DW_FUNCTIONS(X)                                                                         \
    X(dwarf_attr)                                                                                  \
    X(dwarf_cfi_addrframe)                                                                         \
    X(dwarf_frame_info)                                                                            \
    X(dwarf_attr_integrate)                                                                        \
    X(dwarf_child)                                                                                 \
    X(dwarf_diename)                                                                               \
    X(dwarf_dieoffset)                                                                             \
    X(dwarf_filesrc)                                                                               \
    X(dwarf_formstring)                                                                            \
    X(dwarf_formudata)                                                                             \
    X(dwarf_getsrcfiles)                                                                           \
    X(dwarf_ranges)                                                                                \
    X(dwarf_siblingof)                                                                             \
    X(dwarf_tag)                                                                                   \
    X(dwfl_begin)                                                                                  \
    X(dwfl_end)                                                                                    \
    X(dwfl_lineinfo)                                                                               \
    X(dwfl_module_addrdie)                                                                         \
    X(dwfl_module_build_id)                                                                        \
    X(dwfl_module_eh_cfi)                                                                          \
    X(dwfl_module_getdwarf)                                                                        \
    X(dwfl_module_getelf)                                                                          \
    X(dwfl_module_getsrc)                                                                          \
    X(dwfl_module_getsym_info)                                                                     \
    X(dwfl_module_getsymtab)                                                                       \
    X(dwfl_offline_section_address)                                                                \
    X(dwfl_report_begin)                                                                           \
    X(dwfl_report_elf)                                                                             \
    X(dwfl_report_end)                                                                             \
    X(dwfl_standard_find_debuginfo)                                                                \
    X(elf_getdata)                                                                                 \
    X(elf_getscn)                                                                                  \
    X(elf_getshdrstrndx)                                                                           \
    X(elf_nextscn)                                                                                 \
    X(elf_strptr)                                                                                  \
    X(gelf_getshdr)

#ifdef MEMTRACE_LAZY_LIBDW

#define MT_DW_MEMBER(name) __typeof__(name)* name;
struct mt_dw_api {
    MT_DW_FUNCTIONS(MT_DW_MEMBER)
};
#undef MT_DW_MEMBER
extern struct mt_dw_api mt_dw;

// Loads libdw once per process and fills mt_dw: 0, or -ENOENT when libdw.so.1 or one of the
// functions cannot be found (every pointer stays NULL then; the caller leaves the frame
// unnamed, for memreport). Thread-safe. Allocates and takes the loader's lock: call it with
// the tracer's guard set, never from a signal handler.
int mt_symbolize_dw_load(void);

#ifndef MT_DW_LOADER // the loader itself names the members
#define dwarf_attr (mt_dw.dwarf_attr)
#define dwarf_attr_integrate (mt_dw.dwarf_attr_integrate)
#define dwarf_cfi_addrframe (mt_dw.dwarf_cfi_addrframe)
#define dwarf_frame_info (mt_dw.dwarf_frame_info)
#define dwarf_child (mt_dw.dwarf_child)
#define dwarf_diename (mt_dw.dwarf_diename)
#define dwarf_dieoffset (mt_dw.dwarf_dieoffset)
#define dwarf_filesrc (mt_dw.dwarf_filesrc)
#define dwarf_formstring (mt_dw.dwarf_formstring)
#define dwarf_formudata (mt_dw.dwarf_formudata)
#define dwarf_getsrcfiles (mt_dw.dwarf_getsrcfiles)
#define dwarf_ranges (mt_dw.dwarf_ranges)
#define dwarf_siblingof (mt_dw.dwarf_siblingof)
#define dwarf_tag (mt_dw.dwarf_tag)
#define dwfl_begin (mt_dw.dwfl_begin)
#define dwfl_end (mt_dw.dwfl_end)
#define dwfl_lineinfo (mt_dw.dwfl_lineinfo)
#define dwfl_module_addrdie (mt_dw.dwfl_module_addrdie)
#define dwfl_module_build_id (mt_dw.dwfl_module_build_id)
#define dwfl_module_eh_cfi (mt_dw.dwfl_module_eh_cfi)
#define dwfl_module_getdwarf (mt_dw.dwfl_module_getdwarf)
#define dwfl_module_getelf (mt_dw.dwfl_module_getelf)
#define dwfl_module_getsrc (mt_dw.dwfl_module_getsrc)
#define dwfl_module_getsym_info (mt_dw.dwfl_module_getsym_info)
#define dwfl_module_getsymtab (mt_dw.dwfl_module_getsymtab)
#define dwfl_offline_section_address (mt_dw.dwfl_offline_section_address)
#define dwfl_report_begin (mt_dw.dwfl_report_begin)
#define dwfl_report_elf (mt_dw.dwfl_report_elf)
#define dwfl_report_end (mt_dw.dwfl_report_end)
#define dwfl_standard_find_debuginfo (mt_dw.dwfl_standard_find_debuginfo)
#define elf_getdata (mt_dw.elf_getdata)
#define elf_getscn (mt_dw.elf_getscn)
#define elf_getshdrstrndx (mt_dw.elf_getshdrstrndx)
#define elf_nextscn (mt_dw.elf_nextscn)
#define elf_strptr (mt_dw.elf_strptr)
#define gelf_getshdr (mt_dw.gelf_getshdr)
#endif

#else // memreport and the unit tests: linked with libdw

static inline int mt_symbolize_dw_load(void) {
    return 0;
}

#endif

#endif
