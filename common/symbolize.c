// SPDX-License-Identifier: MIT
// Frame symbolization: every unique frame of a capture named once (through the user's
// symbol cache, symcache.h, else from its module's file: symbolize_frame.h), relevance
// decided, names stored. Runs in the tracer's writer thread at exit and in memreport.
// Prints nothing: stdio only formats into buffers, and failures come back through the
// return value and err.
#define _GNU_SOURCE
#include "memtrace/symbolize.h"

#include "symbolize_frame.h"

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
#include <time.h>
#include <unistd.h>

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

// Naming at a traced program's exit is bounded (mt_symbolize_capture_at_exit): the symbol
// cache and symbol tables always serve, a module's DWARF is read only while the pass is
// within its budget, counting what reading it would cost. Frames left for memreport stay
// unnamed.
#define DWARF_BYTES_PER_MS (50 * 1000) // libc's 4.2 MB debug file: ~40 ms here, read and indexed

typedef struct bounds {
    bool on;
    bool cache_only;     // no module file is read: a cache miss is deferred
    int64_t deadline_ns; // CLOCK_MONOTONIC
    size_t deferred;     // frames left unnamed
    size_t cached;       // frames named from the symbol cache
} bounds;

static int64_t monotonic_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

// May the pass use m's DWARF now? A module whose DWARF is not read yet is read only when
// its estimated cost fits in what is left; once read, its frames are named until the
// deadline (each new compile unit indexed costs too). Modules without DWARF cost nothing.
static bool dwarf_affordable(module* m, const bounds* b) {
    if (!b->on || !m || m->has_dwarf == 0)
        return true;
    if (m->dwarf_deferred)
        return false;
    int64_t now = monotonic_ns();
    if (m->has_dwarf == 1)
        return now <= b->deadline_ns;
    long long bytes = mt_symbolize_frame_dwarf_bytes(m);
    if (bytes == 0)
        return true;
    if (now + bytes / DWARF_BYTES_PER_MS * 1000000 > b->deadline_ns) {
        m->dwarf_deferred = true;
        return false;
    }
    return true;
}

typedef struct frame_row {
    int64_t id;
    int64_t mapping_id;
    uint64_t pc;
    uint64_t rel_pc;
    ptrdiff_t mod; // index into the module table, -1: no mapping row
} frame_row;

// Names a frame from its module's DWARF, else from symname (the symbol table's name for the
// call, taken over), else as module+offset.
static void resolve(const frame_row* f, module* m, char* symname, result* res) {
    if (mt_symbolize_frame_module_dwfl(m)) {
        // A return address: the call is the instruction before it. Except in the frame a
        // signal interrupted: there the kernel pushed the signal trampoline's own address
        // (__restore_rt, an entry point), and pc-1 falls into the padding before it; so
        // when pc-1 names nothing, the pc itself is tried.
        for (int attempt = 0; attempt < 2 && !res->function; attempt++) {
            Dwarf_Addr addr = f->rel_pc - (attempt == 0 && f->rel_pc ? 1 : 0);
            free(res->inlined.p);
            memset(&res->inlined, 0, sizeof res->inlined);
            mt_symbolize_frame_resolve_dwarf(m, addr, res);
            if (!res->function && attempt == 0 && f->rel_pc) {
                res->function = symname;
                symname = NULL;
            } else if (!res->function) {
                res->function = mt_symbolize_frame_symtab_name(m, addr);
            }
        }
        // Nothing names it (a stripped binary): the function holding the call, after both
        // attempts, so a signal frame's __restore_rt keeps its name.
        if (!res->function && f->rel_pc)
            res->function = mt_symbolize_frame_fde_name(m, f->rel_pc - 1);
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

// Names a frame: from the symbol cache; else, for frames reports hide (start-up, allocator
// internals), from the symbol table alone: reading a module's DWARF costs tens of ms (libc's
// is compressed), and in many programs libc and libstdc++ appear only through such frames;
// else from DWARF. What a module with a build-id names goes into the cache.
// Leaves res->function NULL when bounds defer the frame to memreport.
static void symbolize_one(const frame_row* f, module* mods, mt_symcache* cache, bounds* b,
                          result* res) {
    memset(res, 0, sizeof *res);
    module* m = f->mod >= 0 ? &mods[f->mod] : NULL;
    bool cacheable = cache && m && m->build_id && m->build_id[0] && m->path[0] == '/';
    mt_symcache_entry e;
    if (cacheable && mt_symcache_get(cache, m->build_id, f->rel_pc, &e)) {
        // A name from the symbol table alone is worth a second look once a debug file is
        // installed, unless the frame is noise: those are named from the symbol table anyway
        // (below), and looking again would sort the module's whole table in every process.
        if (e.from_dwarf || !e.relevant || !mt_symbolize_frame_debug_file_installed(m)) {
            *res = (result){
                .function = e.function, .file = e.file, .line = e.line, .relevant = e.relevant};
            if (e.inlined)
                res->inlined = (sbuf){e.inlined, strlen(e.inlined), strlen(e.inlined) + 1, false};
            b->cached++;
            return;
        }
        mt_symcache_entry_free(&e);
    }
    // The module's file is needed from here on, through libdw, which the tracer loads only
    // now (symbolize_dw.h). Where it cannot (not installed), the frame is left to memreport,
    // as when the budget runs out.
    if (m && (b->cache_only || mt_symbolize_dw_load() != 0)) {
        b->deferred++;
        return;
    }
    char* symname = f->rel_pc ? mt_symbolize_frame_symtab_name(m, f->rel_pc - 1) : NULL;
    bool from_dwarf = false;
    if (symname && is_noise(m->base, symname)) {
        res->function = symname;
        res->relevant = false;
    } else if (!dwarf_affordable(m, b)) {
        free(symname);
        b->deferred++;
        return;
    } else {
        resolve(f, m, symname, res);
        from_dwarf = mt_symbolize_frame_module_has_dwarf(m);
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
    m->base = mt_symbolize_frame_basename(m->path);
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
                          " WHERE m.path IS NOT '[python]' ORDER BY f.mapping_id, f.pc"
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

// Names every frame of the set (but those bounds defer) and writes the names into its row.
static int update_frames(sqlite3* db, const frame_set* fs, mt_symcache* cache, bounds* b, char* err,
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
        size_t deferred = b->deferred;
        symbolize_one(&fs->rows[i], fs->mods, cache, b, &res);
        if (b->deferred != deferred)
            continue;
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

// The frames' names, meta 'symbolized' (or, when frames were deferred, meta
// 'symbols_deferred') and 'symbols_cached' in one savepoint: all of it or nothing.
static int write_names(sqlite3* db, const frame_set* fs, mt_symcache* cache, bounds* b, char* err,
                       size_t errlen) {
    if (sqlite3_exec(db, "SAVEPOINT mt_symbolize", NULL, NULL, NULL) != SQLITE_OK)
        return sql_fail(db, "starting transaction", err, errlen);
    int rc = update_frames(db, fs, cache, b, err, errlen);
    char sql[128];
    if (b->deferred)
        snprintf(sql, sizeof sql,
                 "INSERT OR REPLACE INTO meta(key, value) VALUES('symbols_deferred', %zu)",
                 b->deferred);
    else
        snprintf(sql, sizeof sql,
                 "INSERT OR REPLACE INTO meta(key, value) VALUES('symbolized', '1')");
    if (rc == 0 && sqlite3_exec(db, sql, NULL, NULL, NULL) != SQLITE_OK)
        rc = sql_fail(db, "writing meta", err, errlen);
    snprintf(sql, sizeof sql,
             "INSERT OR REPLACE INTO meta(key, value) VALUES('symbols_cached', %zu)", b->cached);
    if (rc == 0 && sqlite3_exec(db, sql, NULL, NULL, NULL) != SQLITE_OK)
        rc = sql_fail(db, "writing meta", err, errlen);
    if (rc == 0 && sqlite3_exec(db, "RELEASE mt_symbolize", NULL, NULL, NULL) != SQLITE_OK)
        rc = sql_fail(db, "committing", err, errlen);
    if (rc) {
        sqlite3_exec(db, "ROLLBACK TO mt_symbolize", NULL, NULL, NULL);
        sqlite3_exec(db, "RELEASE mt_symbolize", NULL, NULL, NULL);
    }
    return rc;
}

// Shadows the frame and meta tables with TEMP copies, which unqualified names resolve to
// first: the pass then writes its names there, in memory, leaving the file untouched.
static int shadow_tables(sqlite3* db, char* err, size_t errlen) {
    // The frame columns of the schema (memtrace/schema.h).
    static const char sql[] =
        "CREATE TEMP TABLE IF NOT EXISTS frame(id INTEGER PRIMARY KEY, mapping_id INTEGER,"
        " pc INTEGER NOT NULL, rel_pc INTEGER, function TEXT, file TEXT, line INTEGER,"
        " inlined TEXT, relevant INTEGER NOT NULL DEFAULT 1);"
        "CREATE TEMP TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value);"
        "DELETE FROM temp.frame; DELETE FROM temp.meta;"
        "INSERT INTO temp.frame SELECT id, mapping_id, pc, rel_pc, function, file, line,"
        " inlined, relevant FROM main.frame;"
        "INSERT INTO temp.meta SELECT key, value FROM main.meta;";
    if (sqlite3_exec(db, sql, NULL, NULL, NULL) != SQLITE_OK)
        return sql_fail(db, "copying frames to memory", err, errlen);
    return 0;
}

static int symbolize(sqlite3* db, unsigned flags, bounds* b, char* err, size_t errlen) {
    if (err && errlen)
        err[0] = 0;
    char dummy[8];
    if (!err) {
        err = dummy;
        errlen = sizeof dummy;
    }
    frame_set fs = {0};
    int rc = (flags & MT_SYMBOLIZE_IN_MEMORY) ? shadow_tables(db, err, errlen) : 0;
    if (rc == 0)
        rc = read_frames(db, flags, &fs, err, errlen);
    if (rc == 0) {
        mt_symcache* cache = fs.nrows ? mt_symcache_open() : NULL;
        rc = write_names(db, &fs, cache, b, err, errlen);
        mt_symcache_close(cache); // keeps what was learnt, even when this capture failed
    }
    for (size_t i = 0; i < fs.nmods; i++)
        mt_symbolize_frame_module_close(&fs.mods[i]);
    free(fs.mods);
    free(fs.rows);
    return rc ? rc : (int)(fs.nrows - b->deferred);
}

int mt_symbolize_capture(sqlite3* db, unsigned flags, char* err, size_t errlen) {
    bounds b = {0};
    return symbolize(db, flags, &b, err, errlen);
}

int mt_symbolize_capture_at_exit(sqlite3* db, int budget_ms, bool read_files, int* deferred,
                                 char* err, size_t errlen) {
    bounds b = {.on = true,
                .cache_only = !read_files,
                .deadline_ns = monotonic_ns() + (int64_t)budget_ms * 1000000};
    int rc = symbolize(db, 0, &b, err, errlen);
    if (deferred)
        *deferred = (int)b.deferred;
    return rc;
}
