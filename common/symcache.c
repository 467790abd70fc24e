// SPDX-License-Identifier: MIT
// The persistent symbol cache (see symcache.h): one SQLite file, one table.
#define _GNU_SOURCE
#include "memtrace/symcache.h"

#include "memtrace/vec.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

// Bump whenever the symbolizer would name a frame differently: old entries are then dropped.
#define CACHE_VERSION 3
#define CACHE_APP_ID 0x4d545343 // 'MTSC'
// Past this size the cache starts over (simpler than evicting, and rare).
#define CACHE_MAX_BYTES (256ll << 20)
#define BUSY_TIMEOUT_MS 200
// Longest values taken from the cache (longer ones are not what the symbolizer writes).
#define MAX_FUNCTION_BYTES (64 << 10)
#define MAX_FILE_BYTES 4096
#define MAX_INLINED_BYTES (1 << 20)

typedef struct pending {
    char* build_id;
    uint64_t rel_pc;
    mt_symcache_entry e;
} pending;

struct mt_symcache {
    sqlite3* db;
    sqlite3_stmt* get;
    sqlite3_stmt* vet; // prepared on the first inlined chain looked up
    pending* puts;
    size_t nputs, capputs;
};

static char* dup_or_null(const char* s) {
    return s ? strdup(s) : NULL;
}

void mt_symcache_entry_free(mt_symcache_entry* e) {
    free(e->function);
    free(e->file);
    free(e->inlined);
    memset(e, 0, sizeof *e);
}

bool mt_symcache_path(char* buf, size_t len) {
    const char* env = getenv("MEMTRACE_SYMBOL_CACHE");
    int n;
    if (env)
        n = *env && strcmp(env, "0") ? snprintf(buf, len, "%s", env) : -1;
    else if ((env = getenv("XDG_CACHE_HOME")) && *env == '/')
        n = snprintf(buf, len, "%s/memtrace/symbols.db", env);
    else if ((env = getenv("HOME")) && *env == '/')
        n = snprintf(buf, len, "%s/.cache/memtrace/symbols.db", env);
    else
        n = -1;
    return n > 0 && (size_t)n < len;
}

// mkdir -p of the directories above path (0700: it is the user's private cache), each made
// only in a directory of ours or root's: root with another user's HOME (su without '-',
// sudo -E) made that user's ~/.cache its own, mode 0700, taking it from all their programs.
static void make_parents(const char* path) {
    char dir[4096];
    if (snprintf(dir, sizeof dir, "%s", path) >= (int)sizeof dir)
        return;
    uid_t parent_owner = 0; // of "/"
    for (char* p = dir + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = 0;
        struct stat st;
        if (stat(dir, &st) == 0) {
            parent_owner = st.st_uid;
        } else {
            if (parent_owner != geteuid() && parent_owner != 0)
                return;
            if (mkdir(dir, 0700) != 0 && errno != EEXIST)
                return;
            parent_owner = geteuid();
        }
        *p = '/';
    }
}

static int64_t pragma_int(sqlite3* db, const char* sql) {
    sqlite3_stmt* st;
    int64_t v = -1;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW)
        v = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return v;
}

// Makes db an up-to-date cache; false for a file that is not ours (or unreadable).
static bool prepare_schema(sqlite3* db) {
    int64_t app = pragma_int(db, "PRAGMA application_id");
    int64_t version = pragma_int(db, "PRAGMA user_version");
    int64_t tables = pragma_int(db, "SELECT count(*) FROM sqlite_master");
    if (app < 0 || version < 0 || tables < 0)
        return false;
    if (tables > 0 && app != CACHE_APP_ID)
        return false; // somebody else's database at our path: leave it alone
    bool fresh =
        tables == 0 || version != CACHE_VERSION ||
        pragma_int(db, "PRAGMA page_count") * pragma_int(db, "PRAGMA page_size") > CACHE_MAX_BYTES;
    if (!fresh)
        return true;
    char sql[512];
    snprintf(sql, sizeof sql,
             "BEGIN IMMEDIATE;"
             "DROP TABLE IF EXISTS sym;"
             "CREATE TABLE sym(build_id TEXT NOT NULL, rel_pc INTEGER NOT NULL,"
             " function TEXT NOT NULL, file TEXT, line INTEGER, inlined TEXT,"
             " relevant INTEGER NOT NULL, dwarf INTEGER NOT NULL,"
             " PRIMARY KEY(build_id, rel_pc)) WITHOUT ROWID;"
             "PRAGMA application_id=%d; PRAGMA user_version=%d;"
             "COMMIT;",
             CACHE_APP_ID, CACHE_VERSION);
    if (sqlite3_exec(db, sql, NULL, NULL, NULL) != SQLITE_OK) {
        sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
        return false;
    }
    // VACUUM after starting over, so the file shrinks; failure only costs disk space.
    sqlite3_exec(db, "VACUUM", NULL, NULL, NULL);
    return true;
}

// Ours alone: owned by the effective user and not writable by group or others. A cache that
// someone else can write could make reports show any name and line it likes.
static bool private_to_us(const struct stat* st) {
    return st->st_uid == geteuid() && !(st->st_mode & (S_IWGRP | S_IWOTH));
}

// Checks the cache's directory and file on open descriptors (no race between a check and an
// open), creating a missing file 0600; a symlink at the file is refused. *file: the file
// that SQLite must then open.
static bool trusted_cache_file(const char* path, struct stat* file) {
    char dir[4096];
    const char* slash = strrchr(path, '/');
    const char* base = slash ? slash + 1 : path;
    size_t dirlen = slash ? (size_t)(slash - path) + (slash == path) : 0; // "/" stays "/"
    if (!*base || dirlen >= sizeof dir)
        return false;
    if (slash)
        snprintf(dir, sizeof dir, "%.*s", (int)dirlen, path);
    else
        strcpy(dir, ".");
    int dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dirfd < 0)
        return false;
    struct stat st;
    int fd = -1;
    // O_NONBLOCK: a FIFO planted at the path must not hang the traced program's exit.
    if (fstat(dirfd, &st) == 0 && private_to_us(&st))
        fd = openat(dirfd, base, O_RDONLY | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0600);
    bool ok = fd >= 0 && fstat(fd, file) == 0 && S_ISREG(file->st_mode) && private_to_us(file);
    if (fd >= 0)
        close(fd); // before SQLite opens it: closing a file drops the process's locks on it
    close(dirfd);
    return ok;
}

// SQLite opens by path: true when the path still names the file that was checked.
static bool is_file(const char* path, const struct stat* want) {
    struct stat st;
    return lstat(path, &st) == 0 && st.st_dev == want->st_dev && st.st_ino == want->st_ino;
}

mt_symcache* mt_symcache_open(void) {
    char path[4096];
    if (!mt_symcache_path(path, sizeof path))
        return NULL;
    make_parents(path);
    struct stat checked;
    if (!trusted_cache_file(path, &checked))
        return NULL;
    mt_symcache* c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    // The -wal and -shm files stay when the last process closes the cache: a short program
    // that only reads names would otherwise create and remove both (each file created costs
    // it a fraction of a millisecond).
    int persist_wal = 1;
    if (sqlite3_open_v2(path, &c->db, SQLITE_OPEN_READWRITE, NULL) != SQLITE_OK ||
        !is_file(path, &checked) || sqlite3_busy_timeout(c->db, BUSY_TIMEOUT_MS) != SQLITE_OK ||
        sqlite3_file_control(c->db, "main", SQLITE_FCNTL_PERSIST_WAL, &persist_wal) != SQLITE_OK ||
        // A cache: losing the last writes to a power failure is fine. WAL: the passes of
        // other processes read while one writes. The last to close empties the kept -wal
        // (journal_size_limit=0), so the next to open has no frames to recover from it.
        sqlite3_exec(c->db, "PRAGMA synchronous=OFF; PRAGMA journal_size_limit=0", NULL, NULL,
                     NULL) != SQLITE_OK ||
        !prepare_schema(c->db) ||
        sqlite3_exec(c->db, "PRAGMA journal_mode=WAL", NULL, NULL, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(c->db,
                           "SELECT function, file, line, inlined, relevant, dwarf"
                           " FROM sym WHERE build_id=?1 AND rel_pc=?2",
                           -1, &c->get, NULL) != SQLITE_OK ||
        // One read transaction for every lookup of the pass: a lock and a header read per
        // lookup cost more than the lookup.
        sqlite3_exec(c->db, "BEGIN", NULL, NULL, NULL) != SQLITE_OK) {
        sqlite3_finalize(c->get);
        sqlite3_close(c->db);
        free(c);
        return NULL;
    }
    return c;
}

// A text column of at most max bytes without a NUL inside (NULL allowed when nullable).
static bool text_ok(sqlite3_stmt* st, int col, int max, bool nullable) {
    int type = sqlite3_column_type(st, col);
    if (type == SQLITE_NULL)
        return nullable;
    if (type != SQLITE_TEXT)
        return false;
    const char* s = (const char*)sqlite3_column_text(st, col);
    int n = sqlite3_column_bytes(st, col);
    return s && n <= max && strlen(s) == (size_t)n;
}

static bool int_ok(sqlite3_stmt* st, int col, int64_t min, int64_t max, bool nullable) {
    int type = sqlite3_column_type(st, col);
    if (type == SQLITE_NULL)
        return nullable;
    int64_t v = sqlite3_column_int64(st, col);
    return type == SQLITE_INTEGER && v >= min && v <= max;
}

// An inlined chain as the symbolizer writes it: a JSON array of {function, file, line}.
// Prepared on first use: most processes look up no inlined frame, and this statement costs
// more to parse than the lookup.
static bool inlined_ok(mt_symcache* c, const char* json) {
    if (!c->vet &&
        sqlite3_prepare_v2(c->db,
                           "SELECT json_valid(?1) AND json_type(?1) = 'array' AND NOT EXISTS("
                           " SELECT 1 FROM json_each(?1) WHERE type IS NOT 'object'"
                           "  OR json_type(value, '$.function') IS NOT 'text'"
                           "  OR ifnull(json_type(value, '$.file'), '') NOT IN ('text', 'null')"
                           "  OR ifnull(json_type(value, '$.line'), '') NOT IN ('integer', 'null')"
                           "  OR json_extract(value, '$.line') < 0)",
                           -1, &c->vet, NULL) != SQLITE_OK)
        return false;
    sqlite3_bind_text(c->vet, 1, json, -1, SQLITE_STATIC);
    bool ok = sqlite3_step(c->vet) == SQLITE_ROW && int_ok(c->vet, 0, 1, 1, false);
    sqlite3_reset(c->vet);
    sqlite3_clear_bindings(c->vet);
    return ok;
}

// A row is used only when every value is what mt_symcache_put writes.
static bool row_ok(mt_symcache* c, sqlite3_stmt* st) {
    if (!(text_ok(st, 0, MAX_FUNCTION_BYTES, false) && sqlite3_column_bytes(st, 0) > 0 &&
          text_ok(st, 1, MAX_FILE_BYTES, true) && int_ok(st, 2, 0, INT_MAX, true) &&
          text_ok(st, 3, MAX_INLINED_BYTES, true) && int_ok(st, 4, 0, 1, false) &&
          int_ok(st, 5, 0, 1, false)))
        return false;
    const char* inlined = (const char*)sqlite3_column_text(st, 3);
    return !inlined || inlined_ok(c, inlined);
}

bool mt_symcache_get(mt_symcache* c, const char* build_id, uint64_t rel_pc,
                     mt_symcache_entry* out) {
    memset(out, 0, sizeof *out);
    if (!c)
        return false;
    sqlite3_bind_text(c->get, 1, build_id, -1, SQLITE_STATIC);
    sqlite3_bind_int64(c->get, 2, (int64_t)rel_pc);
    bool hit = false;
    if (sqlite3_step(c->get) == SQLITE_ROW && row_ok(c, c->get)) {
        out->function = dup_or_null((const char*)sqlite3_column_text(c->get, 0));
        out->file = dup_or_null((const char*)sqlite3_column_text(c->get, 1));
        out->line = sqlite3_column_int(c->get, 2);
        out->inlined = dup_or_null((const char*)sqlite3_column_text(c->get, 3));
        out->relevant = sqlite3_column_int(c->get, 4) != 0;
        out->from_dwarf = sqlite3_column_int(c->get, 5) != 0;
        hit = out->function != NULL;
        if (!hit)
            mt_symcache_entry_free(out);
    }
    sqlite3_reset(c->get);
    return hit;
}

void mt_symcache_put(mt_symcache* c, const char* build_id, uint64_t rel_pc,
                     const mt_symcache_entry* e) {
    if (!c || !e->function)
        return;
    if (MT_VEC_RESERVE(&c->puts, &c->capputs, c->nputs + 1))
        return;
    pending* p = &c->puts[c->nputs];
    p->build_id = strdup(build_id);
    p->rel_pc = rel_pc;
    p->e = (mt_symcache_entry){dup_or_null(e->function), dup_or_null(e->file), e->line,
                               dup_or_null(e->inlined),  e->relevant,          e->from_dwarf};
    if (!p->build_id || !p->e.function) {
        free(p->build_id);
        mt_symcache_entry_free(&p->e);
        return;
    }
    c->nputs++;
}

static void write_puts(mt_symcache* c) {
    sqlite3_stmt* ins = NULL;
    if (sqlite3_exec(c->db, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK)
        return; // busy past the timeout: these names are simply not kept this time
    if (sqlite3_prepare_v2(c->db, "INSERT OR REPLACE INTO sym VALUES(?1,?2,?3,?4,?5,?6,?7,?8)", -1,
                           &ins, NULL) == SQLITE_OK) {
        for (size_t i = 0; i < c->nputs; i++) {
            const pending* p = &c->puts[i];
            sqlite3_bind_text(ins, 1, p->build_id, -1, SQLITE_STATIC);
            sqlite3_bind_int64(ins, 2, (int64_t)p->rel_pc);
            sqlite3_bind_text(ins, 3, p->e.function, -1, SQLITE_STATIC);
            sqlite3_bind_text(ins, 4, p->e.file, -1, SQLITE_STATIC);
            if (p->e.line > 0)
                sqlite3_bind_int(ins, 5, p->e.line);
            else
                sqlite3_bind_null(ins, 5);
            sqlite3_bind_text(ins, 6, p->e.inlined, -1, SQLITE_STATIC);
            sqlite3_bind_int(ins, 7, p->e.relevant);
            sqlite3_bind_int(ins, 8, p->e.from_dwarf);
            if (sqlite3_step(ins) != SQLITE_DONE)
                break;
            sqlite3_reset(ins);
        }
    }
    sqlite3_finalize(ins);
    if (sqlite3_exec(c->db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK)
        sqlite3_exec(c->db, "ROLLBACK", NULL, NULL, NULL);
}

void mt_symcache_close(mt_symcache* c) {
    if (!c)
        return;
    sqlite3_finalize(c->get);
    sqlite3_finalize(c->vet);
    sqlite3_exec(c->db, "COMMIT", NULL, NULL, NULL); // ends the lookups' read transaction
    if (c->nputs)
        write_puts(c);
    for (size_t i = 0; i < c->nputs; i++) {
        free(c->puts[i].build_id);
        mt_symcache_entry_free(&c->puts[i].e);
    }
    free(c->puts);
    sqlite3_close(c->db);
    free(c);
}
