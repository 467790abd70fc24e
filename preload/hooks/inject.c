// SPDX-License-Identifier: MIT
// Injection (memtrace --pid): a library dlopen'ed into a running process does not interpose
// anything, since every module already bound its heap calls to libc. So the GOT slots
// (R_X86_64_JUMP_SLOT and R_X86_64_GLOB_DAT relocations) that name one of our hooks are
// rewritten to point at libmemtrace.so's own definition, in every loaded module but ours, the
// dynamic loader's and the vDSO's; dlopen through a patched slot patches the modules it
// loads. Each slot's previous value is kept, and written back on detach. Never on the event
// path; called with the guard set (attach.c, or dlopen's hook), under one lock.
// Under LD_PRELOAD too, for a library dlopen'ed with RTLD_DEEPBIND (mt_inject_patch_deepbind):
// it binds its own references in its own scope first, so to libc's functions, not ours.
#include "inject.h"

#include "bootstrap.h"

#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <link.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

// The hooks an attach points modules at: those of hooks.def marked for it, by symbol name.
// The mapping calls pass straight through unless the attach's settings say MEMTRACE_MMAP=1.
#define ATTACHED_0(name)
#define ATTACHED_1(name) #name,
static const char* const hooked_names[] = {
#define MT_HEAP_HOOK(CALL, name, real, attach) ATTACHED_##attach(name)
#define MT_HOOK(name, real, attach) ATTACHED_##attach(name)
#include "hooks.def"
};
#undef ATTACHED_0
#undef ATTACHED_1
#define HOOKED_COUNT (sizeof hooked_names / sizeof *hooked_names)

// Our definitions of hooked_names (NULL where this libc has no such function), and dlopen.
static uintptr_t ours[HOOKED_COUNT];
static uintptr_t our_dlopen;
static uintptr_t self_base; // libmemtrace.so's load address: never patched
// What our definitions wrap (dlsym(RTLD_NEXT)): a RTLD_DEEPBIND module whose own scope
// resolves a name to that function bypasses our hook; one that resolves it elsewhere (its
// own allocator) is left alone.
static uintptr_t nexts[HOOKED_COUNT], next_dlopen;

// One rewritten slot and what it held before.
typedef struct patched_slot {
    uintptr_t* slot;
    uintptr_t old;
} patched_slot;

// Modules times hooked relocations: a few hundred in large programs. Slots beyond this many
// are left alone (their calls go untraced), never overrun.
#define MAX_SLOTS 16384
static patched_slot saved[MAX_SLOTS];
static size_t nsaved;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static bool active; // slots point at our hooks (between patch_all and restore_all)

static void* inject_dlopen(const char* file, int mode);

// `name` as libmemtrace.so defines it; 0 when only a library after it does (libc's
// free_sized, where the shim has none).
static uintptr_t own_symbol(void* self, const char* name) {
    void* p = dlsym(self, name);
    Dl_info info;
    return p && dladdr(p, &info) && (uintptr_t)info.dli_fbase == self_base ? (uintptr_t)p : 0;
}

static int resolve_ours(void) {
    if (our_dlopen)
        return 0;
    Dl_info info;
    if (!dladdr((void*)&our_dlopen, &info) || !info.dli_fname)
        return -ENOENT;
    // Looked up in our own handle: its search list starts with libmemtrace.so, where the
    // global scope (which a plain reference would use) finds libc's definitions first.
    void* self = dlopen(info.dli_fname, RTLD_NOW | RTLD_NOLOAD);
    if (!self)
        return -ENOENT;
    self_base = (uintptr_t)info.dli_fbase;
    for (size_t i = 0; i < HOOKED_COUNT; i++)
        ours[i] = own_symbol(self, hooked_names[i]);
    our_dlopen = own_symbol(self, "dlopen");
    dlclose(self); // only drops the reference RTLD_NOLOAD took
    for (size_t i = 0; i < HOOKED_COUNT; i++)
        nexts[i] = ours[i] ? (uintptr_t)dlsym(RTLD_NEXT, hooked_names[i]) : 0;
    next_dlopen = (uintptr_t)dlsym(RTLD_NEXT, "dlopen");
    return our_dlopen && ours[0] ? 0 : -ENOENT;
}

// The address a slot naming `name` should hold while attached, or 0 for a symbol we leave.
static uintptr_t hook_for(const char* name) {
    if (!strcmp(name, "dlopen"))
        return (uintptr_t)inject_dlopen;
    for (size_t i = 0; i < HOOKED_COUNT; i++)
        if (!strcmp(name, hooked_names[i]))
            return ours[i];
    return 0;
}

static bool is_ours(uintptr_t value) {
    if (value == (uintptr_t)inject_dlopen)
        return true;
    for (size_t i = 0; i < HOOKED_COUNT; i++)
        if (ours[i] && value == ours[i])
            return true;
    return false;
}

static patched_slot* find_saved(uintptr_t* slot) {
    for (size_t i = 0; i < nsaved; i++)
        if (saved[i].slot == slot)
            return &saved[i];
    return NULL;
}

// Writes a GOT slot; a slot inside the module's RELRO range was made read-only by the loader
// and is opened for the one store.
static void write_slot(uintptr_t* slot, uintptr_t value, uintptr_t relro_lo, uintptr_t relro_hi) {
    uintptr_t at = (uintptr_t)slot;
    if (at >= relro_lo && at < relro_hi) {
        uintptr_t page = at & ~((uintptr_t)sysconf(_SC_PAGESIZE) - 1);
        if (mprotect((void*)page, sizeof(uintptr_t) + (at - page), PROT_READ | PROT_WRITE) != 0)
            return;
        __atomic_store_n(slot, value, __ATOMIC_RELEASE);
        mprotect((void*)page, sizeof(uintptr_t) + (at - page), PROT_READ);
    } else {
        __atomic_store_n(slot, value, __ATOMIC_RELEASE);
    }
}

// One dl_iterate_phdr pass: every module (the attach's patch or restore), or only the
// modules of a RTLD_DEEPBIND dlopen, each with a handle to its own lookup scope.
typedef struct visit_ctx {
    bool restore;
    size_t n;                // deepbind: the modules to visit, by load address
    const uintptr_t* bases;  // NULL: every module
    const uint64_t* wrapped; // deepbind: per module, bit i: hooked_names[i] (bit
                             // HOOKED_COUNT: dlopen) resolves in its scope to what we wrap
    uint64_t mask;           // deepbind: the module being visited's
} visit_ctx;

_Static_assert(HOOKED_COUNT < 64, "a module's wrapped names fit one mask");

// Deepbind: which names the module of `handle` resolves in its own scope to the function our
// hook wraps. Taken before dl_iterate_phdr: dlsym takes the loader's lock, which a dlopen in
// another thread may hold while it waits for the one dl_iterate_phdr holds.
static uint64_t wrapped_names(void* handle) {
    uint64_t mask = 0;
    for (size_t i = 0; i < HOOKED_COUNT; i++)
        if (ours[i] && nexts[i] && (uintptr_t)dlsym(handle, hooked_names[i]) == nexts[i])
            mask |= (uint64_t)1 << i;
    if (our_dlopen && next_dlopen && (uintptr_t)dlsym(handle, "dlopen") == next_dlopen)
        mask |= (uint64_t)1 << HOOKED_COUNT;
    return mask;
}

// Deepbind: our hook for `name` when the visited module's scope resolves it to what that
// hook wraps, else 0.
static uintptr_t deepbind_hook_for(const visit_ctx* v, const char* name) {
    if (!strcmp(name, "dlopen"))
        return v->mask >> HOOKED_COUNT & 1 ? our_dlopen : 0;
    for (size_t i = 0; i < HOOKED_COUNT; i++)
        if (!strcmp(name, hooked_names[i]))
            return v->mask >> i & 1 ? ours[i] : 0;
    return 0;
}

typedef struct module_tables {
    const ElfW(Sym) * symtab;
    const char* strtab;
    size_t strsz;
    const ElfW(Rela) * rela, *jmprel;
    size_t relasz, jmprelsz;
} module_tables;

// One relocation table of a module: patch (restore false) or restore its hooked slots.
static void visit_relocs(const module_tables* t, const ElfW(Rela) * rel, size_t size,
                         uintptr_t base, uintptr_t relro_lo, uintptr_t relro_hi, visit_ctx* v) {
    bool restore = v->restore;
    for (size_t i = 0; rel && i < size / sizeof *rel; i++) {
        uint32_t type = (uint32_t)ELF64_R_TYPE(rel[i].r_info);
        if (type != R_X86_64_JUMP_SLOT && type != R_X86_64_GLOB_DAT)
            continue;
        size_t sym = ELF64_R_SYM(rel[i].r_info);
        if (!sym || t->symtab[sym].st_name >= t->strsz)
            continue;
        const char* name = t->strtab + t->symtab[sym].st_name;
        uintptr_t* slot = (uintptr_t*)(base + rel[i].r_offset);
        uintptr_t now = __atomic_load_n(slot, __ATOMIC_ACQUIRE);
        if (v->bases) {
            // A lazily bound slot still holds its PLT stub, which would bind in the module's
            // own scope: it is given our hook too.
            uintptr_t hook = deepbind_hook_for(v, name);
            if (hook && now != hook)
                write_slot(slot, hook, relro_lo, relro_hi);
            continue;
        }
        uintptr_t hook = hook_for(name);
        if (!hook)
            continue;
        if (restore) {
            patched_slot* s = find_saved(slot);
            if (s && now == hook)
                write_slot(slot, s->old, relro_lo, relro_hi);
        } else if (now != hook && !is_ours(now)) {
            patched_slot* s = find_saved(slot);
            if (!s && nsaved < MAX_SLOTS)
                s = &saved[nsaved++];
            if (!s)
                continue;
            s->slot = slot;
            s->old = now;
            write_slot(slot, hook, relro_lo, relro_hi);
        }
    }
}

static int visit_module(struct dl_phdr_info* info, size_t size, void* data) {
    (void)size;
    visit_ctx* v = data;
    const char* name = info->dlpi_name ? info->dlpi_name : "";
    if (info->dlpi_addr == self_base || strstr(name, "/ld-linux") || strstr(name, "linux-vdso"))
        return 0;
    if (v->bases) {
        size_t k = 0;
        while (k < v->n && v->bases[k] != info->dlpi_addr)
            k++;
        if (k == v->n)
            return 0;
        v->mask = v->wrapped[k];
    }
    const ElfW(Dyn)* dyn = NULL;
    uintptr_t relro_lo = 0, relro_hi = 0;
    uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr)* ph = &info->dlpi_phdr[i];
        if (ph->p_type == PT_DYNAMIC)
            dyn = (const ElfW(Dyn)*)(info->dlpi_addr + ph->p_vaddr);
        if (ph->p_type == PT_GNU_RELRO) {
            // The loader protects whole pages only: [start, end) both rounded down.
            relro_lo = (info->dlpi_addr + ph->p_vaddr) & ~(page - 1);
            relro_hi = (info->dlpi_addr + ph->p_vaddr + ph->p_memsz) & ~(page - 1);
        }
    }
    if (!dyn)
        return 0;
    module_tables t = {0};
    // The loader has relocated these d_ptr entries to addresses in memory.
    for (; dyn->d_tag != DT_NULL; dyn++) {
        switch (dyn->d_tag) {
        case DT_SYMTAB:
            t.symtab = (const ElfW(Sym)*)dyn->d_un.d_ptr;
            break;
        case DT_STRTAB:
            t.strtab = (const char*)dyn->d_un.d_ptr;
            break;
        case DT_STRSZ:
            t.strsz = dyn->d_un.d_val;
            break;
        case DT_RELA:
            t.rela = (const ElfW(Rela)*)dyn->d_un.d_ptr;
            break;
        case DT_RELASZ:
            t.relasz = dyn->d_un.d_val;
            break;
        case DT_JMPREL:
            t.jmprel = (const ElfW(Rela)*)dyn->d_un.d_ptr;
            break;
        case DT_PLTRELSZ:
            t.jmprelsz = dyn->d_un.d_val;
            break;
        default:
            break;
        }
    }
    if (!t.symtab || !t.strtab)
        return 0;
    visit_relocs(&t, t.rela, t.relasz, info->dlpi_addr, relro_lo, relro_hi, v);
    visit_relocs(&t, t.jmprel, t.jmprelsz, info->dlpi_addr, relro_lo, relro_hi, v);
    return 0;
}

int mt_inject_patch_all(void) {
    pthread_mutex_lock(&lock);
    int rc = resolve_ours();
    if (rc == 0) {
        active = true;
        visit_ctx v = {0};
        dl_iterate_phdr(visit_module, &v);
    }
    pthread_mutex_unlock(&lock);
    return rc;
}

void mt_inject_restore_all(void) {
    pthread_mutex_lock(&lock);
    if (active) {
        visit_ctx v = {.restore = true};
        dl_iterate_phdr(visit_module, &v);
        active = false;
        nsaved = 0;
    }
    pthread_mutex_unlock(&lock);
}

// dlopen through a patched slot: the shim's dlopen (module maps), then the new modules'
// slots. The lock also waits for a detach in progress.
static void* inject_dlopen(const char* file, int mode) {
    void* (*real)(const char*, int);
    memcpy(&real, &our_dlopen, sizeof real);
    void* h = real(file, mode);
    if (h) {
        pthread_mutex_lock(&lock);
        if (active) {
            visit_ctx v = {0};
            dl_iterate_phdr(visit_module, &v);
        }
        pthread_mutex_unlock(&lock);
    }
    return h;
}

// The modules a RTLD_DEEPBIND dlopen of `handle` may have loaded: its own and those after it
// in the load order (its new dependencies, loaded with RTLD_DEEPBIND too; a module another
// thread loaded meanwhile is visited by the same rule, which gives it what it would bind).
#define MAX_DEEPBIND_MODULES 256

int mt_inject_patch_deepbind(void* handle) {
    struct link_map* first = NULL;
    if (dlinfo(handle, RTLD_DI_LINKMAP, &first) != 0 || !first)
        return -ENOENT;
    pthread_mutex_lock(&lock);
    int rc = resolve_ours();
    if (rc == 0 && !active) { // attached: inject_dlopen patches every module already
        static uintptr_t bases[MAX_DEEPBIND_MODULES];
        static uint64_t wrapped[MAX_DEEPBIND_MODULES];
        size_t n = 0;
        for (struct link_map* m = first; m && n < MAX_DEEPBIND_MODULES; m = m->l_next) {
            void* h = m == first ? handle
                      : m->l_name && m->l_name[0]
                          ? mt_real.dlopen(m->l_name, RTLD_LAZY | RTLD_NOLOAD)
                          : NULL;
            if (!h)
                continue;
            bases[n] = m->l_addr;
            wrapped[n++] = wrapped_names(h);
            if (h != handle)
                mt_real.dlclose(h); // only the reference RTLD_NOLOAD took
        }
        visit_ctx v = {.n = n, .bases = bases, .wrapped = wrapped};
        dl_iterate_phdr(visit_module, &v);
    }
    pthread_mutex_unlock(&lock);
    return rc;
}
