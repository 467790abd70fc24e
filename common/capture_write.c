// SPDX-License-Identifier: MIT
// Capture writer: creates a capture file with the schema and appends chunks, counters and
// meta rows through prepared statements. Used by the tracer's writer thread and by
// memreport import. Allocates through SQLite; never call it from inside a malloc hook.
#define _GNU_SOURCE
#include "capture_template.h" // generated: capture_template[], the empty capture

#include "memtrace/capture.h"
#include "memtrace/codec.h"
#include "memtrace/schema.h"
#include "memtrace/symbolize.h"
#include "memtrace/vec.h"

#include <errno.h>
#include <fcntl.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

// Rows written by the thousand (counters, chunks) or on every commit (stacks, modules,
// threads, call counts, marks) keep their statement; the second group is prepared on first use.
#define COUNTER_ROWS 128 // points per multi-row counter INSERT

struct mt_capture_writer {
    sqlite3* db;
    sqlite3_stmt* chunk;
    sqlite3_stmt* counter;
    sqlite3_stmt* meta;
    sqlite3_stmt *counters, *frame, *callsite, *mapping, *thread, *call_count, *mark, *mark_end,
        *leak;
    mt_chunk_coder* coder;
    int codec; // of the chunks written: the schema's (mt_capture_writer_set_codec)
    // Schema 6 on: callsites gathered here and written as one callsite_chunk row at the
    // commit (or when full), in the transaction of the events that name them.
    bool callsite_rows; // an older schema: one row each in table callsite
    sqlite3_stmt* callsite_chunk;
    mt_callsite_rec* sites;
    size_t nsites, capsites;
    uint8_t* site_blob;
    size_t capblob;
};

static int exec(sqlite3* db, const char* sql) {
    return sqlite3_exec(db, sql, NULL, NULL, NULL) == SQLITE_OK ? 0 : -EIO;
}

static int step_reset(sqlite3_stmt* st);
static sqlite3_stmt* prepared(mt_capture_writer* w, sqlite3_stmt** st, const char* sql);

void mt_capture_remove_sidecars(const char* path) {
    static const char* const suffix[] = {"-wal", "-shm", "-journal"};
    size_t n = strlen(path);
    for (size_t i = 0; i < sizeof suffix / sizeof *suffix; i++) {
        char* p = malloc(n + 10);
        if (!p)
            return;
        memcpy(p, path, n);
        strcpy(p + n, suffix[i]);
        unlink(p);
        free(p);
    }
}

// The capture starts as a copy of the empty one built with the library (capture_schema.h):
// parsing and running the schema's CREATE statements was most of a short program's capture
// creation. The copy is in WAL mode with its schema, event kinds and 'recording' status.
static int write_template(int fd) {
    const unsigned char* p = capture_template;
    size_t left = sizeof capture_template;
    while (left > 0) {
        ssize_t n = write(fd, p, left);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return n < 0 ? -errno : -EIO;
        p += n;
        left -= (size_t)n;
    }
    return 0;
}

// Per connection: WAL without a -shm (EXCLUSIVE, before the first read opens the WAL), no
// fsync.
static int open_settings(sqlite3* db) {
    return exec(db, "PRAGMA locking_mode=EXCLUSIVE; PRAGMA synchronous=OFF;");
}

// Opens the capture at path, made and filled up to now by the caller, through the VFS named
// (NULL: SQLite's default), with the writer's statements prepared.
static int open_existing(const char* path, const char* vfs, mt_capture_writer* w, char* err,
                         size_t errlen) {
    w->codec = mt_codec_of_schema(MEMTRACE_SCHEMA_VERSION);
    if (!(w->coder = mt_codec_chunk_coder_new())) {
        snprintf(err, errlen, "out of memory");
        free(w);
        return -ENOMEM;
    }
    if (sqlite3_open_v2(path, &w->db, SQLITE_OPEN_READWRITE, vfs) != SQLITE_OK ||
        open_settings(w->db) != 0 ||
        sqlite3_prepare_v2(w->db,
                           "INSERT INTO event_chunk(heap, seq_first, seq_last, ts_first, ts_last,"
                           " count, codec, data) VALUES(?1,?2,?3,?4,?5,?6,?7,?8)",
                           -1, &w->chunk, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(w->db, "INSERT INTO counter(track, ts, value) VALUES(?1,?2,?3)", -1,
                           &w->counter, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(w->db, "INSERT OR REPLACE INTO meta(key, value) VALUES(?1,?2)", -1,
                           &w->meta, NULL) != SQLITE_OK) {
        snprintf(err, errlen, "cannot open capture: %s",
                 w->db ? sqlite3_errmsg(w->db) : "out of memory");
        mt_capture_writer_abandon(w);
        return -EIO;
    }
    return 0;
}

int mt_capture_writer_open(const char* path, mt_capture_writer** out, char* err, size_t errlen) {
    *out = NULL;
    mt_capture_writer* w = calloc(1, sizeof *w);
    if (!w) {
        snprintf(err, errlen, "out of memory");
        return -ENOMEM;
    }
    // Captures hold command lines, paths and the address-space layout: private (0600), and
    // never written through a symlink. (The tracer has created the file itself, exclusively.)
    // Emptied only if it is not: ext4 writes back at close a file that an O_TRUNC found
    // (auto_da_alloc), on the tracer's thread at every process's start.
    int fd = open(path, O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
    struct stat st;
    int wrc = fd < 0                                    ? -errno
              : fstat(fd, &st) != 0                     ? -errno
              : st.st_size > 0 && ftruncate(fd, 0) != 0 ? -errno
                                                        : write_template(fd);
    if (fd >= 0 && close(fd) != 0 && wrc == 0)
        wrc = -errno;
    if (wrc != 0) {
        snprintf(err, errlen, "cannot create: %s", strerror(-wrc));
        if (fd >= 0)
            unlink(path);
        free(w);
        return -EIO;
    }
    mt_capture_remove_sidecars(path);
    int rc = open_existing(path, NULL, w, err, errlen);
    if (rc != 0) {
        unlink(path);
        mt_capture_remove_sidecars(path);
        return rc;
    }
    *out = w;
    return 0;
}

int mt_capture_writer_reopen(const char* path, mt_capture_writer** out, char* err, size_t errlen) {
    *out = NULL;
    mt_capture_writer* w = calloc(1, sizeof *w);
    if (!w) {
        snprintf(err, errlen, "out of memory");
        return -ENOMEM;
    }
    // "unix-none" takes no lock and shares no state with the connection left behind, whose
    // record of the file says it holds it exclusively. EXCLUSIVE locking mode (open_settings)
    // keeps the WAL's index in this connection's memory, as SQLite requires without locks.
    int rc = open_existing(path, "unix-none", w, err, errlen);
    if (rc == 0)
        *out = w;
    return rc;
}

bool mt_capture_writer_sqlite_idle(void) {
    static const int statics[] = {
        SQLITE_MUTEX_STATIC_MAIN, SQLITE_MUTEX_STATIC_MEM,  SQLITE_MUTEX_STATIC_OPEN,
        SQLITE_MUTEX_STATIC_PRNG, SQLITE_MUTEX_STATIC_LRU,  SQLITE_MUTEX_STATIC_PMEM,
        SQLITE_MUTEX_STATIC_APP1, SQLITE_MUTEX_STATIC_APP2, SQLITE_MUTEX_STATIC_APP3,
        SQLITE_MUTEX_STATIC_VFS1, SQLITE_MUTEX_STATIC_VFS2, SQLITE_MUTEX_STATIC_VFS3};
    for (size_t i = 0; i < sizeof statics / sizeof *statics; i++) {
        sqlite3_mutex* m = sqlite3_mutex_alloc(statics[i]);
        if (!m)
            continue; // no mutexes in this build
        if (sqlite3_mutex_try(m) != SQLITE_OK)
            return false;
        sqlite3_mutex_leave(m);
    }
    return true;
}

sqlite3* mt_capture_writer_db(mt_capture_writer* w) {
    return w->db;
}

int mt_capture_writer_no_journal(mt_capture_writer* w) {
    return exec(w->db, "PRAGMA journal_mode=OFF");
}

const char* mt_capture_writer_error(mt_capture_writer* w) {
    return sqlite3_errmsg(w->db);
}

int mt_capture_writer_begin(mt_capture_writer* w) {
    return exec(w->db, "BEGIN");
}

// The callsites gathered since the last flush, as one callsite_chunk row.
static int flush_callsites(mt_capture_writer* w) {
    if (w->nsites == 0)
        return 0;
    size_t bound = mt_capture_callsite_chunk_bound(w->nsites);
    if (bound > w->capblob) {
        uint8_t* p = realloc(w->site_blob, bound);
        if (!p)
            return -ENOMEM;
        w->site_blob = p;
        w->capblob = bound;
    }
    size_t len = mt_capture_callsite_chunk_encode(w->sites, w->nsites, w->site_blob);
    if (len == 0)
        return -ENOMEM;
    sqlite3_stmt* st =
        prepared(w, &w->callsite_chunk, "INSERT INTO callsite_chunk(count, data) VALUES(?1,?2)");
    if (!st)
        return -EIO;
    sqlite3_bind_int64(st, 1, (int64_t)w->nsites);
    sqlite3_bind_blob(st, 2, w->site_blob, (int)len, SQLITE_STATIC);
    int rc = step_reset(st);
    if (rc == 0)
        w->nsites = 0;
    return rc;
}

int mt_capture_writer_commit(mt_capture_writer* w) {
    // Not without the callsites its events name.
    int rc = flush_callsites(w);
    return rc ? rc : exec(w->db, "COMMIT");
}

static int step_reset(sqlite3_stmt* st) {
    int rc = sqlite3_step(st);
    sqlite3_reset(st);
    sqlite3_clear_bindings(st);
    return rc == SQLITE_DONE ? 0 : -EIO;
}

int mt_capture_writer_meta_text(mt_capture_writer* w, const char* key, const char* value) {
    sqlite3_bind_text(w->meta, 1, key, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(w->meta, 2, value, -1, SQLITE_TRANSIENT);
    return step_reset(w->meta);
}

int mt_capture_writer_meta_int(mt_capture_writer* w, const char* key, int64_t value) {
    sqlite3_bind_text(w->meta, 1, key, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(w->meta, 2, value);
    return step_reset(w->meta);
}

int mt_capture_writer_meta_get_int(mt_capture_writer* w, const char* key, int64_t* value) {
    sqlite3_stmt* st;
    if (sqlite3_prepare_v2(w->db, "SELECT value FROM meta WHERE key = ?1", -1, &st, NULL) !=
        SQLITE_OK)
        return -EIO;
    sqlite3_bind_text(st, 1, key, -1, SQLITE_TRANSIENT);
    int rc = sqlite3_step(st);
    *value = rc == SQLITE_ROW ? sqlite3_column_int64(st, 0) : 0;
    sqlite3_finalize(st);
    return rc == SQLITE_ROW ? 0 : rc == SQLITE_DONE ? 1 : -EIO;
}

int mt_capture_writer_heap(mt_capture_writer* w, int id, const char* name, const char* kind,
                           const char* time_unit) {
    sqlite3_stmt* st;
    if (sqlite3_prepare_v2(w->db, "INSERT OR REPLACE INTO heap VALUES(?1,?2,?3,?4)", -1, &st,
                           NULL) != SQLITE_OK)
        return -EIO;
    sqlite3_bind_int(st, 1, id);
    sqlite3_bind_text(st, 2, name, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 3, kind, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 4, time_unit, -1, SQLITE_TRANSIENT);
    int rc = sqlite3_step(st) == SQLITE_DONE ? 0 : -EIO;
    sqlite3_finalize(st);
    return rc;
}

int mt_capture_writer_counter_track(mt_capture_writer* w, int id, int heap, const char* name,
                                    const char* unit) {
    sqlite3_stmt* st;
    if (sqlite3_prepare_v2(w->db, "INSERT OR REPLACE INTO counter_track VALUES(?1,?2,?3,?4)", -1,
                           &st, NULL) != SQLITE_OK)
        return -EIO;
    sqlite3_bind_int(st, 1, id);
    sqlite3_bind_int(st, 2, heap);
    sqlite3_bind_text(st, 3, name, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 4, unit, -1, SQLITE_TRANSIENT);
    int rc = sqlite3_step(st) == SQLITE_DONE ? 0 : -EIO;
    sqlite3_finalize(st);
    return rc;
}

int mt_capture_writer_counter(mt_capture_writer* w, int track, int64_t ts, int64_t value) {
    sqlite3_bind_int(w->counter, 1, track);
    sqlite3_bind_int64(w->counter, 2, ts);
    sqlite3_bind_int64(w->counter, 3, value);
    return step_reset(w->counter);
}

// The statement *st, prepared on first use.
static sqlite3_stmt* prepared(mt_capture_writer* w, sqlite3_stmt** st, const char* sql) {
    if (!*st && sqlite3_prepare_v2(w->db, sql, -1, st, NULL) != SQLITE_OK)
        *st = NULL;
    return *st;
}

static void bind_text_or_null(sqlite3_stmt* st, int i, const char* s) {
    if (s && s[0])
        sqlite3_bind_text(st, i, s, -1, SQLITE_TRANSIENT);
    else
        sqlite3_bind_null(st, i);
}

int mt_capture_writer_counters(mt_capture_writer* w, int track, const mt_counter_point* p,
                               size_t n) {
    size_t i = 0;
    if (n >= COUNTER_ROWS) {
        char sql[COUNTER_ROWS * 8 + 64];
        size_t k =
            (size_t)snprintf(sql, sizeof sql, "INSERT INTO counter(track, ts, value) VALUES");
        for (int r = 0; r < COUNTER_ROWS; r++)
            k += (size_t)snprintf(sql + k, sizeof sql - k, "%s(?,?,?)", r ? "," : "");
        sqlite3_stmt* st = prepared(w, &w->counters, sql);
        if (!st)
            return -EIO;
        for (; i + COUNTER_ROWS <= n; i += COUNTER_ROWS) {
            for (int r = 0; r < COUNTER_ROWS; r++) {
                sqlite3_bind_int(st, 3 * r + 1, track);
                sqlite3_bind_int64(st, 3 * r + 2, p[i + (size_t)r].ts);
                sqlite3_bind_int64(st, 3 * r + 3, p[i + (size_t)r].value);
            }
            if (step_reset(st))
                return -EIO;
        }
    }
    for (; i < n; i++)
        if (mt_capture_writer_counter(w, track, p[i].ts, p[i].value))
            return -EIO;
    return 0;
}

int mt_capture_writer_frame(mt_capture_writer* w, const mt_frame_rec* f) {
    sqlite3_stmt* st = prepared(w, &w->frame,
                                "INSERT OR REPLACE INTO frame(id, mapping_id, pc, rel_pc, function,"
                                " file, line) VALUES(?1,?2,?3,?4,?5,?6,?7)");
    if (!st)
        return -EIO;
    sqlite3_bind_int64(st, 1, f->id);
    if (f->mapping_id)
        sqlite3_bind_int64(st, 2, f->mapping_id);
    sqlite3_bind_int64(st, 3, (int64_t)f->pc);
    if (f->has_rel_pc)
        sqlite3_bind_int64(st, 4, (int64_t)f->rel_pc);
    if (f->function)
        sqlite3_bind_text(st, 5, f->function, -1, SQLITE_TRANSIENT);
    if (f->file)
        sqlite3_bind_text(st, 6, f->file, -1, SQLITE_TRANSIENT);
    if (f->line > 0)
        sqlite3_bind_int(st, 7, f->line);
    return step_reset(st);
}

int mt_capture_writer_callsite(mt_capture_writer* w, const mt_callsite_rec* c) {
    if (!w->callsite_rows) {
        if (w->nsites == MT_CALLSITE_CHUNK_MAX && flush_callsites(w))
            return -EIO;
        if (mt_vec_grow(&w->sites, &w->capsites, w->nsites + 1, sizeof *w->sites))
            return -ENOMEM;
        w->sites[w->nsites++] = *c;
        return 0;
    }
    sqlite3_stmt* st =
        prepared(w, &w->callsite, "INSERT OR REPLACE INTO callsite VALUES(?1,?2,?3,?4)");
    if (!st)
        return -EIO;
    sqlite3_bind_int64(st, 1, c->id);
    sqlite3_bind_int64(st, 2, c->parent_id);
    sqlite3_bind_int64(st, 3, c->frame_id);
    sqlite3_bind_int64(st, 4, c->depth);
    return step_reset(st);
}

int mt_capture_writer_mapping(mt_capture_writer* w, const mt_mapping_rec* m) {
    sqlite3_stmt* st =
        prepared(w, &w->mapping, "INSERT OR REPLACE INTO mapping VALUES(?1,?2,?3,?4,?5,?6,?7,?8)");
    if (!st)
        return -EIO;
    sqlite3_bind_int64(st, 1, m->id);
    sqlite3_bind_text(st, 2, m->path, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(st, 3, (int64_t)m->start);
    sqlite3_bind_int64(st, 4, (int64_t)m->end);
    sqlite3_bind_int64(st, 5, (int64_t)m->load_bias);
    bind_text_or_null(st, 6, m->build_id);
    sqlite3_bind_int64(st, 7, m->ts_loaded);
    if (m->ts_unloaded >= 0)
        sqlite3_bind_int64(st, 8, m->ts_unloaded);
    return step_reset(st);
}

int mt_capture_writer_thread(mt_capture_writer* w, int64_t tid, const char* name) {
    sqlite3_stmt* st =
        prepared(w, &w->thread, "INSERT OR REPLACE INTO thread(tid, name) VALUES(?1,?2)");
    if (!st)
        return -EIO;
    sqlite3_bind_int64(st, 1, tid);
    sqlite3_bind_text(st, 2, name, -1, SQLITE_TRANSIENT);
    return step_reset(st);
}

int mt_capture_writer_call_count(mt_capture_writer* w, const char* call, int64_t count) {
    sqlite3_stmt* st =
        prepared(w, &w->call_count, "INSERT OR REPLACE INTO call_count VALUES(?1,?2)");
    if (!st)
        return -EIO;
    sqlite3_bind_text(st, 1, call, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(st, 2, count);
    return step_reset(st);
}

int mt_capture_writer_leak(mt_capture_writer* w, uint64_t seq, int kind, uint64_t holder_seq) {
    if (!w->leak && exec(w->db, MEMTRACE_LEAK_TABLE_SQL))
        return -EIO;
    sqlite3_stmt* st = prepared(w, &w->leak, "INSERT OR REPLACE INTO leak VALUES(?1,?2,?3)");
    if (!st)
        return -EIO;
    sqlite3_bind_int64(st, 1, (int64_t)seq);
    sqlite3_bind_int(st, 2, kind);
    if (holder_seq)
        sqlite3_bind_int64(st, 3, (int64_t)holder_seq);
    else
        sqlite3_bind_null(st, 3);
    return step_reset(st);
}

int mt_capture_writer_mark(mt_capture_writer* w, const mt_mark_rec* m) {
    sqlite3_stmt* st = prepared(w, &w->mark,
                                "INSERT INTO mark(heap, kind, name, ts_begin, ts_end, tid, attrs)"
                                " VALUES(?1,?2,?3,?4,?5,?6,?7)");
    if (!st)
        return -EIO;
    sqlite3_bind_int(st, 1, m->heap);
    sqlite3_bind_text(st, 2, m->kind, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 3, m->name, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(st, 4, m->ts_begin);
    if (m->has_end)
        sqlite3_bind_int64(st, 5, m->ts_end);
    if (m->has_tid)
        sqlite3_bind_int64(st, 6, m->tid);
    if (m->attrs)
        sqlite3_bind_text(st, 7, m->attrs, -1, SQLITE_TRANSIENT);
    return step_reset(st);
}

int mt_capture_writer_mark_end(mt_capture_writer* w, const char* name, int64_t tid, int64_t ts) {
    sqlite3_stmt* st = prepared(w, &w->mark_end,
                                "UPDATE mark SET ts_end=?1 WHERE id=(SELECT max(id) FROM mark"
                                " WHERE kind='range' AND name=?2 AND tid=?3 AND ts_end IS NULL)");
    if (!st)
        return -EIO;
    sqlite3_bind_int64(st, 1, ts);
    sqlite3_bind_text(st, 2, name, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(st, 3, tid);
    return step_reset(st);
}

int mt_capture_writer_symbolize(mt_capture_writer* w, int budget_ms, bool read_files, char* err,
                                size_t errlen) {
    return mt_symbolize_capture_at_exit(w->db, budget_ms, read_files, NULL, err, errlen);
}

size_t mt_capture_writer_encode_chunk(mt_capture_writer* w, int heap, const mt_event* ev, size_t n,
                                      uint8_t* scratch, struct mt_chunk_header* h) {
    if (n == 0 || n > MT_CHUNK_EVENTS_MAX) // more: readers would refuse it
        return 0;
    *h = (mt_chunk_header){.heap = heap,
                           .seq_first = (int64_t)ev[0].seq,
                           .seq_last = (int64_t)ev[n - 1].seq,
                           .ts_first = ev[0].ts,
                           .ts_last = ev[0].ts,
                           .count = (int64_t)n};
    for (size_t i = 1; i < n; i++) {
        if (ev[i].ts < h->ts_first)
            h->ts_first = ev[i].ts;
        if (ev[i].ts > h->ts_last)
            h->ts_last = ev[i].ts;
    }
    // The checksum covers the row's columns too: readers verify it before decoding.
    return mt_codec_chunk_encode(w->coder, w->codec, h, ev, n, scratch);
}

int mt_capture_writer_insert_chunk(mt_capture_writer* w, const struct mt_chunk_header* h,
                                   const uint8_t* data, size_t len) {
    sqlite3_stmt* st = w->chunk;
    sqlite3_bind_int64(st, 1, h->heap);
    sqlite3_bind_int64(st, 2, h->seq_first);
    sqlite3_bind_int64(st, 3, h->seq_last);
    sqlite3_bind_int64(st, 4, h->ts_first);
    sqlite3_bind_int64(st, 5, h->ts_last);
    sqlite3_bind_int64(st, 6, h->count);
    sqlite3_bind_int(st, 7, w->codec);
    sqlite3_bind_blob(st, 8, data, (int)len, SQLITE_STATIC);
    return step_reset(st);
}

int mt_capture_writer_chunk(mt_capture_writer* w, int heap, const mt_event* ev, size_t n,
                            uint8_t* scratch) {
    if (n == 0)
        return 0;
    if (n > MT_CHUNK_EVENTS_MAX)
        return -EINVAL;
    mt_chunk_header h;
    size_t len = mt_capture_writer_encode_chunk(w, heap, ev, n, scratch, &h);
    return len ? mt_capture_writer_insert_chunk(w, &h, scratch, len) : -ENOMEM;
}

void mt_capture_writer_set_time_unit(mt_capture_writer* w, int64_t unit) {
    mt_codec_chunk_coder_set_time_unit(w->coder, unit);
}

int mt_capture_writer_set_codec(mt_capture_writer* w, int codec) {
    // The newest schema of that codec (codec 5: schema 6, callsites in chunks).
    for (int version = MEMTRACE_SCHEMA_VERSION; version >= MEMTRACE_SCHEMA_VERSION_OLDEST;
         version--) {
        if (mt_codec_of_schema(version) != codec)
            continue;
        if (flush_callsites(w))
            return -EIO;
        char sql[64];
        snprintf(sql, sizeof sql, "PRAGMA user_version=%d", version);
        if (exec(w->db, sql))
            return -EIO;
        w->codec = codec;
        w->callsite_rows = version < 6;
        return 0;
    }
    return -EINVAL;
}

static void finalize_statements(mt_capture_writer* w) {
    sqlite3_finalize(w->chunk);
    sqlite3_finalize(w->counter);
    sqlite3_finalize(w->meta);
    sqlite3_stmt* lazy[] = {w->counters, w->frame,      w->callsite, w->callsite_chunk, w->mapping,
                            w->thread,   w->call_count, w->mark,     w->mark_end,       w->leak};
    for (size_t i = 0; i < sizeof lazy / sizeof *lazy; i++)
        sqlite3_finalize(lazy[i]);
}

// Whether the -wal beside the capture can be removed: its directory is writable by us (a
// process that dropped its privileges or chrooted since it created the capture may not).
static bool wal_removable(sqlite3* db) {
    const char* path = sqlite3_db_filename(db, "main");
    const char* slash = path ? strrchr(path, '/') : NULL;
    if (!path || !slash)
        return path && faccessat(AT_FDCWD, ".", W_OK | X_OK, AT_EACCESS) == 0;
    char* dir = strndup(path, slash == path ? 1 : (size_t)(slash - path));
    bool ok = dir && faccessat(AT_FDCWD, dir, W_OK | X_OK, AT_EACCESS) == 0;
    free(dir);
    return ok;
}

int mt_capture_writer_finish(mt_capture_writer* w, const char* status) {
    int rc = flush_callsites(w);
    if (mt_capture_writer_meta_text(w, "capture_status", status))
        rc = -EIO;
    finalize_statements(w);
    if (!wal_removable(w->db)) {
        // Everything into the capture file and the -wal emptied, left beside it, in place.
        if (exec(w->db, "PRAGMA wal_checkpoint(TRUNCATE)") ||
            sqlite3_db_config(w->db, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, NULL) != SQLITE_OK)
            rc = -EIO;
    } else if (exec(w->db, "PRAGMA journal_mode=MEMORY")) {
        // Out of WAL: checkpoints the WAL and removes -wal/-shm, leaving one file in rollback
        // mode. MEMORY rather than DELETE: the header's one-page change needs no -journal file.
        rc = -EIO;
    }
    if (sqlite3_close(w->db) != SQLITE_OK)
        rc = -EIO;
    mt_codec_chunk_coder_free(w->coder);
    free(w->sites);
    free(w->site_blob);
    free(w);
    return rc;
}

void mt_capture_writer_abandon(mt_capture_writer* w) {
    if (!w)
        return;
    finalize_statements(w);
    sqlite3_close(w->db);
    mt_codec_chunk_coder_free(w->coder);
    free(w->sites);
    free(w->site_blob);
    free(w);
}
