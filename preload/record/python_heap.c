// SPDX-License-Identifier: MIT
// CPython's own allocators as heap MT_HEAP_PYTHON (python_heap.h). Objects under 512 bytes
// come from pymalloc's arenas and never reach malloc, so the libc heap alone misses most of
// a Python program's memory. As tracemalloc does, the allocators of the PYMEM_DOMAIN_MEM
// and PYMEM_DOMAIN_OBJ domains are wrapped with PyMem_SetAllocator: each wrapper calls the
// allocator it replaced and records what it returned. The heap calls that allocator makes
// itself (pymalloc's arenas, malloc under PYTHONMALLOC=malloc or the debug hooks, the
// blocks over 512 bytes) run with the guard raised, untraced: a byte is counted in one heap.
// PyMem_RawMalloc (the raw domain) is malloc, already recorded in the libc heap.
//
// When: the interpreter sets its allocators up during its pre-initialisation (PYTHONMALLOC,
// -X dev) and may replace any it finds then; the wrappers go in at the first malloc after
// _PyRuntime.preinitialized is set, before any Python code runs. Nothing else of the
// interpreter is read or called. CPython 3.8 to 3.13; others are left as they are, and the
// capture says why (meta python).
// The wrappers run inside the interpreter's allocators: no allocation from the traced heap,
// no stdio, no Python API.
#include "python_heap.h"

#include "config.h"
#include "core.h"
#include "python_frames.h"
#include "sampling.h"
#include "say.h"

#include "memtrace/schema.h"

#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// CPython's PyMemAllocatorEx and its domains, the same from 3.5 on.
typedef struct py_allocator {
    void* ctx;
    void* (*malloc)(void* ctx, size_t size);
    void* (*calloc)(void* ctx, size_t nelem, size_t elsize);
    void* (*realloc)(void* ctx, void* ptr, size_t size);
    void (*free)(void* ctx, void* ptr);
} py_allocator;
enum { PY_DOMAIN_MEM = 1, PY_DOMAIN_OBJ = 2 };

typedef void (*allocator_fn)(int domain, py_allocator* allocator);

_Atomic int mt_python_waiting;
static allocator_fn get_allocator, set_allocator;
static const volatile int* preinitialized; // in _PyRuntime
static py_allocator inner[3];              // what each wrapped domain had, by domain
static bool heap_on;
static char status[160];

// dlsym returns void*; ISO C has no cast to function pointers, memcpy is the portable way.
static void* symbol(const char* name, void* fn, size_t size) {
    void* f = dlsym(RTLD_DEFAULT, name);
    if (fn)
        memcpy(fn, &f, size);
    return f;
}

const char* mt_python_heap_status(void) {
    return status[0] ? status : NULL;
}

bool mt_python_heap_on(void) {
    return heap_on;
}

// ---- the wrappers: ctx is the allocator they replaced

static void* wrap_malloc(void* ctx, size_t size) {
    const py_allocator* a = ctx;
    if (!mt_recording())
        return a->malloc(a->ctx, size);
    mt_guard = 1; // the allocator's own heap calls and mappings are this block's
    void* p = a->malloc(a->ctx, size);
    mt_guard = 0;
    // Sampled, most calls are only counted, as the libc hooks do (shim.c).
    if (p && (MT_LIKELY(!mt_sampling) || !mt_core_unsampled_alloc(MT_CALL_PY_MALLOC, p, size)))
        mt_core_on_heap_alloc(MT_HEAP_PYTHON, MT_KIND_MALLOC, MT_CALL_PY_MALLOC, p, size);
    return p;
}

static void* wrap_calloc(void* ctx, size_t n, size_t size) {
    const py_allocator* a = ctx;
    if (!mt_recording())
        return a->calloc(a->ctx, n, size);
    mt_guard = 1;
    void* p = a->calloc(a->ctx, n, size);
    mt_guard = 0;
    size_t total;
    if (p && !__builtin_mul_overflow(n, size, &total) &&
        (MT_LIKELY(!mt_sampling) || !mt_core_unsampled_alloc(MT_CALL_PY_CALLOC, p, total)))
        mt_core_on_heap_alloc(MT_HEAP_PYTHON, MT_KIND_CALLOC, MT_CALL_PY_CALLOC, p, total);
    return p;
}

static void* wrap_realloc(void* ctx, void* old, size_t size) {
    const py_allocator* a = ctx;
    if (!mt_recording())
        return a->realloc(a->ctx, old, size);
    // Sampling: the old block leaves the set before the call may free it (0: not sampled).
    uint64_t free_seq = old && mt_sampling_keep_free(old) ? mt_seq_take() : 0;
    mt_guard = 1;
    void* p = a->realloc(a->ctx, old, size);
    mt_guard = 0;
    mt_core_on_heap_realloc(MT_HEAP_PYTHON, free_seq, old, p, size);
    return p;
}

static void wrap_free(void* ctx, void* ptr) {
    const py_allocator* a = ctx;
    if (ptr)
        mt_python_frames_before_py_free(ptr);
    if (!ptr || !mt_recording()) {
        a->free(a->ctx, ptr);
        return;
    }
    // Before the free: the address may be reused.
    if (MT_LIKELY(!mt_sampling) || !mt_core_unsampled_free(MT_CALL_PY_FREE, ptr))
        mt_core_on_heap_free(MT_HEAP_PYTHON, ptr);
    mt_guard = 1;
    a->free(a->ctx, ptr);
    mt_guard = 0;
}

// ---- finding the interpreter

// The interpreter's version as 0xMMmm (3.11: 0x030b), or 0 when unknown.
static unsigned version_of(int* micro) {
    const unsigned long* hex = dlsym(RTLD_DEFAULT, "Py_Version"); // 3.11 and later
    if (hex) {
        *micro = (int)((*hex >> 8) & 0xff);
        return (unsigned)(*hex >> 16);
    }
    // Older: "3.10.13 (main, ...)", built into a static buffer without allocating.
    const char* (*get)(void) = NULL;
    symbol("Py_GetVersion", &get, sizeof get);
    unsigned major, minor;
    if (get && sscanf(get(), "%u.%u.%d", &major, &minor, micro) == 3 && major < 256 && minor < 256)
        return major << 8 | minor;
    return 0;
}

// Where _PyRuntime.preinitialized is: after two ints (3.8 to 3.10: preinitializing), after
// three (3.11, 3.12: _initialized first), and in 3.13 after _Py_DebugOffsets, whose
// runtime_state.finalizing (at 32) places _finalizing 16 bytes after preinitialized.
static const int* preinit_flag(const char* runtime, unsigned version, const char** why) {
    if (version >= 0x0308 && version <= 0x030a)
        return (const int*)(runtime + 4);
    if (version == 0x030b || version == 0x030c)
        return (const int*)(runtime + 8);
    if (version == 0x030d) {
        uint64_t finalizing;
        memcpy(&finalizing, runtime + 32, sizeof finalizing);
        if (memcmp(runtime, "xdebugpy", 8) != 0 || finalizing < 64 || finalizing > 4096) {
            *why = "_PyRuntime's debug offsets are not as 3.13 has them";
            return NULL;
        }
        return (const int*)(runtime + finalizing - 16);
    }
    *why = "a version other than 3.8 to 3.13";
    return NULL;
}

static void find_python(void) {
    symbol("PyMem_SetAllocator", &set_allocator, sizeof set_allocator);
    symbol("PyMem_GetAllocator", &get_allocator, sizeof get_allocator);
    const char* runtime = dlsym(RTLD_DEFAULT, "_PyRuntime");
    int micro = 0;
    unsigned version = version_of(&micro);
    if (!version && !set_allocator)
        return; // no CPython here
    char seen[32];
    snprintf(seen, sizeof seen, "CPython %u.%u.%d", version >> 8, version & 0xff, micro);
    const char* why = NULL;
    const int* flag = NULL;
    if (!version)
        why = "its version is unknown";
    else if (!set_allocator || !get_allocator)
        why = "it has no PyMem_SetAllocator";
    else if (!runtime)
        why = "it has no _PyRuntime";
    else
        flag = preinit_flag(runtime, version, &why);
    if (mt_cfg.python_malloc) {
        snprintf(status, sizeof status, "%s: its allocators left as they are (%s)", seen,
                 "MEMTRACE_PYTHONMALLOC=1");
        return;
    }
    if (!flag) {
        snprintf(status, sizeof status, "%s: its own allocators are not recorded: %s", seen, why);
        char line[256];
        int n = snprintf(line, sizeof line,
                         "memtrace: %s; objects from pymalloc are missing (memtrace "
                         "--python-malloc runs it with PYTHONMALLOC=malloc)\n",
                         status);
        if (n > 0)
            mt_say(line, (size_t)n < sizeof line ? (size_t)n : sizeof line - 1);
        return;
    }
    snprintf(status, sizeof status, "%s: its allocators recorded as heap python", seen);
    preinitialized = flag;
    heap_on = true;
}

void mt_python_heap_init(void) {
    find_python();
    if (heap_on)
        atomic_store(&mt_python_waiting, 1);
    // A symbol not found (any program but CPython) leaves dlerror's state allocated under
    // the guard, for the program's next dl* call to free unseen: read twice, it is freed here.
    dlerror();
    dlerror();
}

static void wrap(int domain) {
    py_allocator a;
    get_allocator(domain, &a);
    if (a.malloc == wrap_malloc)
        return;
    inner[domain] = a;
    py_allocator w = {&inner[domain], wrap_malloc, wrap_calloc, wrap_realloc, wrap_free};
    set_allocator(domain, &w);
}

// Run by CPython in its main thread, the GIL held (a pending call of mt_python_heap_attach).
static int wrap_pending(void* arg) {
    (void)arg;
    int guard = mt_guard;
    mt_guard = 1;
    wrap(PY_DOMAIN_MEM);
    wrap(PY_DOMAIN_OBJ);
    mt_python_frames_watch_frees();
    mt_guard = guard;
    return 0;
}

void mt_python_heap_attach(void) {
    static bool looked;
    if (!looked) {
        looked = true;
        find_python();
        dlerror(); // as in mt_python_heap_init
        dlerror();
    }
    if (!heap_on)
        return;
    int (*add_pending)(int (*)(void*), void*) = NULL;
    symbol("Py_AddPendingCall", &add_pending, sizeof add_pending);
    if (!add_pending || add_pending(wrap_pending, NULL) != 0) {
        heap_on = false;
        size_t n = strcspn(status, ":");
        snprintf(status + n, sizeof status - n, ": its own allocators are not recorded: %s",
                 "no pending call could be made");
    }
}

void mt_python_heap_poll(void) {
    if (mt_guard || atomic_load_explicit(&mt_state, memory_order_relaxed) != MT_STATE_RECORDING ||
        !*preinitialized || !atomic_exchange(&mt_python_waiting, 0))
        return;
    mt_guard = 1;
    wrap(PY_DOMAIN_MEM);
    wrap(PY_DOMAIN_OBJ);
    mt_python_frames_watch_frees();
    mt_guard = 0;
}
