// SPDX-License-Identifier: MIT
// Naming a frame from its module's symbol table (.symtab, else .dynsym), for frames that
// DWARF does not name.
//
// dwfl_module_addrinfo scans every symbol of the module on each call: with cc1's 29,000
// symbols and 6,000 frames that was seconds at exit. The table is read once per module into
// an array sorted by address and searched. The choice follows libdwfl's: a symbol whose
// [value, value + size) holds the address, global before local, then the closest, then the
// strongest binding; failing that, a size-less label (assembly) in the address's section
// that no symbol at or below the address extends past.
#define _GNU_SOURCE
#include "symbolize_frame.h"

#include "memtrace/vec.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct sym_entry {
    GElf_Addr value, end;     // end = value + size
    GElf_Addr max_end;        // the highest end of this entry and every one before it
    GElf_Addr sec_lo, sec_hi; // size-less symbols: their section's range ([0, 0): none)
    const char* name;         // owned by libdwfl, valid while the Dwfl lives
    uint8_t bind;             // 3 global, 2 weak, 1 local, 0 other (higher is preferred)
    bool abs;                 // SHN_ABS and the like: names its exact address only
    uint32_t order;           // position in the symbol table: the first of equals wins
} sym_entry;

struct sym_index {
    sym_entry* e;
    size_t n, cap;
};

static int binding_rank(const GElf_Sym* s) {
    switch (GELF_ST_BIND(s->st_info)) {
    case STB_GLOBAL:
        return 3;
    case STB_WEAK:
        return 2;
    case STB_LOCAL:
        return 1;
    default:
        return 0;
    }
}

static int by_value(const void* a, const void* b) {
    const sym_entry *x = a, *y = b;
    if (x->value != y->value)
        return x->value < y->value ? -1 : 1;
    return x->order < y->order ? -1 : x->order > y->order; // qsort is not stable
}

// The section range [lo, hi) of a size-less symbol in its ELF.
static void section_range(Elf* elf, GElf_Word shndx, sym_entry* e) {
    GElf_Shdr mem, *sh;
    Elf_Scn* scn = elf ? elf_getscn(elf, shndx) : NULL;
    if (scn && (sh = gelf_getshdr(scn, &mem)) != NULL) {
        e->sec_lo = sh->sh_addr;
        e->sec_hi = sh->sh_addr + sh->sh_size;
    }
}

static struct sym_index* build_sym_index(Dwfl_Module* mod) {
    struct sym_index* x = calloc(1, sizeof *x);
    int n = x ? dwfl_module_getsymtab(mod) : -1;
    for (int i = 1; i < n; i++) {
        GElf_Sym sym;
        GElf_Addr value;
        GElf_Word shndx;
        Elf* elf = NULL;
        const char* name = dwfl_module_getsym_info(mod, i, &sym, &value, &shndx, &elf, NULL);
        int type = GELF_ST_TYPE(sym.st_info);
        if (!name || !name[0] || sym.st_shndx == SHN_UNDEF || type == STT_SECTION ||
            type == STT_FILE || type == STT_TLS)
            continue;
        if (MT_VEC_RESERVE(&x->e, &x->cap, x->n + 1))
            break; // out of memory: the symbols read so far still name what they cover
        sym_entry* e = &x->e[x->n++];
        *e = (sym_entry){.value = value,
                         .end = value + sym.st_size,
                         .name = name,
                         .bind = (uint8_t)binding_rank(&sym),
                         .abs = shndx >= SHN_LORESERVE && shndx != SHN_XINDEX,
                         .order = (uint32_t)i};
        if (sym.st_size == 0 && !e->abs)
            section_range(elf, shndx, e);
    }
    if (x && x->n) {
        qsort(x->e, x->n, sizeof *x->e, by_value);
        GElf_Addr m = 0;
        for (size_t i = 0; i < x->n; i++)
            x->e[i].max_end = m = x->e[i].end > m ? x->e[i].end : m;
    }
    return x;
}

void mt_symbolize_frame_symtab_free(struct sym_index* x) {
    if (x) {
        free(x->e);
        free(x);
    }
}

// Is a better than b (either may be NULL) as the sized symbol holding an address?
static bool better_sized(const sym_entry* a, const sym_entry* b) {
    if (!b)
        return true;
    bool ga = a->bind != 1, gb = b->bind != 1; // libdwfl searches the globals first
    if (ga != gb)
        return ga;
    if (a->value != b->value)
        return a->value > b->value;
    if (a->bind != b->bind)
        return a->bind > b->bind;
    return a->order < b->order;
}

static const char* lookup_symbol(const struct sym_index* x, GElf_Addr addr) {
    // hi: the number of entries at or below addr.
    size_t lo = 0, hi = x->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (x->e[mid].value <= addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (hi == 0)
        return NULL;
    const sym_entry* best = NULL;
    // Entries further down can hold addr only while some entry there ends above it.
    for (size_t i = hi; i-- > 0 && x->e[i].max_end > addr;) {
        const sym_entry* e = &x->e[i];
        if (e->end > addr && e->end != e->value && better_sized(e, best))
            best = e;
    }
    if (best)
        return best->name;
    // A label: at the highest end reached below addr, i.e. inside no symbol.
    GElf_Addr label = x->e[hi - 1].max_end;
    const sym_entry* pick = NULL;
    for (size_t i = hi; i-- > 0 && x->e[i].value >= label;) {
        const sym_entry* e = &x->e[i];
        bool here = e->abs ? e->value == addr : addr >= e->sec_lo && addr < e->sec_hi;
        if (e->end == e->value && e->value == label && here && (!pick || e->bind >= pick->bind))
            pick = e;
    }
    return pick ? pick->name : NULL;
}

// The name the symbol table gives addr (.symtab, else .dynsym), demangled, without a symbol
// version ("__libc_start_main@@GLIBC_2.34"); NULL when none covers it.
char* mt_symbolize_frame_symtab_name(module* m, Dwarf_Addr addr) {
    if (!mt_symbolize_frame_module_dwfl(m))
        return NULL;
    if (!m->syms && !(m->syms = build_sym_index(m->mod)))
        return NULL;
    const char* s = lookup_symbol(m->syms, addr);
    if (!s)
        return NULL;
    char* plain = strndup(s, strcspn(s, "@"));
    if (!plain)
        return NULL;
    char* name = mt_symbolize_frame_demangle(plain);
    free(plain);
    return name;
}

// .eh_frame_hdr's binary search table: (initial location, FDE address) pairs sorted by
// location, as the unwinder reads it. Only the encoding every x86-64 toolchain writes is
// read (DW_EH_PE_datarel | DW_EH_PE_sdata4: 4-byte offsets from the section's start).
#define EH_PE_DATAREL_SDATA4 0x3b

// An encoding of a 4-byte value (DW_EH_PE_udata4 or sdata4, any application bits).
static bool four_bytes(unsigned char enc) {
    return enc != 0xff && ((enc & 0x0f) == 0x03 || (enc & 0x0f) == 0x0b);
}

static int32_t read_s32(const unsigned char* p) {
    int32_t v;
    memcpy(&v, p, sizeof v);
    return v;
}

// The start of the last FDE at or below addr (a file address), from the table; false when
// the section is missing or encoded otherwise.
static bool fde_start(Elf* elf, GElf_Addr addr, GElf_Addr* start) {
    size_t shstrndx;
    if (!elf || elf_getshdrstrndx(elf, &shstrndx) != 0)
        return false;
    for (Elf_Scn* scn = NULL; (scn = elf_nextscn(elf, scn)) != NULL;) {
        GElf_Shdr mem, *sh = gelf_getshdr(scn, &mem);
        const char* name = sh ? elf_strptr(elf, shstrndx, sh->sh_name) : NULL;
        if (!name || strcmp(name, ".eh_frame_hdr") || sh->sh_type == SHT_NOBITS)
            continue;
        Elf_Data* d = elf_getdata(scn, NULL);
        const unsigned char* p = d ? d->d_buf : NULL;
        // Version 1, then eh_frame_ptr and fde_count, each 4 bytes (udata4 or sdata4).
        if (!p || d->d_size < 12 || p[0] != 1 || p[3] != EH_PE_DATAREL_SDATA4 ||
            !four_bytes(p[1]) || (p[2] != 0x03 && p[2] != 0x0b))
            return false;
        size_t count = (uint32_t)read_s32(p + 8);
        if (count > (d->d_size - 12) / 8)
            return false;
        const unsigned char* t = p + 12;
        size_t lo = 0, hi = count; // hi: entries at or below addr
        while (lo < hi) {
            size_t mid = lo + (hi - lo) / 2;
            if (sh->sh_addr + (GElf_Addr)(int64_t)read_s32(t + mid * 8) <= addr)
                lo = mid + 1;
            else
                hi = mid;
        }
        if (hi == 0)
            return false;
        *start = sh->sh_addr + (GElf_Addr)(int64_t)read_s32(t + (hi - 1) * 8);
        return true;
    }
    return false;
}

char* mt_symbolize_frame_fde_name(module* m, Dwarf_Addr addr) {
    Dwarf_Addr bias;
    Dwarf_CFI* cfi = mt_symbolize_frame_module_dwfl(m) ? dwfl_module_eh_cfi(m->mod, &bias) : NULL;
    Dwarf_Frame* frame = NULL;
    // An FDE covers addr (the frame state found), so the last one starting at or below it is
    // that FDE: FDEs never overlap.
    if (!cfi || addr < bias || dwarf_cfi_addrframe(cfi, addr - bias, &frame) != 0)
        return NULL;
    free(frame);
    GElf_Addr ebias, start;
    Elf* elf = dwfl_module_getelf(m->mod, &ebias);
    if (!elf || addr < ebias || !fde_start(elf, addr - ebias, &start))
        return NULL;
    char buf[512];
    snprintf(buf, sizeof buf, "%s!0x%" PRIx64, m->base, (uint64_t)(start + ebias));
    return strdup(buf);
}
