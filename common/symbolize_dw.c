// SPDX-License-Identifier: MIT
// The tracer's libdw, loaded on first need (symbolize_dw.h): dlopen("libdw.so.1") once per
// process and its functions looked up into mt_dw. Only compiled into the tracer's copy of
// common (MEMTRACE_LAZY_LIBDW). Runs in the pass at exit, with the tracer's guard set: the
// loader's allocations are not traced, and the shim's dlopen hook records no module map
// then (the capture's mappings are the program's own).
#define _GNU_SOURCE
#define MT_DW_LOADER
#include "symbolize_dw.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <string.h>

struct mt_dw_api mt_dw;

static int load_rc = -ENOENT;
static pthread_once_t load_once = PTHREAD_ONCE_INIT;

static void load(void) {
    // Never closed once loaded: names and handles from it live until the process ends.
    void* h = dlopen("libdw.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!h)
        return;
    struct mt_dw_api api;
    void* f;
    // POSIX guarantees a data pointer from dlsym converts to a function pointer.
#define MT_DW_RESOLVE(name)                                                                        \
    if (!(f = dlsym(h, #name))) {                                                                  \
        dlclose(h);                                                                                \
        return;                                                                                    \
    }                                                                                              \
    memcpy(&api.name, &f, sizeof f);
    MT_DW_FUNCTIONS(MT_DW_RESOLVE)
#undef MT_DW_RESOLVE
    mt_dw = api;
    load_rc = 0;
}

int mt_symbolize_dw_load(void) {
    pthread_once(&load_once, load);
    return load_rc;
}
