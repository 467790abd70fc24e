// SPDX-License-Identifier: MIT
// Frame symbolization with elfutils: one Dwfl per distinct (path, build-id), reported at
// bias 0 so rel_pc is a file address, looked up once per unique frame (through the user's
// symbol cache, symcache.h). Runs in the tracer's writer thread at exit and in memreport.
// Prints nothing: stdio only formats into buffers, and failures come back through the
// return value and err. Process-wide state is two values each set once (pthread_once):
// the demangler resolved from libstdc++ and the MEMTRACE_DEBUGINFO_PATH setting.
#define _GNU_SOURCE
#include "memtrace/symbolize.h"

#include "memtrace/symcache.h"
#include "memtrace/vec.h"

#include <dlfcn.h>
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

// Returns a malloc'd demangled name, or a copy of name when it is not mangled C++.
static char* demangle(const char* name) {
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

typedef struct sbuf {
    char* p;
    size_t len, cap;
    bool oom;
} sbuf;

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

typedef struct module {
    char* path;
    char* build_id; // as recorded in the mapping (NULL: not recorded)
    Dwfl* dwfl;
    Dwfl_Module* mod; // NULL: the file is missing, unreadable or not the recorded build
    const char* base; // basename of path, for module+offset names
    cu_index* cus;    // indexed CUs, built on first use
    size_t ncus, capcus;
    size_t last_cu;      // frames come sorted by address: the previous CU is the likely one
    bool opened;         // module_open has run (on first need: cached frames need no file)
    int has_dwarf;       // 1 yes, 0 no, -1 not known yet
    int debug_installed; // the same for debug_file_installed
} module;

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

static Dwfl_Callbacks dwfl_callbacks = {
    // Separate debug files: build-id path under <dir>/.build-id, .gnu_debuglink next to the
    // file, in .debug/ and under <dir>. libdwfl checks that what it finds matches the main
    // file's build-id.
    .find_debuginfo = dwfl_standard_find_debuginfo,
    .section_address = dwfl_offline_section_address,
    .debuginfo_path = &debuginfo_path,
};

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
    pthread_once(&debuginfo_path_once, read_debuginfo_path);
    m->dwfl = dwfl_begin(&dwfl_callbacks);
    if (!m->dwfl)
        return;
    dwfl_report_begin(m->dwfl);
    // Bias 0: the module's addresses are the ELF's own virtual addresses, i.e. rel_pc, for
    // PIE/shared objects and fixed-address executables alike. One Dwfl per module also
    // keeps libraries that were loaded at the same address at different times apart.
    m->mod = dwfl_report_elf(m->dwfl, m->base, m->path, -1, 0, false);
    dwfl_report_end(m->dwfl, NULL, NULL);
    if (m->mod && m->build_id && m->build_id[0] && !build_id_matches(m->mod, m->build_id))
        m->mod = NULL; // replaced binary: its names would be wrong, keep module+offset
}

static void module_close(module* m) {
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

typedef struct frame_row {
    int64_t id;
    int64_t mapping_id;
    uint64_t pc;
    uint64_t rel_pc;
    ptrdiff_t mod; // index into the module table, -1: no mapping row
} frame_row;

typedef struct result {
    char* function;
    char* file;
    int line;
    sbuf inlined; // empty: nothing inlined
    bool relevant;
} result;

static const char* basename_of(const char* path) {
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
    return n ? demangle(n) : NULL;
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
static void resolve_dwarf(module* m, Dwarf_Addr addr, result* res) {
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

// ---- relevance

static bool name_in(const char* name, const char* const* list) {
    for (; *list; list++)
        if (!strcmp(name, *list))
            return true;
    return false;
}

static bool has_prefix(const char* s, const char* p) {
    return strncmp(s, p, strlen(p)) == 0;
}

static bool is_noise(const char* module_base, const char* fn) {
    // Start-up of the process and of threads: present in every stack, says nothing.
    static const char* const startup[] = {"_start",
                                          "__libc_start_main",
                                          "__libc_start_main_impl",
                                          "__libc_start_call_main",
                                          "start_thread",
                                          "clone",
                                          "clone3",
                                          "__clone",
                                          "__clone3",
                                          NULL};
    // libc's allocator entry points and internals (reached when libc itself allocates, e.g.
    // through realloc -> _int_realloc; the tracer's own frames never get here).
    static const char* const libc_alloc[] = {
        "malloc",        "calloc",        "realloc",    "reallocarray",       "__reallocarray",
        "free",          "cfree",         "memalign",   "posix_memalign",     "aligned_alloc",
        "valloc",        "pvalloc",       "free_sized", "free_aligned_sized", "sysmalloc",
        "ptmalloc_init", "alloc_perturb", NULL};
    if (module_base && has_prefix(module_base, "libmemtrace"))
        return true;
    if (name_in(fn, startup))
        return true;
    if (module_base && has_prefix(module_base, "libc.so") &&
        (name_in(fn, libc_alloc) || has_prefix(fn, "_int_") || has_prefix(fn, "tcache_") ||
         has_prefix(fn, "malloc_") || has_prefix(fn, "__malloc_") ||
         (has_prefix(fn, "__libc_") && (strstr(fn, "alloc") || strstr(fn, "free")))))
        return true;
    // C++ allocation entry points: the caller of operator new is the allocation site.
    return has_prefix(fn, "operator new") || has_prefix(fn, "operator delete");
}

// ---- the pass

// The name the symbol table gives addr (.symtab, else .dynsym), demangled, without a symbol
// version ("__libc_start_main@@GLIBC_2.34"); NULL when none covers it.
static char* symtab_name(Dwfl_Module* mod, Dwarf_Addr addr) {
    GElf_Off off;
    GElf_Sym sym;
    const char* s = dwfl_module_addrinfo(mod, addr, &off, &sym, NULL, NULL, NULL);
    if (!s || !*s)
        return NULL;
    char* plain = strndup(s, strcspn(s, "@"));
    if (!plain)
        return NULL;
    char* name = demangle(plain);
    free(plain);
    return name;
}

// The module's libdwfl handle, opened on first use; NULL when its file cannot serve.
static Dwfl_Module* module_dwfl(module* m) {
    if (!m)
        return NULL;
    if (!m->opened)
        module_open(m);
    return m->mod;
}

static bool module_has_dwarf(module* m) {
    if (!module_dwfl(m))
        return false;
    if (m->has_dwarf < 0) {
        Dwarf_Addr bias;
        m->has_dwarf = dwfl_module_getdwarf(m->mod, &bias) != NULL;
    }
    return m->has_dwarf;
}

// Names a frame from its module's DWARF, else from symname (the symbol table's name for the
// call, taken over), else as module+offset.
static void resolve(const frame_row* f, module* m, char* symname, result* res) {
    if (module_dwfl(m)) {
        // A return address: the call is the instruction before it. Except in the frame a
        // signal interrupted: there the kernel pushed the signal trampoline's own address
        // (__restore_rt, an entry point), and pc-1 falls into the padding before it; so
        // when pc-1 names nothing, the pc itself is tried.
        for (int attempt = 0; attempt < 2 && !res->function; attempt++) {
            Dwarf_Addr addr = f->rel_pc - (attempt == 0 && f->rel_pc ? 1 : 0);
            free(res->inlined.p);
            memset(&res->inlined, 0, sizeof res->inlined);
            resolve_dwarf(m, addr, res);
            if (!res->function && attempt == 0 && f->rel_pc) {
                res->function = symname;
                symname = NULL;
            } else if (!res->function) {
                res->function = symtab_name(m->mod, addr);
            }
        }
    }
    free(symname);
    if (!res->function && f->pc == 0 && !m) {
        // The tracer's marker at the root of a stack cut at the depth limit.
        res->function = strdup(MT_SYMBOLIZE_TRUNCATED);
        res->relevant = true;
        return;
    }
    if (!res->function) {
        char buf[512];
        if (m)
            snprintf(buf, sizeof buf, "%s+0x%" PRIx64, m->base, f->rel_pc);
        else
            snprintf(buf, sizeof buf, "[unknown]+0x%" PRIx64, f->pc);
        res->function = strdup(buf);
    }
    res->relevant = !is_noise(m ? m->base : NULL, res->function);
}

// Whether a debug file for m's build-id is installed in a .build-id tree of the debug path
// (where distributions put them): a name cached while the module had no DWARF is stale then.
static bool debug_file_installed(module* m) {
    if (m->debug_installed >= 0)
        return m->debug_installed;
    pthread_once(&debuginfo_path_once, read_debuginfo_path);
    const char* path = debuginfo_path ? debuginfo_path : DEFAULT_DEBUGINFO_PATH;
    const char* id = m->build_id;
    m->debug_installed = 0;
    while (*path && !m->debug_installed && strlen(id) > 2) {
        size_t len = strcspn(path, ":");
        const char* dir = path[0] == '+' || path[0] == '-' ? path + 1 : path; // CRC flags
        size_t dlen = len - (size_t)(dir - path);
        if (dlen && dir[0] == '/') {
            char file[4096];
            snprintf(file, sizeof file, "%.*s/.build-id/%.2s/%s.debug", (int)dlen, dir, id, id + 2);
            m->debug_installed = access(file, F_OK) == 0;
        }
        path += len + (path[len] == ':');
    }
    return m->debug_installed;
}

// Names a frame: from the symbol cache; else, for frames reports hide (start-up, allocator
// internals), from the symbol table alone: reading a module's DWARF costs tens of ms (libc's
// is compressed), and in many programs libc and libstdc++ appear only through such frames;
// else from DWARF. What a module with a build-id names goes into the cache.
static void symbolize_one(const frame_row* f, module* mods, mt_symcache* cache, result* res) {
    memset(res, 0, sizeof *res);
    module* m = f->mod >= 0 ? &mods[f->mod] : NULL;
    bool cacheable = cache && m && m->build_id && m->build_id[0] && m->path[0] == '/';
    mt_symcache_entry e;
    if (cacheable && mt_symcache_get(cache, m->build_id, f->rel_pc, &e)) {
        if (e.from_dwarf || !debug_file_installed(m)) {
            *res = (result){
                .function = e.function, .file = e.file, .line = e.line, .relevant = e.relevant};
            if (e.inlined)
                res->inlined = (sbuf){e.inlined, strlen(e.inlined), strlen(e.inlined) + 1, false};
            return;
        }
        mt_symcache_entry_free(&e);
    }
    char* symname = f->rel_pc && module_dwfl(m) ? symtab_name(m->mod, f->rel_pc - 1) : NULL;
    bool from_dwarf = false;
    if (symname && is_noise(m->base, symname)) {
        res->function = symname;
        res->relevant = false;
    } else {
        resolve(f, m, symname, res);
        from_dwarf = module_has_dwarf(m);
    }
    // Only what the module's own file said: a missing or replaced file gives module+offset,
    // which is no name for that build-id.
    if (cacheable && m->mod && res->function && !res->inlined.oom) {
        e = (mt_symcache_entry){res->function, res->file,
                                res->line,     res->inlined.len ? res->inlined.p : NULL,
                                res->relevant, from_dwarf};
        mt_symcache_put(cache, m->build_id, f->rel_pc, &e);
    }
}

static int sql_fail(sqlite3* db, const char* what, char* err, size_t errlen) {
    snprintf(err, errlen, "%s: %s", what, sqlite3_errmsg(db));
    return -EIO;
}

static module* find_module(module** mods, size_t* nmods, size_t* cap, const char* path,
                           const char* build_id) {
    for (size_t i = 0; i < *nmods; i++) {
        module* m = &(*mods)[i];
        bool same_id = (!m->build_id && !build_id) ||
                       (m->build_id && build_id && !strcmp(m->build_id, build_id));
        if (same_id && !strcmp(m->path, path))
            return m;
    }
    if (MT_VEC_RESERVE(mods, cap, *nmods + 1))
        return NULL;
    module* m = &(*mods)[*nmods];
    memset(m, 0, sizeof *m);
    m->has_dwarf = m->debug_installed = -1;
    m->path = strdup(path);
    m->build_id = build_id ? strdup(build_id) : NULL;
    if (!m->path || (build_id && !m->build_id)) {
        free(m->path);
        free(m->build_id);
        return NULL;
    }
    m->base = basename_of(m->path);
    (*nmods)++;
    return m;
}

// The frames to name and the modules they lie in.
typedef struct frame_set {
    frame_row* rows;
    size_t nrows, rowcap;
    module* mods;
    size_t nmods, modcap;
} frame_set;

// Appends the frame of the statement's current row. Rows come ordered by mapping, so a
// module is looked up once per run of rows of the same mapping (*cur_mapping, *cur).
static int add_frame_row(sqlite3_stmt* sel, frame_set* fs, int64_t* cur_mapping, ptrdiff_t* cur) {
    if (MT_VEC_RESERVE(&fs->rows, &fs->rowcap, fs->nrows + 1))
        return -ENOMEM;
    frame_row* f = &fs->rows[fs->nrows++];
    f->id = sqlite3_column_int64(sel, 0);
    f->mapping_id = sqlite3_column_int64(sel, 1);
    f->pc = (uint64_t)sqlite3_column_int64(sel, 2);
    bool have_mapping = sqlite3_column_type(sel, 4) != SQLITE_NULL;
    uint64_t bias = (uint64_t)sqlite3_column_int64(sel, 5);
    f->rel_pc = sqlite3_column_type(sel, 3) != SQLITE_NULL ? (uint64_t)sqlite3_column_int64(sel, 3)
                                                           : f->pc - bias;
    if (!have_mapping) {
        f->mod = -1;
        return 0;
    }
    if (f->mapping_id != *cur_mapping) {
        *cur_mapping = f->mapping_id;
        module* m = find_module(&fs->mods, &fs->nmods, &fs->modcap,
                                (const char*)sqlite3_column_text(sel, 4),
                                (const char*)sqlite3_column_text(sel, 6));
        if (!m)
            return -ENOMEM;
        *cur = m - fs->mods;
    }
    f->mod = *cur;
    return 0;
}

// Reads every frame to name before any update: updating a table while a statement scans
// it is allowed by SQLite but easy to get wrong.
static int read_frames(sqlite3* db, unsigned flags, frame_set* fs, char* err, size_t errlen) {
    const char* q = (flags & MT_SYMBOLIZE_ALL)
                        ? "SELECT f.id, f.mapping_id, f.pc, f.rel_pc, m.path, m.load_bias,"
                          " m.build_id FROM frame f LEFT JOIN mapping m ON m.id = f.mapping_id"
                          " ORDER BY f.mapping_id, f.pc"
                        : "SELECT f.id, f.mapping_id, f.pc, f.rel_pc, m.path, m.load_bias,"
                          " m.build_id FROM frame f LEFT JOIN mapping m ON m.id = f.mapping_id"
                          " WHERE f.function IS NULL ORDER BY f.mapping_id, f.pc";
    sqlite3_stmt* sel = NULL;
    if (sqlite3_prepare_v2(db, q, -1, &sel, NULL) != SQLITE_OK)
        return sql_fail(db, "reading frames", err, errlen);
    int64_t cur_mapping = INT64_MIN;
    ptrdiff_t cur = -1;
    int step = SQLITE_DONE, rc = 0;
    while (rc == 0 && (step = sqlite3_step(sel)) == SQLITE_ROW)
        rc = add_frame_row(sel, fs, &cur_mapping, &cur);
    if (rc)
        snprintf(err, errlen, "out of memory");
    else if (step != SQLITE_DONE)
        rc = sql_fail(db, "reading frames", err, errlen);
    sqlite3_finalize(sel);
    return rc;
}

// Binds one frame's names to the UPDATE (which takes ownership of res's strings) and
// runs it. Returns false if SQLite failed (its message is still in the db handle).
static bool store_names(sqlite3_stmt* upd, int64_t id, result* res) {
    sqlite3_bind_text(upd, 1, res->function, -1, free);
    sqlite3_bind_text(upd, 2, res->file, -1, free); // NULL binds NULL
    if (res->line > 0)
        sqlite3_bind_int(upd, 3, res->line);
    else
        sqlite3_bind_null(upd, 3);
    if (res->inlined.len)
        sqlite3_bind_text(upd, 4, res->inlined.p, (int)res->inlined.len, free);
    else {
        free(res->inlined.p);
        sqlite3_bind_null(upd, 4);
    }
    sqlite3_bind_int(upd, 5, res->relevant);
    sqlite3_bind_int64(upd, 6, id);
    if (sqlite3_step(upd) != SQLITE_DONE)
        return false;
    sqlite3_reset(upd);
    return true;
}

// Names every frame of the set and writes the names into its row.
static int update_frames(sqlite3* db, const frame_set* fs, mt_symcache* cache, char* err,
                         size_t errlen) {
    sqlite3_stmt* upd = NULL;
    int rc = 0;
    if (sqlite3_prepare_v2(db,
                           "UPDATE frame SET function=?1, file=?2, line=?3, inlined=?4,"
                           " relevant=?5 WHERE id=?6",
                           -1, &upd, NULL) != SQLITE_OK)
        rc = sql_fail(db, "updating frames", err, errlen);
    for (size_t i = 0; rc == 0 && i < fs->nrows; i++) {
        result res;
        symbolize_one(&fs->rows[i], fs->mods, cache, &res);
        if (!res.function || res.inlined.oom) {
            free(res.function);
            free(res.file);
            free(res.inlined.p);
            rc = -ENOMEM;
            snprintf(err, errlen, "out of memory");
        } else if (!store_names(upd, fs->rows[i].id, &res)) {
            rc = sql_fail(db, "updating frames", err, errlen);
        }
    }
    sqlite3_finalize(upd);
    return rc;
}

// The frames' names and meta 'symbolized' in one savepoint: all of it or nothing.
static int write_names(sqlite3* db, const frame_set* fs, mt_symcache* cache, char* err,
                       size_t errlen) {
    if (sqlite3_exec(db, "SAVEPOINT mt_symbolize", NULL, NULL, NULL) != SQLITE_OK)
        return sql_fail(db, "starting transaction", err, errlen);
    int rc = update_frames(db, fs, cache, err, errlen);
    if (rc == 0 &&
        sqlite3_exec(db, "INSERT OR REPLACE INTO meta(key, value) VALUES('symbolized', '1')", NULL,
                     NULL, NULL) != SQLITE_OK)
        rc = sql_fail(db, "writing meta", err, errlen);
    if (rc == 0 && sqlite3_exec(db, "RELEASE mt_symbolize", NULL, NULL, NULL) != SQLITE_OK)
        rc = sql_fail(db, "committing", err, errlen);
    if (rc) {
        sqlite3_exec(db, "ROLLBACK TO mt_symbolize", NULL, NULL, NULL);
        sqlite3_exec(db, "RELEASE mt_symbolize", NULL, NULL, NULL);
    }
    return rc;
}

int mt_symbolize_capture(sqlite3* db, unsigned flags, char* err, size_t errlen) {
    if (err && errlen)
        err[0] = 0;
    char dummy[8];
    if (!err) {
        err = dummy;
        errlen = sizeof dummy;
    }
    frame_set fs = {0};
    int rc = read_frames(db, flags, &fs, err, errlen);
    if (rc == 0) {
        mt_symcache* cache = fs.nrows ? mt_symcache_open() : NULL;
        rc = write_names(db, &fs, cache, err, errlen);
        mt_symcache_close(cache); // keeps what was learnt, even when this capture failed
    }
    for (size_t i = 0; i < fs.nmods; i++)
        module_close(&fs.mods[i]);
    free(fs.mods);
    free(fs.rows);
    return rc ? rc : (int)fs.nrows;
}
