// SPDX-License-Identifier: MIT
// Naming one frame from its module's file (symbolize_frame.h): elfutils, reported at bias
// 0 so rel_pc is a file address. Process-wide state is two values each set once
// (pthread_once): the demangler resolved from libstdc++ and MEMTRACE_DEBUGINFO_PATH.
#define _GNU_SOURCE
#include "symbolize_frame.h"

#include "memtrace/input.h"
#include "memtrace/vec.h"

#include <dlfcn.h>
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

// ---- demangling

// __cxa_demangle comes from libstdc++, which C programs (and memreport) do not load.
// Linking it would load libstdc++ into every traced program (with its start-up
// allocations), so it is looked up at run time, and libstdc++ opened only when a mangled
// name actually shows up.
typedef char* (*demangle_fn)(const char*, char*, size_t*, int*);
static demangle_fn demangler;
static pthread_once_t demangler_once = PTHREAD_ONCE_INIT;

static void resolve_demangler(void) {
    void* f = dlsym(RTLD_DEFAULT, "__cxa_demangle");
    if (!f) {
        void* h = dlopen("libstdc++.so.6", RTLD_NOW | RTLD_LOCAL);
        if (h) // never closed: the function is kept for the life of the process
            f = dlsym(h, "__cxa_demangle");
    }
    // POSIX guarantees a data pointer from dlsym converts to a function pointer.
    memcpy(&demangler, &f, sizeof f);
}

char* mt_symbolize_frame_demangle(const char* name) {
    char* rust = mt_symbolize_frame_demangle_rust(name);
    if (rust)
        return rust;
    if (name[0] == '_' && name[1] == 'Z') {
        pthread_once(&demangler_once, resolve_demangler);
        int status = -1;
        char* d = demangler ? demangler(name, NULL, NULL, &status) : NULL;
        if (d && status == 0)
            return d;
        free(d);
    }
    return strdup(name);
}

// ---- a growable string (the inlined JSON)

static void sb_put(sbuf* b, const char* s, size_t n) {
    if (b->oom)
        return;
    if (MT_VEC_RESERVE(&b->p, &b->cap, b->len + n + 1)) {
        b->oom = true;
        return;
    }
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = 0;
}

static void sb_str(sbuf* b, const char* s) {
    sb_put(b, s, strlen(s));
}

static void sb_json_string(sbuf* b, const char* s) {
    sb_put(b, "\"", 1);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') {
            char e[2] = {'\\', (char)c};
            sb_put(b, e, 2);
        } else if (c < 0x20) {
            char e[8];
            snprintf(e, sizeof e, "\\u%04x", c);
            sb_str(b, e);
        } else {
            sb_put(b, (const char*)s, 1);
        }
    }
    sb_put(b, "\"", 1);
}

// ---- per-CU function index
//
// dwarf_getscopes walks a CU's DIE tree on every call (twice per frame with the
// dwarf_getscopes_die needed for inline chains); in libc's large CUs that made 10,000
// frames take 2 s. Instead each CU is walked once, recording every function-like DIE with
// code (subprograms and inlined instances) with its address ranges and its enclosing one.

typedef struct fn_node {
    Dwarf_Die die;
    int32_t parent; // enclosing function node, -1 at the top
    int32_t depth;
    bool inlined;
} fn_node;

typedef struct fn_range {
    Dwarf_Addr lo, hi;
    uint32_t node;
} fn_range;

typedef struct cu_index {
    Dwarf_Off off; // the CU DIE's offset: its key
    fn_node* nodes;
    size_t nnodes, capnodes;
    fn_range* ranges;
    size_t nranges, capranges;
    bool oom;
} cu_index;

static int32_t add_node(cu_index* c, Dwarf_Die* die, int32_t parent, int32_t depth, bool inlined) {
    Dwarf_Addr base, lo, hi;
    ptrdiff_t off = 0;
    int32_t id = -1;
    while ((off = dwarf_ranges(die, off, &base, &lo, &hi)) > 0) {
        if (id < 0) {
            if (MT_VEC_RESERVE(&c->nodes, &c->capnodes, c->nnodes + 1)) {
                c->oom = true;
                return -1;
            }
            id = (int32_t)c->nnodes++;
            c->nodes[id] = (fn_node){*die, parent, depth, inlined};
        }
        if (MT_VEC_RESERVE(&c->ranges, &c->capranges, c->nranges + 1)) {
            c->oom = true;
            return id;
        }
        c->ranges[c->nranges++] = (fn_range){lo, hi, (uint32_t)id};
    }
    return id;
}

// Visits the children of `parent_die`; code can sit below functions, lexical blocks and
// (C++) namespaces and classes, nothing else needs descending into.
static void index_children(cu_index* c, Dwarf_Die* parent_die, int32_t parent, int32_t depth,
                           int level) {
    Dwarf_Die child;
    if (level > 256 || dwarf_child(parent_die, &child) != 0)
        return;
    do {
        int tag = dwarf_tag(&child);
        switch (tag) {
        case DW_TAG_subprogram:
        case DW_TAG_inlined_subroutine:
        case DW_TAG_entry_point: {
            int32_t id = add_node(c, &child, parent, depth + 1, tag == DW_TAG_inlined_subroutine);
            if (id >= 0)
                index_children(c, &child, id, depth + 1, level + 1);
            break;
        }
        case DW_TAG_lexical_block:
        case DW_TAG_try_block:
        case DW_TAG_catch_block:
        case DW_TAG_namespace:
        case DW_TAG_module:
        case DW_TAG_class_type:
        case DW_TAG_structure_type:
        case DW_TAG_union_type:
            index_children(c, &child, parent, depth, level + 1);
            break;
        default:
            break;
        }
    } while (!c->oom && dwarf_siblingof(&child, &child) == 0);
}

static void cu_index_free(cu_index* c) {
    free(c->nodes);
    free(c->ranges);
}

// ---- modules: one Dwfl per (path, build-id)

// The index of the CU whose DIE is cudie (built now if needed); NULL when out of memory.
static cu_index* module_cu(module* m, Dwarf_Die* cudie) {
    Dwarf_Off off = dwarf_dieoffset(cudie);
    if (m->last_cu < m->ncus && m->cus[m->last_cu].off == off)
        return &m->cus[m->last_cu];
    for (size_t i = 0; i < m->ncus; i++)
        if (m->cus[i].off == off)
            return &m->cus[m->last_cu = i];
    if (MT_VEC_RESERVE(&m->cus, &m->capcus, m->ncus + 1))
        return NULL;
    cu_index* c = &m->cus[m->ncus];
    memset(c, 0, sizeof *c);
    c->off = off;
    index_children(c, cudie, -1, 0, 0);
    m->last_cu = m->ncus++;
    return c;
}

// Where separate debug files are looked for: $MEMTRACE_DEBUGINFO_PATH, in libdwfl's syntax
// (colon-separated; absolute directories hold .build-id/ trees and debuglink targets, ""
// is the binary's own directory, a relative one a subdirectory of it), else libdwfl's
// default ":.debug:/usr/lib/debug".
#define DEFAULT_DEBUGINFO_PATH ":.debug:/usr/lib/debug"
static char* debuginfo_path;
static pthread_once_t debuginfo_path_once = PTHREAD_ONCE_INIT;

static void read_debuginfo_path(void) {
    const char* env = getenv("MEMTRACE_DEBUGINFO_PATH");
    debuginfo_path = env && *env ? strdup(env) : NULL; // NULL: libdwfl's default
}

// Its functions are filled in once libdw is there (dwfl_callbacks_once): in the tracer they
// are loaded at run time (symbolize_dw.h), no constant to initialize with.
static Dwfl_Callbacks dwfl_callbacks = {.debuginfo_path = &debuginfo_path};
static pthread_once_t dwfl_callbacks_once = PTHREAD_ONCE_INIT;

static void fill_dwfl_callbacks(void) {
    // Separate debug files: build-id path under <dir>/.build-id, .gnu_debuglink next to the
    // file, in .debug/ and under <dir>. libdwfl checks that what it finds matches the main
    // file's build-id.
    dwfl_callbacks.find_debuginfo = dwfl_standard_find_debuginfo;
    dwfl_callbacks.section_address = dwfl_offline_section_address;
}

static bool build_id_matches(Dwfl_Module* mod, const char* want) {
    const unsigned char* bits;
    GElf_Addr vaddr;
    int n = dwfl_module_build_id(mod, &bits, &vaddr);
    if (n <= 0)
        return false; // the mapping had one, the file has none: not the same file
    size_t wl = strlen(want);
    if (wl != (size_t)n * 2)
        return false;
    static const char hex[] = "0123456789abcdef";
    for (int i = 0; i < n; i++) {
        char hi = hex[bits[i] >> 4], lo = hex[bits[i] & 15];
        if ((want[2 * i] | 0x20) != hi || (want[2 * i + 1] | 0x20) != lo)
            return false;
    }
    return true;
}

static void module_open(module* m) {
    m->opened = true;
    // Pseudo files ([vdso], [heap], anonymous code) have no file to read.
    if (m->path[0] != '/')
        return;
    if (mt_symbolize_dw_load() != 0)
        return;
    pthread_once(&debuginfo_path_once, read_debuginfo_path);
    pthread_once(&dwfl_callbacks_once, fill_dwfl_callbacks);
    // The path comes from the capture: opened here, a FIFO or device there is never read.
    char err[128];
    int fd = mt_input_open(m->path, err, sizeof err);
    if (fd < 0)
        return;
    m->dwfl = dwfl_begin(&dwfl_callbacks);
    if (!m->dwfl) {
        close(fd);
        return;
    }
    dwfl_report_begin(m->dwfl);
    // Bias 0: the module's addresses are the ELF's own virtual addresses, i.e. rel_pc, for
    // PIE/shared objects and fixed-address executables alike. One Dwfl per module also
    // keeps libraries that were loaded at the same address at different times apart.
    // On success libdwfl owns fd.
    m->mod = dwfl_report_elf(m->dwfl, m->base, m->path, fd, 0, false);
    if (!m->mod)
        close(fd);
    dwfl_report_end(m->dwfl, NULL, NULL);
    if (m->mod && m->build_id && m->build_id[0] && !build_id_matches(m->mod, m->build_id))
        m->mod = NULL; // replaced binary: its names would be wrong, keep module+offset
}

void mt_symbolize_frame_module_close(module* m) {
    mt_symbolize_frame_symtab_free(m->syms);
    for (size_t i = 0; i < m->ncus; i++)
        cu_index_free(&m->cus[i]);
    free(m->cus);
    if (m->dwfl)
        dwfl_end(m->dwfl);
    free(m->path);
    free(m->build_id);
}

// ---- one frame

typedef struct loc {
    char* function;
    const char* file; // owned by libdw, valid while the Dwfl lives
    int line;
} loc;

const char* mt_symbolize_frame_basename(const char* path) {
    const char* s = strrchr(path, '/');
    return s ? s + 1 : path;
}

// The name of a function DIE: the demangled linkage name when there is one (C++: with
// namespaces and parameters, as users know them), else DW_AT_name. Both are looked up
// through DW_AT_abstract_origin/specification, where inlined instances keep them.
static char* die_function_name(Dwarf_Die* die) {
    Dwarf_Attribute attr;
    const char* n = NULL;
    if (dwarf_attr_integrate(die, DW_AT_linkage_name, &attr) ||
        dwarf_attr_integrate(die, DW_AT_MIPS_linkage_name, &attr))
        n = dwarf_formstring(&attr);
    if (!n)
        n = dwarf_diename(die);
    return n ? mt_symbolize_frame_demangle(n) : NULL;
}

// File and line where an inlined instance was called, from DW_AT_call_file/call_line.
static void call_site(Dwarf_Die* inl, Dwarf_Files* files, size_t nfiles, loc* out) {
    Dwarf_Attribute attr;
    Dwarf_Word v;
    out->file = NULL;
    out->line = 0;
    if (files && dwarf_formudata(dwarf_attr(inl, DW_AT_call_file, &attr), &v) == 0 && v < nfiles)
        out->file = dwarf_filesrc(files, v, NULL, NULL);
    if (dwarf_formudata(dwarf_attr(inl, DW_AT_call_line, &attr), &v) == 0)
        out->line = (int)v;
}

// DWARF lookup: fills res with the physical function, its file:line and the inlined chain.
// Leaves res->function NULL when there is no function DIE (no debug info, assembly).
void mt_symbolize_frame_resolve_dwarf(module* m, Dwarf_Addr addr, result* res) {
    Dwfl_Module* mod = m->mod;
    Dwarf_Addr bias;
    Dwarf_Die* cu = dwfl_module_addrdie(mod, addr, &bias);
    if (!cu)
        return;
    cu_index* c = module_cu(m, cu);
    if (!c)
        return;
    // The innermost function-like DIE containing the pc is the deepest one.
    Dwarf_Addr pc = addr - bias;
    int32_t inner = -1;
    for (size_t i = 0; i < c->nranges; i++) {
        const fn_range* r = &c->ranges[i];
        if (pc >= r->lo && pc < r->hi &&
            (inner < 0 || c->nodes[r->node].depth > c->nodes[inner].depth))
            inner = (int32_t)r->node;
    }
    Dwarf_Files* files = NULL;
    size_t nfiles = 0;
    if (dwarf_getsrcfiles(cu, &files, &nfiles) != 0)
        files = NULL;

    // The location at the pc itself belongs to the innermost function scope.
    loc here = {0};
    Dwfl_Line* ln = dwfl_module_getsrc(mod, addr);
    if (ln)
        here.file = dwfl_lineinfo(ln, NULL, &here.line, NULL, NULL, NULL);

    bool first = true;
    for (int32_t i = inner; i >= 0; i = c->nodes[i].parent) {
        Dwarf_Die* die = &c->nodes[i].die;
        char* name = die_function_name(die);
        if (!c->nodes[i].inlined) {
            res->function = name; // may be NULL: the symbol table names it then
            break;
        }
        // An inlined instance: record it with the current location, then move the
        // location to its call site in the enclosing function.
        sb_str(&res->inlined, first ? "[" : ",");
        first = false;
        sb_str(&res->inlined, "{\"function\":");
        sb_json_string(&res->inlined, name ? name : "??");
        sb_str(&res->inlined, ",\"file\":");
        if (here.file)
            sb_json_string(&res->inlined, here.file);
        else
            sb_str(&res->inlined, "null");
        char num[32];
        snprintf(num, sizeof num, ",\"line\":%d}", here.line);
        sb_str(&res->inlined, here.line ? num : ",\"line\":null}");
        free(name);
        call_site(die, files, nfiles, &here);
    }
    if (!first)
        sb_str(&res->inlined, "]");
    // After the walk `here` is the location inside the physical function (the call site
    // of its outermost inlined callee, or the pc's own line when nothing is inlined).
    res->file = here.file ? strdup(here.file) : NULL; // out of memory: no file, as without
    res->line = here.line;
}

// The module's libdwfl handle, opened on first use; NULL when its file cannot serve.
Dwfl_Module* mt_symbolize_frame_module_dwfl(module* m) {
    if (!m)
        return NULL;
    if (!m->opened)
        module_open(m);
    return m->mod;
}

bool mt_symbolize_frame_module_has_dwarf(module* m) {
    if (!mt_symbolize_frame_module_dwfl(m))
        return false;
    if (m->has_dwarf < 0) {
        Dwarf_Addr bias;
        m->has_dwarf = dwfl_module_getdwarf(m->mod, &bias) != NULL;
    }
    return m->has_dwarf;
}

// The size of the debug file for m's build-id in a .build-id tree of the debug path (where
// distributions put them), -1 when there is none.
static long long build_id_debug_file_size(module* m) {
    pthread_once(&debuginfo_path_once, read_debuginfo_path);
    const char* path = debuginfo_path ? debuginfo_path : DEFAULT_DEBUGINFO_PATH;
    const char* id = m->build_id;
    while (id && *path && strlen(id) > 2) {
        size_t len = strcspn(path, ":");
        const char* dir = path[0] == '+' || path[0] == '-' ? path + 1 : path; // CRC flags
        size_t dlen = len - (size_t)(dir - path);
        if (dlen && dir[0] == '/') {
            char file[4096];
            struct stat st;
            snprintf(file, sizeof file, "%.*s/.build-id/%.2s/%s.debug", (int)dlen, dir, id, id + 2);
            if (stat(file, &st) == 0)
                return (long long)st.st_size;
        }
        path += len + (path[len] == ':');
    }
    return -1;
}

// Whether a debug file for m's build-id is installed: a name cached while the module had no
// DWARF is stale then.
bool mt_symbolize_frame_debug_file_installed(module* m) {
    if (m->debug_installed < 0)
        m->debug_installed = build_id_debug_file_size(m) >= 0;
    return m->debug_installed;
}

long long mt_symbolize_frame_dwarf_bytes(module* m) {
    if (!mt_symbolize_frame_module_dwfl(m))
        return 0;
    long long n = 0;
    GElf_Addr bias;
    Elf* elf = dwfl_module_getelf(m->mod, &bias);
    size_t shstrndx;
    if (elf && elf_getshdrstrndx(elf, &shstrndx) == 0) {
        for (Elf_Scn* scn = NULL; (scn = elf_nextscn(elf, scn)) != NULL;) {
            GElf_Shdr mem, *sh = gelf_getshdr(scn, &mem);
            const char* name = sh ? elf_strptr(elf, shstrndx, sh->sh_name) : NULL;
            if (name && sh->sh_type != SHT_NOBITS &&
                (!strncmp(name, ".debug_", 7) || !strncmp(name, ".zdebug_", 8)))
                n += (long long)sh->sh_size;
        }
    }
    if (n == 0 && m->build_id && m->build_id[0]) {
        long long f = build_id_debug_file_size(m);
        n = f > 0 ? f : 0;
    }
    return n;
}
