// SPDX-License-Identifier: MIT
// Tracing starts at the first heap call of the process (or when the library is loaded, if
// that comes first) and the capture is finished after every library's destructor has run.
// Only in the shared library: a unit test links the core without this file and starts it
// itself (mt_core_init), after setting MEMTRACE_OUTPUT.
#include "core.h"
#include "write_signals.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char in_this_library;

// Whether addr lies in one of the module's loaded segments.
static bool holds(const struct dl_phdr_info* m, uintptr_t addr) {
    for (int i = 0; i < m->dlpi_phnum; i++) {
        const ElfW(Phdr)* ph = &m->dlpi_phdr[i];
        uintptr_t lo = m->dlpi_addr + ph->p_vaddr;
        if (ph->p_type == PT_LOAD && addr >= lo && addr - lo < ph->p_memsz)
            return true;
    }
    return false;
}

static bool ends_with(const char* s, const char* tail) {
    size_t n = strlen(s), t = strlen(tail);
    return n >= t && !strcmp(s + n - t, tail);
}

// Where this library, libc and the malloc the program's calls reach stand in the loader's
// list of modules (-1: not found), with their names.
typedef struct load_order {
    uintptr_t malloc_at;
    int n, self, libc, malloc;
    const char* self_name;
    const char* malloc_name;
} load_order;

static int visit(struct dl_phdr_info* m, size_t size, void* arg) {
    (void)size;
    load_order* o = arg;
    int i = o->n++;
    if (o->self < 0 && holds(m, (uintptr_t)&in_this_library)) {
        o->self = i;
        o->self_name = m->dlpi_name;
    }
    if (o->malloc < 0 && holds(m, o->malloc_at)) {
        o->malloc = i;
        o->malloc_name = m->dlpi_name;
    }
    if (o->libc < 0 && m->dlpi_name && ends_with(m->dlpi_name, "/libc.so.6"))
        o->libc = i;
    return 0;
}

// Whether a debugger (memtrace --pid's gdb) has this process under ptrace: read with no
// allocation, the first lines of /proc/self/status hold TracerPid.
static bool ptraced(void) {
    char buf[1024];
    int fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return false;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    buf[n > 0 ? n : 0] = 0;
    const char* t = strstr(buf, "\nTracerPid:");
    if (!t)
        return false;
    for (t += strlen("\nTracerPid:"); *t == ' ' || *t == '\t'; t++)
        ;
    return *t >= '1' && *t <= '9';
}

// One line on stderr: nothing else will tell the user why there is no capture.
static void say_why(const char* lib, const char* why) {
    char line[4096];
    int n = snprintf(line, sizeof line, "memtrace: %s records nothing: %s\n",
                     lib && *lib ? lib : "libmemtrace.so", why);
    if (n <= 0)
        return;
    if ((size_t)n >= sizeof line)
        n = (int)sizeof line - 1;
    int saved = errno;
    mt_write_signals hold;
    mt_write_signals_hold(&hold);
    (void)!write(STDERR_FILENO, line, (size_t)n);
    mt_write_signals_release(&hold);
    errno = saved;
}

// Preloaded (LD_PRELOAD under any file name, or /etc/ld.so.preload), this library is
// loaded before libc and the program's heap calls resolve to its hooks; dlopen'ed into a
// running process by memtrace --pid, it comes after: there the library waits for gdb to call
// memtrace_attach (attach.c). Read from the loader's list and from the address our own
// reference to malloc was bound to: no lookup that allocates (a dlsym's dlerror state,
// freed later by the program, would be a block it never saw made).
static bool can_record(void) {
    uintptr_t volatile bound = (uintptr_t)&malloc; // through the GOT: the first one loaded
    load_order o = {.malloc_at = bound, .self = -1, .libc = -1, .malloc = -1};
    dl_iterate_phdr(visit, &o);
    if (o.self < 0 || (o.libc >= 0 && o.self > o.libc)) {
        // Loaded by gdb for an attach, the process is being traced: attach.c starts it.
        if (!ptraced())
            say_why(o.self_name,
                    "it was loaded after libc (linked to the program or dlopen'ed), not "
                    "preloaded, so the program's heap calls never reach it; preload it "
                    "(LD_PRELOAD, or run the program under memtrace)");
        return false;
    }
    // In the program itself, malloc is the canonical address of a program linked without
    // PIE that takes it (its PLT slot, which reaches us) or its own allocator: either way
    // as before. In a library loaded before us (a second copy of the tracer preloaded after
    // the first, or an allocator preloaded first), that library takes every call.
    if (o.malloc > 0 && o.malloc != o.self) {
        char why[PATH_MAX + 128];
        snprintf(why, sizeof why,
                 "malloc resolves to %s, loaded before it: the program's heap calls never "
                 "reach this library",
                 o.malloc_name);
        say_why(o.self_name, why);
        return false;
    }
    return true;
}

// Whether the start was decided, by the first heap call or by the constructor, whichever
// came first; and whether it started a capture.
static _Atomic int decided, started_here;

static void start_once(void) {
    if (atomic_exchange(&decided, 1))
        return;
    bool yes = can_record();
    if (yes) {
        atomic_store(&started_here, 1);
        mt_core_init();
    }
}

// Libraries initialised before this one (libstdc++'s emergency pool, a library's
// constructor) allocate before our constructor runs: the capture starts at their first call.
bool mt_core_start_early(void) {
    if (atomic_load_explicit(&decided, memory_order_relaxed))
        return false;
    start_once();
    return atomic_load(&mt_state) == MT_STATE_RECORDING;
}

__attribute__((constructor)) static void start_at_load(void) {
    start_once();
}

// exit() ends the process next: a signal sent while the capture is finished is never
// delivered, as untraced, where the process was gone before it came.
static void finish_last(void* unused) {
    (void)unused;
    sigset_t old_mask;
    mt_write_signals_end_hold(&old_mask);
    mt_core_shutdown();
}

int __cxa_atexit(void (*fn)(void*), void* arg, void* dso_handle);

// Preloaded, this destructor runs before those of the libraries initialised before us:
// registered now, from inside exit's run of the destructors, finish_last runs once they
// all have. Registered for no library (atexit() would name ours, and our own unload would
// run it at once); so only a preloaded library, never unloaded, defers: attached, the
// capture ends here.
__attribute__((destructor)) static void finish_at_exit(void) {
    if (!atomic_load(&started_here) || __cxa_atexit(finish_last, NULL, NULL) != 0)
        mt_core_shutdown();
}
