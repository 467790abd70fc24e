// SPDX-License-Identifier: MIT
// Injection (memtrace --pid): a library dlopen'ed into a running process does not interpose
// anything, since every module already bound its heap calls to libc. So the GOT slots
// (R_X86_64_JUMP_SLOT and R_X86_64_GLOB_DAT relocations) that name one of our hooks are
// rewritten to point at libmemtrace.so's own definition, in every loaded module but ours, the
// dynamic loader's and the vDSO's; dlopen through a patched slot patches the modules it
// loads. Each slot's previous value is kept, and written back on detach. Never on the event
// path; called with the guard set (attach.c, or dlopen's hook), under one lock.
#include "inject.h"

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

// The entry points the preload shim interposes (shim.c, shim_exec.c, shim_ns.c), by symbol name.
// The mapping calls pass straight through unless the attach's settings say MEMTRACE_MMAP=1.
static const char* const hooked_names[] = {
    "malloc",        "calloc",   "realloc", "reallocarray", "free",       "posix_memalign",
    "aligned_alloc", "memalign", "valloc",  "pvalloc",      "free_sized", "free_aligned_sized",
    "dlclose",       "_exit",    "_Exit",   "sigprocmask",  "pipe2",      "execve",
    "execv",         "execvp",   "execvpe", "execl",        "execle",     "execlp",
    "fexecve",       "mmap",     "mmap64",  "munmap",       "mremap",     "unshare",
    "setns",
};
#define HOOKED_COUNT (sizeof hooked_names / sizeof *hooked_names)

// Our definitions of hooked_names (NULL where this libc has no such function), and dlopen.
static uintptr_t ours[HOOKED_COUNT];
static uintptr_t our_dlopen;
static uintptr_t self_base; // libmemtrace.so's load address: never patched

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

typedef struct module_tables {
    const ElfW(Sym) * symtab;
    const char* strtab;
    size_t strsz;
    const ElfW(Rela) * rela, *jmprel;
    size_t relasz, jmprelsz;
} module_tables;

// One relocation table of a module: patch (restore false) or restore its hooked slots.
static void visit_relocs(const module_tables* t, const ElfW(Rela) * rel, size_t size,
                         uintptr_t base, uintptr_t relro_lo, uintptr_t relro_hi, bool restore) {
    for (size_t i = 0; rel && i < size / sizeof *rel; i++) {
        uint32_t type = (uint32_t)ELF64_R_TYPE(rel[i].r_info);
        if (type != R_X86_64_JUMP_SLOT && type != R_X86_64_GLOB_DAT)
            continue;
        size_t sym = ELF64_R_SYM(rel[i].r_info);
        if (!sym || t->symtab[sym].st_name >= t->strsz)
            continue;
        uintptr_t hook = hook_for(t->strtab + t->symtab[sym].st_name);
        if (!hook)
            continue;
        uintptr_t* slot = (uintptr_t*)(base + rel[i].r_offset);
        uintptr_t now = __atomic_load_n(slot, __ATOMIC_ACQUIRE);
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
    bool restore = data != NULL;
    const char* name = info->dlpi_name ? info->dlpi_name : "";
    if (info->dlpi_addr == self_base || strstr(name, "/ld-linux") || strstr(name, "linux-vdso"))
        return 0;
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
    visit_relocs(&t, t.rela, t.relasz, info->dlpi_addr, relro_lo, relro_hi, restore);
    visit_relocs(&t, t.jmprel, t.jmprelsz, info->dlpi_addr, relro_lo, relro_hi, restore);
    return 0;
}

int mt_inject_patch_all(void) {
    pthread_mutex_lock(&lock);
    int rc = resolve_ours();
    if (rc == 0) {
        active = true;
        dl_iterate_phdr(visit_module, NULL);
    }
    pthread_mutex_unlock(&lock);
    return rc;
}

void mt_inject_restore_all(void) {
    pthread_mutex_lock(&lock);
    if (active) {
        static bool restore = true;
        dl_iterate_phdr(visit_module, &restore);
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
        if (active)
            dl_iterate_phdr(visit_module, NULL);
        pthread_mutex_unlock(&lock);
    }
    return h;
}
