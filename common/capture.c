// SPDX-License-Identifier: MIT
// Capture reader: opens and validates a capture file. With capture_events.c (the event
// iterator) and capture_tables.c (the typed reads of the other tables), the only SQLite
// reader of memreport.
// Must not trust the file: it may come from a killed program, a truncated copy, or anyone.
#define _GNU_SOURCE
#include "memtrace/capture.h"

#include "capture_db.h"

#include "memtrace/codec.h"
#include "memtrace/input.h"
#include "memtrace/schema.h"
#include "memtrace/vec.h"

#include <errno.h>
#include <fcntl.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

// Files under this size get a full PRAGMA quick_check at open; larger ones are checked
// chunk by chunk as they are decoded, so opening a huge capture stays instant.
#define QUICK_CHECK_MAX_BYTES (64u << 20)

static uint32_t be32(const unsigned char* p) {
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

// One line in words for an SQLite failure; returns -EIO for trouble reading the disk or a
// lock held by another process (exit 3), -EPROTO for a damaged file (exit 2).
int mt_capture_db_sql_problem(sqlite3* db, const char* doing, char* err, size_t errlen) {
    int code = sqlite3_errcode(db) & 0xff;
    const char* msg = sqlite3_errmsg(db);
    switch (code) {
    case SQLITE_CORRUPT:
    case SQLITE_FORMAT:
    case SQLITE_RANGE:
    case SQLITE_MISMATCH:
    case SQLITE_ERROR: // e.g. "no such table": a table of the schema is missing or damaged
        snprintf(err, errlen, "corrupt capture: %s: the SQLite file is damaged (%s)", doing, msg);
        return -EPROTO;
    case SQLITE_NOTADB:
        snprintf(err, errlen, "not a memtrace capture: %s: the SQLite header is damaged", doing);
        return -EPROTO;
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
        snprintf(err, errlen,
                 "%s: the capture is locked by another process (is the traced program still "
                 "running?)",
                 doing);
        return -EIO;
    case SQLITE_NOMEM:
        snprintf(err, errlen, "%s: out of memory", doing);
        return -EIO;
    default:
        snprintf(err, errlen, "%s: I/O error (%s)", doing, msg);
        return -EIO;
    }
}

// True when path-wal exists: the capture was not finalized (the program was killed, or
// its disk filled) and its latest transactions are in the write-ahead log.
static bool has_wal(const char* path) {
    char wal[4096];
    struct stat st;
    return (size_t)snprintf(wal, sizeof wal, "%s-wal", path) < sizeof wal && stat(wal, &st) == 0 &&
           st.st_size > 0;
}

// Checks the SQLite header before SQLite sees the file: an empty or foreign file would
// otherwise be opened as a fresh, empty database.
static int check_header(const char* path, bool wal, char* err, size_t errlen) {
    int fd = mt_input_open(path, err, errlen);
    if (fd == -EISDIR)
        snprintf(err, errlen, "is a directory, not a capture");
    if (fd < 0)
        return fd;
    // SQLite reads a -wal or -journal beside the file too: a FIFO there would block it.
    static const char* const sibling[] = {"-wal", "-journal"};
    for (size_t i = 0; i < sizeof sibling / sizeof *sibling; i++) {
        char name[4096];
        if ((size_t)snprintf(name, sizeof name, "%s%s", path, sibling[i]) < sizeof name &&
            mt_input_special(name)) {
            close(fd);
            snprintf(err, errlen, "its %s file is not a regular file", sibling[i]);
            return -ENODEV;
        }
    }
    struct stat st;
    unsigned char hdr[100];
    ssize_t got = 0;
    if (fstat(fd, &st) != 0)
        st.st_size = 0;
    got = read(fd, hdr, sizeof hdr);
    close(fd);
    if (got < (ssize_t)sizeof hdr || memcmp(hdr, "SQLite format 3", 16) != 0) {
        snprintf(err, errlen, "not a memtrace capture (%s)",
                 got == 0 ? "empty file" : "not an SQLite database");
        return -EPROTO;
    }
    uint32_t page_size = (uint32_t)hdr[16] << 8 | hdr[17];
    if (page_size == 1)
        page_size = 65536;
    uint32_t pages = be32(hdr + 28);
    // The in-header size is valid only when the change counter matches version-valid-for.
    // With a write-ahead log the main file may be shorter: its newest pages are in the log.
    if (!wal && pages && be32(hdr + 24) == be32(hdr + 92) &&
        (uint64_t)st.st_size < (uint64_t)pages * page_size) {
        snprintf(err, errlen,
                 "truncated capture file (%lld of the %llu bytes its SQLite header declares)",
                 (long long)st.st_size, (unsigned long long)pages * page_size);
        return -EPROTO;
    }
    return 0;
}

static int query_int(sqlite3* db, const char* sql, int64_t* out) {
    sqlite3_stmt* st;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
        return -EPROTO;
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW)
        *out = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return rc == SQLITE_ROW ? 0 : -EPROTO;
}

// SQLite's own check of the file's structure (pages, B-trees, indexes; not BLOB contents).
static int quick_check(sqlite3* db, char* err, size_t errlen) {
    sqlite3_stmt* st;
    if (sqlite3_prepare_v2(db, "PRAGMA quick_check(1)", -1, &st, NULL) != SQLITE_OK ||
        sqlite3_step(st) != SQLITE_ROW) {
        int rc = mt_capture_db_sql_problem(db, "checking its structure", err, errlen);
        sqlite3_finalize(st);
        return rc;
    }
    const char* res = (const char*)sqlite3_column_text(st, 0);
    int rc = 0;
    if (!res || strcmp(res, "ok") != 0) {
        // The report starts with a "*** in database main ***" line; the problem follows.
        const char* nl = res ? strchr(res, '\n') : NULL;
        const char* problem = nl ? nl + 1 : res ? res : "no result";
        snprintf(err, errlen, "corrupt capture: the SQLite file is damaged (quick_check: %.*s)",
                 (int)strcspn(problem, "\n"), problem);
        rc = -EPROTO;
    }
    sqlite3_finalize(st);
    return rc;
}

// A chunk whose heap column is damaged would never be read (readers ask for one heap at a
// time): its checksum could not catch that. Reads the (heap, seq_first) index only.
static int check_chunk_heaps(sqlite3* db, char* err, size_t errlen) {
    sqlite3_stmt* st;
    if (sqlite3_prepare_v2(db,
                           "SELECT id, heap FROM event_chunk"
                           " WHERE heap NOT IN (SELECT id FROM heap) LIMIT 1",
                           -1, &st, NULL) != SQLITE_OK)
        return mt_capture_db_sql_problem(db, "reading its event chunks", err, errlen);
    int step = sqlite3_step(st), rc = 0;
    if (step == SQLITE_ROW) {
        snprintf(err, errlen,
                 "event chunk %lld is corrupt (its heap %lld is not one of the capture's heaps)",
                 (long long)sqlite3_column_int64(st, 0), (long long)sqlite3_column_int64(st, 1));
        rc = -EPROTO;
    } else if (step != SQLITE_DONE) {
        rc = mt_capture_db_sql_problem(db, "reading its event chunks", err, errlen);
    }
    sqlite3_finalize(st);
    return rc;
}

// Callsites form a tree (parent_id 0 is the root): a cycle would make every stack walk
// repeat frames, so it is an error. Each walk up stops at the root, at a node an earlier
// walk finished, or at a node of its own path (the cycle). Linear in the callsites.
static int check_callsites(sqlite3* db, char* err, size_t errlen) {
    bool chunks;
    if (mt_capture_db_has_callsite_chunks(db, &chunks))
        return mt_capture_db_sql_problem(db, "reading its callsites", err, errlen);
    mt_callsite_rec* all = NULL;
    size_t nall = 0;
    int64_t n = 0;
    if (chunks) {
        int rc = mt_capture_db_callsites(db, &all, &nall, err, errlen);
        if (rc)
            return rc;
        n = (int64_t)nall;
    } else if (query_int(db, "SELECT count(*) FROM callsite", &n)) {
        return mt_capture_db_sql_problem(db, "reading its callsites", err, errlen);
    }
    if (n == 0) {
        free(all);
        return 0;
    }
    int64_t* id = malloc((size_t)n * sizeof *id);
    int64_t* parent = malloc((size_t)n * sizeof *parent);
    uint32_t* walk = calloc((size_t)n, sizeof *walk); // 1 + index of the walk that reached it
    sqlite3_stmt* st = NULL;
    int rc = 0;
    if (!id || !parent || !walk) {
        snprintf(err, errlen, "out of memory");
        rc = -ENOMEM;
        goto out;
    }
    int64_t rows = 0, step;
    if (chunks) {
        for (; rows < n; rows++) {
            id[rows] = all[rows].id;
            parent[rows] = all[rows].parent_id;
        }
    } else if (sqlite3_prepare_v2(db, "SELECT id, parent_id FROM callsite ORDER BY id", -1, &st,
                                  NULL) != SQLITE_OK) {
        rc = mt_capture_db_sql_problem(db, "reading its callsites", err, errlen);
        goto out;
    }
    while (st && rows < n && (step = sqlite3_step(st)) == SQLITE_ROW) {
        id[rows] = sqlite3_column_int64(st, 0);
        parent[rows++] = sqlite3_column_int64(st, 1);
    }
    n = rows; // fewer rows than counted: the table changed; check those read
    for (int64_t start = 0; start < n && rc == 0; start++) {
        for (int64_t i = start; !walk[i];) {
            walk[i] = (uint32_t)start + 1;
            int64_t lo = 0, hi = n; // binary search for the parent's row (ids are sorted)
            while (lo < hi) {
                int64_t mid = lo + (hi - lo) / 2;
                if (id[mid] < parent[i])
                    lo = mid + 1;
                else
                    hi = mid;
            }
            if (parent[i] == 0 || lo == n || id[lo] != parent[i])
                break; // the root, or a parent that does not exist (shown as a cut stack)
            if (walk[lo] == (uint32_t)start + 1) {
                snprintf(err, errlen,
                         "corrupt capture: callsite %lld is its own ancestor (the callsite "
                         "table has a cycle)",
                         (long long)id[lo]);
                rc = -EPROTO;
                break;
            }
            i = lo;
        }
    }
out:
    sqlite3_finalize(st);
    free(all);
    free(id);
    free(parent);
    free(walk);
    return rc;
}

static int validate(mt_capture* cap, off_t size, char* err, size_t errlen) {
    sqlite3* db = cap->db;
    int64_t app_id = 0, version = 0;
    if (query_int(db, "PRAGMA application_id", &app_id) ||
        query_int(db, "PRAGMA user_version", &version))
        return mt_capture_db_sql_problem(db, "reading its header", err, errlen);
    if (app_id != MEMTRACE_APPLICATION_ID) {
        snprintf(err, errlen, "not a memtrace capture (an SQLite database of another kind)");
        return -EPROTO;
    }
    if (version > MEMTRACE_SCHEMA_VERSION) {
        snprintf(err, errlen,
                 "capture schema version %lld is newer than this memreport supports (%d); "
                 "use a newer memreport",
                 (long long)version, MEMTRACE_SCHEMA_VERSION);
        return -ENOTSUP;
    }
    if (version < MEMTRACE_SCHEMA_VERSION_OLDEST) {
        snprintf(err, errlen, "corrupt capture: schema version %lld does not exist",
                 (long long)version);
        return -EPROTO;
    }
    cap->version = version;
    int64_t n;
    if (query_int(db, "SELECT count(*) FROM meta", &n) ||
        query_int(db, "SELECT count(*) FROM heap", &n))
        return mt_capture_db_sql_problem(db, "reading its tables", err, errlen);
    if (size <= (off_t)QUICK_CHECK_MAX_BYTES) {
        int rc = quick_check(db, err, errlen);
        if (rc)
            return rc;
    }
    int rc = check_chunk_heaps(db, err, errlen);
    return rc ? rc : check_callsites(db, err, errlen);
}

// Opens a capture left unfinished (a -wal beside it, or its header still in WAL mode: the
// program was killed or its disk filled) without rewriting what is there: the WAL index
// lives in this process's memory (exclusive locking mode: no -shm file to create, which a
// full disk would refuse) and closing never checkpoints, so the -wal stays and the main
// file is never rewritten. What reports cache (symbols) is appended to the -wal as
// ordinary transactions, atomic like the tracer's own; on a full disk they fail and leave
// the capture as it was. Needs write access only for the lock that exclusive mode takes.
static int open_unfinished(mt_capture* cap, char* err, size_t errlen) {
    if (sqlite3_open_v2(cap->path, &cap->db, SQLITE_OPEN_READWRITE, NULL) != SQLITE_OK) {
        snprintf(err, errlen,
                 "cannot open: %s (an unfinished capture is read with its -wal file, which "
                 "needs write access to the capture: copy both to a writable place)",
                 sqlite3_errmsg(cap->db));
        return -EIO;
    }
    // Neither at close nor after a report's own commit (SQLite checkpoints automatically
    // once the log passes 1000 pages).
    sqlite3_db_config(cap->db, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, NULL);
    sqlite3_wal_autocheckpoint(cap->db, 0);
    if (sqlite3_exec(cap->db, "PRAGMA locking_mode=EXCLUSIVE", NULL, NULL, NULL) != SQLITE_OK)
        return mt_capture_db_sql_problem(cap->db, "opening its write-ahead log", err, errlen);
    return 0;
}

// A capture file may be crafted: its views and triggers run with SQLite's defences on
// (no writable schema, no shadow-table writes) and may not call what the application
// registers.
static void distrust_schema(sqlite3* db) {
    sqlite3_db_config(db, SQLITE_DBCONFIG_DEFENSIVE, 1, NULL);
    sqlite3_db_config(db, SQLITE_DBCONFIG_TRUSTED_SCHEMA, 0, NULL);
}

static bool header_in_wal_mode(const char* path) {
    unsigned char hdr[20];
    char err[128];
    int fd = mt_input_open(path, err, sizeof err);
    bool wal = fd >= 0 && read(fd, hdr, sizeof hdr) == (ssize_t)sizeof hdr && hdr[18] == 2;
    if (fd >= 0)
        close(fd);
    return wal;
}

// True when another open file holds a lock on the capture: the tracer (an open-file-
// description lock, held as long as it records) or another memreport reading it.
static bool locked_elsewhere(const char* path) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return false;
    struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET};
    bool locked = fcntl(fd, F_OFD_GETLK, &fl) == 0 && fl.l_type != F_UNLCK;
    close(fd);
    return locked;
}

int mt_capture_open(const char* path, mt_capture** out, char* err, size_t errlen) {
    *out = NULL;
    bool wal = has_wal(path);
    int rc = check_header(path, wal, err, errlen);
    if (rc)
        return rc;
    struct stat st;
    if (stat(path, &st) != 0) {
        snprintf(err, errlen, "cannot open: %s", strerror(errno));
        return -errno;
    }
    mt_capture* cap = calloc(1, sizeof *cap);
    if (!cap || !(cap->path = strdup(path))) {
        free(cap);
        snprintf(err, errlen, "out of memory");
        return -ENOMEM;
    }
    if (wal || header_in_wal_mode(path)) {
        // Asked of the kernel first: SQLite would wait for the lock its busy timeout long.
        if (locked_elsewhere(path)) {
            snprintf(err, errlen,
                     "the capture is locked by another process (is the traced program still "
                     "running? memreport live follows a running capture)");
            mt_capture_close(cap);
            return -EIO;
        }
        cap->unfinished = true;
        rc = open_unfinished(cap, err, errlen);
        if (rc) {
            mt_capture_close(cap);
            return rc;
        }
    } else {
        // A finished capture: read-write so derived tables can be cached; read-only for
        // files we may not write.
        int src = sqlite3_open_v2(path, &cap->db, SQLITE_OPEN_READWRITE, NULL);
        if (src != SQLITE_OK) {
            sqlite3_close(cap->db);
            src = sqlite3_open_v2(path, &cap->db, SQLITE_OPEN_READONLY, NULL);
        }
        if (src != SQLITE_OK) {
            snprintf(err, errlen, "cannot open: %s", sqlite3_errmsg(cap->db));
            mt_capture_close(cap);
            return -EIO;
        }
    }
    sqlite3_busy_timeout(cap->db, 2000);
    distrust_schema(cap->db);
    rc = validate(cap, st.st_size, err, errlen);
    if (rc) {
        mt_capture_close(cap);
        return rc;
    }
    *out = cap;
    return 0;
}

// What a running tracer changes in the files when it checkpoints or restarts its -wal: the
// main file's size and time (only a checkpoint writes it) and the -wal's header (its salt
// and checkpoint count change when the log restarts). Appends to the -wal change neither.
static void live_stamp(const char* path, char* out, size_t outlen) {
    struct stat st = {0};
    unsigned char hdr[32] = {0};
    char wal[4096];
    stat(path, &st);
    if ((size_t)snprintf(wal, sizeof wal, "%s-wal", path) < sizeof wal) {
        char err[128];
        int fd = mt_input_open(wal, err, sizeof err);
        if (fd >= 0) {
            if (read(fd, hdr, sizeof hdr) != (ssize_t)sizeof hdr)
                memset(hdr, 0, sizeof hdr);
            close(fd);
        }
    }
    uint32_t salt1 = be32(hdr + 16), salt2 = be32(hdr + 20), ckpt = be32(hdr + 12);
    snprintf(out, outlen, "%llu:%lld:%lld.%ld:%u:%u:%u", (unsigned long long)st.st_ino,
             (long long)st.st_size, (long long)st.st_mtim.tv_sec, st.st_mtim.tv_nsec, salt1, salt2,
             ckpt);
}

int mt_capture_open_live(const char* path, mt_capture** out, char* err, size_t errlen) {
    *out = NULL;
    int rc = check_header(path, true, err, errlen);
    if (rc)
        return rc;
    mt_capture* cap = calloc(1, sizeof *cap);
    if (!cap || !(cap->path = strdup(path))) {
        free(cap);
        snprintf(err, errlen, "out of memory");
        return -ENOMEM;
    }
    cap->live = true;
    live_stamp(path, cap->live_stamp, sizeof cap->live_stamp);
    // Read-only: SQLite opens the file and its -wal O_RDONLY, so nothing can be written,
    // checkpointed or removed. "unix-none": no file locks (the tracer keeps an exclusive
    // one for its whole run). Exclusive locking mode: the -wal is indexed in this
    // process's memory at the first read (no -shm) and never re-read: one snapshot.
    if (sqlite3_open_v2(path, &cap->db, SQLITE_OPEN_READONLY, "unix-none") != SQLITE_OK) {
        snprintf(err, errlen, "cannot open: %s", sqlite3_errmsg(cap->db));
        mt_capture_close(cap);
        return -EIO;
    }
    sqlite3_db_config(cap->db, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, NULL);
    distrust_schema(cap->db);
    if (sqlite3_exec(cap->db, "PRAGMA locking_mode=EXCLUSIVE", NULL, NULL, NULL) != SQLITE_OK) {
        rc = mt_capture_db_sql_problem(cap->db, "opening its write-ahead log", err, errlen);
        mt_capture_close(cap);
        return rc;
    }
    // No quick_check: it would read the whole file at every refresh (chunks are still
    // checked one by one as they are decoded).
    rc = validate(cap, (off_t)QUICK_CHECK_MAX_BYTES + 1, err, errlen);
    if (rc) {
        mt_capture_close(cap);
        return rc;
    }
    *out = cap;
    return 0;
}

int mt_capture_open_reader(mt_capture* cap, mt_capture** out) {
    *out = NULL;
    if (cap->live || cap->unfinished)
        return -ENOTSUP;
    mt_capture* r = calloc(1, sizeof *r);
    if (!r || !(r->path = strdup(cap->path))) {
        free(r);
        return -ENOMEM;
    }
    r->version = cap->version;
    if (sqlite3_open_v2(r->path, &r->db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK) {
        mt_capture_close(r);
        return -EIO;
    }
    sqlite3_busy_timeout(r->db, 2000);
    distrust_schema(r->db);
    *out = r;
    return 0;
}

bool mt_capture_is_live(const mt_capture* cap) {
    return cap->live;
}

bool mt_capture_live_changed(mt_capture* cap) {
    char now[sizeof cap->live_stamp];
    live_stamp(cap->path, now, sizeof now);
    return strcmp(now, cap->live_stamp) != 0;
}

void mt_capture_close(mt_capture* cap) {
    if (!cap)
        return;
    sqlite3_close(cap->db);
    free(cap->path);
    free(cap->skipped);
    free(cap);
}

sqlite3* mt_capture_db_sqlite(mt_capture* cap) {
    return cap->db;
}

const char* mt_capture_path(const mt_capture* cap) {
    return cap->path;
}

int mt_capture_threads(mt_capture* cap, mt_thread_fn fn, void* ud) {
    sqlite3_stmt* st;
    if (sqlite3_prepare_v2(cap->db, "SELECT tid, name FROM thread", -1, &st, NULL) != SQLITE_OK)
        return -EIO;
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW)
        if (sqlite3_column_text(st, 1))
            fn(ud, sqlite3_column_int64(st, 0), (const char*)sqlite3_column_text(st, 1));
    sqlite3_finalize(st);
    return rc == SQLITE_DONE ? 0 : -EIO;
}

char* mt_capture_meta_text(mt_capture* cap, const char* key) {
    sqlite3_stmt* st;
    char* v = NULL;
    if (sqlite3_prepare_v2(cap->db, "SELECT value FROM meta WHERE key=?1", -1, &st, NULL) !=
        SQLITE_OK)
        return NULL;
    sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
    if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL)
        v = strdup((const char*)sqlite3_column_text(st, 0));
    sqlite3_finalize(st);
    return v;
}

int64_t mt_capture_meta_int(mt_capture* cap, const char* key, int64_t fallback) {
    char* v = mt_capture_meta_text(cap, key);
    if (!v)
        return fallback;
    char* end;
    long long n = strtoll(v, &end, 10);
    int64_t r = (*v && !*end) ? (int64_t)n : fallback;
    free(v);
    return r;
}

bool mt_capture_truncated(mt_capture* cap) {
    char* s = mt_capture_meta_text(cap, "capture_status");
    bool truncated = !s || strcmp(s, "complete") != 0;
    free(s);
    return truncated;
}
