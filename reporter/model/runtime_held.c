// SPDX-License-Identifier: MIT
// Blocks held by the C runtime (the rule is in runtime_held.h).
#include "runtime_held.h"

#include "sites.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static bool has_prefix(const char* s, const char* p) {
    return strncmp(s, p, strlen(p)) == 0;
}

static bool is_loader(const char* module) {
    return has_prefix(module, "ld-linux") || has_prefix(module, "ld64.so") ||
           has_prefix(module, "ld.so") || (has_prefix(module, "ld-") && strstr(module, ".so"));
}

static bool is_runtime_module(const char* module) {
    return has_prefix(module, "libc.so") || has_prefix(module, "libstdc++.so") ||
           has_prefix(module, "libpthread.so") || has_prefix(module, "libdl.so") ||
           is_loader(module);
}

// Functions of the runtime that keep what they allocate until the process ends.
static bool keeps_its_allocation(const char* fn) {
    static const char* const exact[] = {
        // stdio buffers (of stdin/stdout/stderr, and of a FILE never closed)
        "_IO_file_doallocate", "_IO_wfile_doallocate",
        // locale: the current locale's names and data
        "setlocale",
        // atexit / at_quick_exit / __cxa_atexit handler lists, pthread_atfork handlers
        "__new_exitfn", "__register_atfork",
        // the dlerror result of a thread
        "_dlerror_run",
        // gettext's text domain and its bindings (no call frees them); setenv's strings
        "textdomain", "set_binding_values", "__add_to_environ",
        // iconv's loaded conversion modules and configuration
        "__gconv_load_cache", "__gconv_read_conf", "__gconv_find_shlib",
        // the time zone read by localtime, tzset...
        "tzset_internal", "__tzfile_read", "__tzstring",
        // the static result buffers of the non-reentrant database lookups
        "getpwnam", "getpwuid", "getgrnam", "getgrgid", "gethostbyname", "gethostbyname2",
        "gethostbyaddr", "getservbyname", "getservbyport", "getprotobyname", NULL};
    if (has_prefix(fn, "__GI_")) // glibc's internal alias of the same function
        fn += 5;
    for (size_t i = 0; exact[i]; i++)
        if (!strcmp(fn, exact[i]))
            return true;
    return has_prefix(fn, "_nl_")       // locale data, gettext catalogs (strerror...)
           || has_prefix(fn, "__nss_")  // NSS databases and loaded service modules
           || strstr(fn, "pool::pool"); // libstdc++'s exception emergency pool
}

bool mr_runtime_held(const mr_symbols* s, uint32_t leaf) {
    uint32_t frames[MR_SITES_MAX_DEPTH];
    size_t n = mr_symbols_stack(s, leaf, true, frames, MR_SITES_MAX_DEPTH);
    for (size_t i = 0; i < n && i < MR_SITES_MAX_DEPTH; i++) {
        const char* module = mr_symbols_frame_module(s, frames[i]);
        if (module && has_prefix(module, "libmemtrace"))
            continue;
        if (!module || !is_runtime_module(module))
            return false; // the program's code (or unknown code) asked for the block
        if (is_loader(module))
            return true;
        const mr_symloc* locs;
        size_t nl = mr_symbols_frame_locs(s, frames[i], &locs);
        for (size_t l = 0; l < nl; l++)
            if (keeps_its_allocation(locs[l].function))
                return true;
    }
    return false;
}

int mr_runtime_held_apart(mr_profile* p, const mr_symbols* s, bool at_end, uint64_t* bytes,
                          uint64_t* blocks) {
    uint64_t held_bytes = 0, held_blocks = 0;
    uint32_t ncallsites = mr_symbols_callsite_count(s);
    // Per callsite: 0 not classified yet, 1 the program's, 2 the runtime's.
    unsigned char* held = calloc((size_t)ncallsites + 1, 1);
    if (!held)
        return -ENOMEM;
    for (size_t i = 0; i < p->nrows; i++) {
        mr_profile_row* r = &p->rows[i];
        if (!r->end_blocks || r->callsite >= ncallsites)
            continue;
        if (!held[r->callsite])
            held[r->callsite] = mr_runtime_held(s, r->callsite) ? 2 : 1;
        if (held[r->callsite] != 2)
            continue;
        held_bytes += r->end_bytes;
        held_blocks += r->end_blocks;
        if (at_end) {
            p->live_bytes -= r->live_bytes;
            p->live_blocks -= r->live_blocks;
            r->live_bytes = r->live_blocks = 0;
        }
        r->end_bytes = r->end_blocks = 0;
    }
    free(held);
    p->end_bytes -= held_bytes;
    p->end_blocks -= held_blocks;
    if (bytes)
        *bytes = held_bytes;
    if (blocks)
        *blocks = held_blocks;
    return 0;
}
