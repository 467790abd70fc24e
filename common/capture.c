// SPDX-License-Identifier: MIT
// Capture reader: validates a capture file and streams its events in seq order by a k-way
// merge of the per-thread chunks. The only SQLite reader shared by all of memreport.
// Must not trust the file: it may come from a killed program, a truncated copy, or anyone.
#define _GNU_SOURCE
#include "memtrace/capture.h"

#include "memtrace/codec.h"
#include "memtrace/schema.h"

#include <errno.h>
#include <fcntl.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct mt_capture {
    sqlite3* db;
    char* path;
};

// Files under this size get a full PRAGMA quick_check at open; larger ones are checked
// chunk by chunk as they are decoded, so opening a huge capture stays instant.
#define QUICK_CHECK_MAX_BYTES (64u << 20)
// Upper bound of events in one chunk; a larger count means a corrupt row.
#define MAX_CHUNK_EVENTS (1u << 22)

static uint32_t be32(const unsigned char* p) {
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

// Checks the SQLite header before SQLite sees the file: an empty or foreign file would
// otherwise be opened as a fresh, empty database.
static int check_header(const char* path, char* err, size_t errlen) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        int e = errno;
        snprintf(err, errlen, "cannot open: %s", strerror(e));
        return -e;
    }
    struct stat st;
    unsigned char hdr[100];
    ssize_t got = 0;
    if (fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) {
        close(fd);
        snprintf(err, errlen, "is a directory, not a capture");
        return -EISDIR;
    }
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
    if (pages && be32(hdr + 24) == be32(hdr + 92) &&
        (uint64_t)st.st_size < (uint64_t)pages * page_size) {
        snprintf(err, errlen, "truncated capture file (%lld of %llu bytes)", (long long)st.st_size,
                 (unsigned long long)pages * page_size);
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

static int validate(mt_capture* cap, off_t size, char* err, size_t errlen) {
    sqlite3* db = cap->db;
    int64_t app_id = 0, version = 0;
    if (query_int(db, "PRAGMA application_id", &app_id) ||
        query_int(db, "PRAGMA user_version", &version)) {
        snprintf(err, errlen, "corrupt capture: %s", sqlite3_errmsg(db));
        return -EPROTO;
    }
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
    if (version < 1) {
        snprintf(err, errlen, "corrupt capture: schema version %lld", (long long)version);
        return -EPROTO;
    }
    int64_t n;
    if (query_int(db, "SELECT count(*) FROM meta", &n) ||
        query_int(db, "SELECT count(*) FROM heap", &n)) {
        snprintf(err, errlen, "corrupt capture: %s", sqlite3_errmsg(db));
        return -EPROTO;
    }
    if (size <= (off_t)QUICK_CHECK_MAX_BYTES) {
        sqlite3_stmt* st;
        int ok = sqlite3_prepare_v2(db, "PRAGMA quick_check(1)", -1, &st, NULL) == SQLITE_OK &&
                 sqlite3_step(st) == SQLITE_ROW &&
                 strcmp((const char*)sqlite3_column_text(st, 0), "ok") == 0;
        if (!ok)
            snprintf(err, errlen, "corrupt capture: %s",
                     sqlite3_column_text(st, 0) ? (const char*)sqlite3_column_text(st, 0)
                                                : sqlite3_errmsg(db));
        sqlite3_finalize(st);
        if (!ok) {
            err[strcspn(err, "\n")] = 0; // quick_check reports one problem per line
            return -EPROTO;
        }
    }
    return 0;
}

int mt_capture_open(const char* path, mt_capture** out, char* err, size_t errlen) {
    *out = NULL;
    int rc = check_header(path, err, errlen);
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
    // Read-write so a killed program's WAL is recovered and derived tables can be cached;
    // fall back to read-only for files we may not write.
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
    sqlite3_busy_timeout(cap->db, 2000);
    rc = validate(cap, st.st_size, err, errlen);
    if (rc) {
        mt_capture_close(cap);
        return rc;
    }
    *out = cap;
    return 0;
}

void mt_capture_close(mt_capture* cap) {
    if (!cap)
        return;
    sqlite3_close(cap->db);
    free(cap->path);
    free(cap);
}

sqlite3* mt_capture_db(mt_capture* cap) {
    return cap->db;
}

const char* mt_capture_path(const mt_capture* cap) {
    return cap->path;
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

// ---- event iterator: k-way merge of chunk cursors by seq

typedef struct cursor {
    mt_event* ev;
    size_t n, pos;
} cursor;

struct mt_event_iter {
    mt_capture* cap;
    sqlite3_stmt* chunks;
    bool pending; // chunks is positioned on a row not yet loaded
    int heap_id;
    cursor** heap; // min-heap on ev[pos].seq
    size_t nheap, capheap;
    uint64_t last_seq;
    bool any;
    char err[256];
};

static uint64_t cur_seq(const cursor* c) {
    return c->ev[c->pos].seq;
}

static void sift_down(mt_event_iter* it, size_t i) {
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < it->nheap && cur_seq(it->heap[l]) < cur_seq(it->heap[m]))
            m = l;
        if (r < it->nheap && cur_seq(it->heap[r]) < cur_seq(it->heap[m]))
            m = r;
        if (m == i)
            return;
        cursor* t = it->heap[i];
        it->heap[i] = it->heap[m];
        it->heap[m] = t;
        i = m;
    }
}

static int heap_push(mt_event_iter* it, cursor* c) {
    if (it->nheap == it->capheap) {
        size_t nc = it->capheap ? it->capheap * 2 : 16;
        cursor** nh = realloc(it->heap, nc * sizeof *nh);
        if (!nh)
            return -ENOMEM;
        it->heap = nh;
        it->capheap = nc;
    }
    size_t i = it->nheap++;
    it->heap[i] = c;
    while (i > 0) {
        size_t p = (i - 1) / 2;
        if (cur_seq(it->heap[p]) <= cur_seq(it->heap[i]))
            break;
        cursor* t = it->heap[p];
        it->heap[p] = it->heap[i];
        it->heap[i] = t;
        i = p;
    }
    return 0;
}

static void cursor_free(cursor* c) {
    if (c) {
        free(c->ev);
        free(c);
    }
}

static int step_chunks(mt_event_iter* it) {
    int rc = sqlite3_step(it->chunks);
    if (rc == SQLITE_ROW) {
        it->pending = true;
        return 0;
    }
    it->pending = false;
    if (rc == SQLITE_DONE)
        return 0;
    snprintf(it->err, sizeof it->err, "corrupt capture: %s", sqlite3_errmsg(it->cap->db));
    return -EPROTO;
}

// Decodes the chunk row under it->chunks into a new cursor.
static int load_pending(mt_event_iter* it) {
    sqlite3_stmt* st = it->chunks;
    int64_t id = sqlite3_column_int64(st, 0);
    int64_t count = sqlite3_column_int64(st, 2);
    int64_t codec = sqlite3_column_int64(st, 3);
    const uint8_t* data = sqlite3_column_blob(st, 4);
    size_t len = (size_t)sqlite3_column_bytes(st, 4);
    // Every event takes at least 3 bytes (kind, ts and addr; a free omits size and callsite).
    if (codec != MT_CODEC_VARINT_COLUMNS || count <= 0 || count > MAX_CHUNK_EVENTS ||
        (size_t)count > len / 3 + 1) {
        snprintf(it->err, sizeof it->err, "corrupt capture: event chunk %lld is malformed",
                 (long long)id);
        return -EPROTO;
    }
    cursor* c = calloc(1, sizeof *c);
    if (!c || !(c->ev = malloc((size_t)count * sizeof *c->ev))) {
        cursor_free(c);
        snprintf(it->err, sizeof it->err, "out of memory");
        return -ENOMEM;
    }
    c->n = (size_t)count;
    if (mt_codec_decode(data, len, c->n, (uint8_t)it->heap_id, c->ev) != 0 ||
        (uint64_t)sqlite3_column_int64(st, 1) != c->ev[0].seq) {
        cursor_free(c);
        snprintf(it->err, sizeof it->err, "corrupt capture: event chunk %lld does not decode",
                 (long long)id);
        return -EPROTO;
    }
    int rc = heap_push(it, c);
    if (rc) {
        cursor_free(c);
        return rc;
    }
    return step_chunks(it);
}

int mt_event_iter_open(mt_capture* cap, int heap, mt_event_iter** out) {
    mt_event_iter* it = calloc(1, sizeof *it);
    if (!it)
        return -ENOMEM;
    it->cap = cap;
    it->heap_id = heap;
    if (sqlite3_prepare_v2(cap->db,
                           "SELECT id, seq_first, count, codec, data FROM event_chunk"
                           " WHERE heap=?1 ORDER BY seq_first, id",
                           -1, &it->chunks, NULL) != SQLITE_OK) {
        free(it);
        return -EPROTO;
    }
    sqlite3_bind_int(it->chunks, 1, heap);
    int rc = step_chunks(it);
    if (rc) {
        *out = it; // the caller reads the message, then closes
        return rc;
    }
    *out = it;
    return 0;
}

int mt_event_iter_next(mt_event_iter* it, mt_event* ev) {
    // Any unread event with a smaller seq lives in a chunk with seq_first <= that seq, so
    // loading every chunk that starts at or below the current minimum keeps the merge exact.
    while (it->pending && (it->nheap == 0 ||
                           (uint64_t)sqlite3_column_int64(it->chunks, 1) <= cur_seq(it->heap[0]))) {
        int rc = load_pending(it);
        if (rc)
            return rc;
    }
    if (it->nheap == 0)
        return 0;
    cursor* c = it->heap[0];
    *ev = c->ev[c->pos++];
    if (it->any && ev->seq <= it->last_seq) {
        snprintf(it->err, sizeof it->err, "corrupt capture: event seq %llu repeats",
                 (unsigned long long)ev->seq);
        return -EPROTO;
    }
    it->any = true;
    it->last_seq = ev->seq;
    if (c->pos == c->n) {
        it->heap[0] = it->heap[--it->nheap];
        cursor_free(c);
    }
    if (it->nheap > 0)
        sift_down(it, 0);
    return 1;
}

const char* mt_event_iter_error(const mt_event_iter* it) {
    return it->err[0] ? it->err : "corrupt capture";
}

void mt_event_iter_close(mt_event_iter* it) {
    if (!it)
        return;
    for (size_t i = 0; i < it->nheap; i++)
        cursor_free(it->heap[i]);
    free(it->heap);
    sqlite3_finalize(it->chunks);
    free(it);
}
