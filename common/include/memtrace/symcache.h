// SPDX-License-Identifier: MIT
// A persistent cache of frame names, shared by every traced process and memreport run of a
// user: (module build-id, address) -> what the symbolizer found there. Reading a module's
// DWARF costs tens of milliseconds (libc's debug info is compressed), paid by every traced
// process at exit; with the cache it is paid once per library version.
//
// Keyed by build-id, an entry stays right for good, with one exception the caller checks: a
// name read without DWARF, for a module whose debug file is installed later (from_dwarf).
// The cache is a SQLite file; any trouble with it (missing HOME, read-only directory, a
// corrupt or foreign file, another process holding its lock) makes it silently unused.
// It names frames in reports, so it is used only when the file and its directory are the
// effective user's own and not writable by group or others, and the file is no symlink;
// a row whose values are not what mt_symcache_put writes is a miss.
#ifndef MEMTRACE_SYMCACHE_H
#define MEMTRACE_SYMCACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct mt_symcache mt_symcache;

typedef struct mt_symcache_entry {
    char* function; // never NULL in an entry
    char* file;     // may be NULL
    int line;       // 0: unknown
    char* inlined;  // JSON array or NULL (see symbolize.h)
    bool relevant;
    bool from_dwarf; // the module had DWARF (else: symbol table or module+offset)
} mt_symcache_entry;

// Where the cache lives: $MEMTRACE_SYMBOL_CACHE (empty or "0": no cache), else
// $XDG_CACHE_HOME/memtrace/symbols.db, else $HOME/.cache/memtrace/symbols.db. Writes the
// path into buf and returns true, or returns false when there is to be no cache.
bool mt_symcache_path(char* buf, size_t len);

// Opens (creating the directory 0700 and the file 0600 when needed); NULL: no cache this
// time (also for a cache that is not private to the user, left untouched).
mt_symcache* mt_symcache_open(void);
// Fills *out (strings malloc'd, free with mt_symcache_entry_free) and returns true on a hit.
bool mt_symcache_get(mt_symcache* c, const char* build_id, uint64_t rel_pc, mt_symcache_entry* out);
// Queues an entry; written by mt_symcache_close in one transaction.
void mt_symcache_put(mt_symcache* c, const char* build_id, uint64_t rel_pc,
                     const mt_symcache_entry* e);
void mt_symcache_close(mt_symcache* c);
void mt_symcache_entry_free(mt_symcache_entry* e);

#endif
