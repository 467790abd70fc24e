// SPDX-License-Identifier: MIT
// The events of the chosen chunks of a capture, decoded and merged in (seq, heap) order,
// for the SQL virtual tables (sql_internal.h).
#define _GNU_SOURCE
#ifdef MT_SQL_EXTENSION
#include <sqlite3ext.h>
SQLITE_EXTENSION_INIT3
#else
#include <sqlite3.h>
#endif

#include "sql_internal.h"

#include "memtrace/schema.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

// ---- chunk merge: the events of the selected chunks in (seq, heap) order

static bool event_before(const mt_event* a, const mt_event* b) {
    return a->seq < b->seq || (a->seq == b->seq && a->heap < b->heap);
}

static const mt_event* top_event(const chunk_merge* m, size_t i) {
    return &m->heap[i]->ev[m->heap[i]->pos];
}

static void sift_down(chunk_merge* m, size_t i) {
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, s = i;
        if (l < m->nheap && event_before(top_event(m, l), top_event(m, s)))
            s = l;
        if (r < m->nheap && event_before(top_event(m, r), top_event(m, s)))
            s = r;
        if (s == i)
            return;
        chunk_events* t = m->heap[i];
        m->heap[i] = m->heap[s];
        m->heap[s] = t;
        i = s;
    }
}

static void sift_up(chunk_merge* m, size_t i) {
    while (i > 0) {
        size_t p = (i - 1) / 2;
        if (!event_before(top_event(m, i), top_event(m, p)))
            return;
        chunk_events* t = m->heap[i];
        m->heap[i] = m->heap[p];
        m->heap[p] = t;
        i = p;
    }
}

static void chunk_events_free(chunk_events* c) {
    if (c) {
        sqlite3_free(c->ev);
        sqlite3_free(c);
    }
}

static void merge_reset(chunk_merge* m) {
    for (size_t i = 0; i < m->nheap; i++)
        chunk_events_free(m->heap[i]);
    sqlite3_free(m->heap);
    sqlite3_free(m->chunks);
    sqlite3_free(m->err);
    m->heap = NULL;
    m->chunks = NULL;
    m->err = NULL;
    m->nheap = m->nchunks = m->next = 0;
    m->left = 0;
}

void mt_sql_merge_free(chunk_merge* m) {
    merge_reset(m);
    sqlite3_finalize(m->blob);
    m->blob = NULL;
    mt_codec_chunk_coder_free(m->coder);
    m->coder = NULL;
}

int mt_sql_merge_fail(chunk_merge* m, int rc, const char* what, int64_t id) {
    sqlite3_free(m->err);
    m->err = id ? sqlite3_mprintf("event chunk %lld is corrupt (%s)", (long long)id, what)
                : sqlite3_mprintf("%s", what);
    return rc;
}

int mt_sql_merge_init(chunk_merge* m, sqlite3* db) {
    memset(m, 0, sizeof *m);
    m->db = db;
    sqlite3_stmt* st;
    if (sqlite3_prepare_v2(db, "PRAGMA main.user_version", -1, &st, NULL) != SQLITE_OK)
        return SQLITE_ERROR;
    int64_t version = sqlite3_step(st) == SQLITE_ROW ? sqlite3_column_int64(st, 0) : 0;
    sqlite3_finalize(st);
    m->want_codec = mt_codec_of_schema(version);
    return SQLITE_OK;
}

// Selects the chunks that may hold events inside b: the chunk bounds do the pushdown.
int mt_sql_merge_start(chunk_merge* m, const event_bounds* b) {
    merge_reset(m);
    m->b = *b;
    sqlite3_stmt* st;
    int rc = sqlite3_prepare_v2(m->db,
                                "SELECT id, heap, seq_first, seq_last, ts_first, ts_last, count,"
                                " codec FROM main.event_chunk WHERE heap BETWEEN ?1 AND ?2"
                                " AND seq_last >= ?3 AND seq_first <= ?4 AND ts_last >= ?5"
                                " AND ts_first <= ?6 ORDER BY seq_first, heap, id",
                                -1, &st, NULL);
    if (rc != SQLITE_OK)
        return mt_sql_merge_fail(m, rc, sqlite3_errmsg(m->db), 0);
    const int64_t bind[] = {b->heap_lo, b->heap_hi, b->seq_lo, b->seq_hi, b->ts_lo, b->ts_hi};
    for (int i = 0; i < 6; i++)
        sqlite3_bind_int64(st, i + 1, bind[i]);
    size_t cap = 0;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (m->nchunks == cap) {
            cap = cap ? 2 * cap : 256;
            chunk_info* grown = sqlite3_realloc64(m->chunks, cap * sizeof *grown);
            if (!grown) {
                sqlite3_finalize(st);
                return mt_sql_merge_fail(m, SQLITE_NOMEM, "out of memory", 0);
            }
            m->chunks = grown;
        }
        chunk_info* c = &m->chunks[m->nchunks++];
        c->id = sqlite3_column_int64(st, 0);
        c->h = (mt_chunk_header){.heap = sqlite3_column_int64(st, 1),
                                 .seq_first = sqlite3_column_int64(st, 2),
                                 .seq_last = sqlite3_column_int64(st, 3),
                                 .ts_first = sqlite3_column_int64(st, 4),
                                 .ts_last = sqlite3_column_int64(st, 5),
                                 .count = sqlite3_column_int64(st, 6)};
        c->codec = sqlite3_column_int64(st, 7);
    }
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE)
        return mt_sql_merge_fail(m, rc, sqlite3_errmsg(m->db), 0);
    if (m->nchunks && !(m->heap = sqlite3_malloc64(m->nchunks * sizeof *m->heap)))
        return mt_sql_merge_fail(m, SQLITE_NOMEM, "out of memory", 0);
    return SQLITE_OK;
}

// What a chunk's row says before its data is read.
static int check_header(chunk_merge* m, const chunk_info* c) {
    if (c->codec != m->want_codec)
        return mt_sql_merge_fail(m, SQLITE_CORRUPT, "unexpected codec", c->id);
    if (c->h.count <= 0 || c->h.count > MT_CHUNK_EVENTS_MAX || c->h.heap < 0 || c->h.heap > 255)
        return mt_sql_merge_fail(m, SQLITE_CORRUPT, "impossible event count or heap", c->id);
    return SQLITE_OK;
}

// Decodes the next selected chunk, after checking its checksum, onto the merge heap.
static int load_chunk(chunk_merge* m) {
    const chunk_info* c = &m->chunks[m->next++];
    int rc = check_header(m, c);
    if (rc != SQLITE_OK)
        return rc;
    if (!m->blob && sqlite3_prepare_v2(m->db, "SELECT data FROM main.event_chunk WHERE id=?1", -1,
                                       &m->blob, NULL) != SQLITE_OK)
        return mt_sql_merge_fail(m, SQLITE_ERROR, sqlite3_errmsg(m->db), 0);
    sqlite3_bind_int64(m->blob, 1, c->id);
    rc = sqlite3_step(m->blob);
    if (rc != SQLITE_ROW) {
        sqlite3_reset(m->blob);
        return rc == SQLITE_DONE ? mt_sql_merge_fail(m, SQLITE_CORRUPT, "its row vanished", c->id)
                                 : mt_sql_merge_fail(m, rc, sqlite3_errmsg(m->db), 0);
    }
    const uint8_t* data = sqlite3_column_blob(m->blob, 0);
    size_t len = (size_t)sqlite3_column_bytes(m->blob, 0);
    chunk_events* ce = sqlite3_malloc(sizeof *ce);
    mt_event* ev = sqlite3_malloc64((uint64_t)c->h.count * sizeof *ev);
    if (!ce || !ev || (!m->coder && !(m->coder = mt_codec_chunk_coder_new()))) {
        sqlite3_free(ce);
        sqlite3_free(ev);
        sqlite3_reset(m->blob);
        return mt_sql_merge_fail(m, SQLITE_NOMEM, "out of memory", 0);
    }
    *ce = (chunk_events){ev, (size_t)c->h.count, 0};
    rc = mt_codec_chunk_decode(m->coder, (int)c->codec, &c->h, data, len, ev);
    sqlite3_reset(m->blob);
    if (rc != 0) {
        chunk_events_free(ce);
        return rc == -ENOMEM ? mt_sql_merge_fail(m, SQLITE_NOMEM, "out of memory", 0)
               : rc == -EBADMSG
                   ? mt_sql_merge_fail(m, SQLITE_CORRUPT, "checksum mismatch", c->id)
                   : mt_sql_merge_fail(m, SQLITE_CORRUPT, "its events do not decode", c->id);
    }
    m->heap[m->nheap] = ce;
    sift_up(m, m->nheap++);
    return SQLITE_OK;
}

static bool in_bounds(const event_bounds* b, const mt_event* e) {
    return (int64_t)e->seq >= b->seq_lo && (int64_t)e->seq <= b->seq_hi && e->ts >= b->ts_lo &&
           e->ts <= b->ts_hi;
}

// The next row of a scan that wants no column: counted from the chunks' headers.
static int next_counted(chunk_merge* m) {
    while (m->left == 0) {
        if (m->next == m->nchunks)
            return 0;
        const chunk_info* c = &m->chunks[m->next++];
        int rc = check_header(m, c);
        if (rc != SQLITE_OK)
            return rc;
        m->left = c->h.count;
    }
    m->left--;
    return 1;
}

// The next event inside the bounds: 1 with *ev filled, 0 at the end, or an SQLite error.
int mt_sql_merge_next(chunk_merge* m, mt_event* ev) {
    if (m->headers_only)
        return next_counted(m);
    for (;;) {
        // An unread event of smaller seq lives in a chunk starting at or below it, so every
        // chunk starting at or below the smallest loaded seq is loaded first.
        while (m->next < m->nchunks &&
               (m->nheap == 0 || m->chunks[m->next].h.seq_first <= (int64_t)top_event(m, 0)->seq)) {
            int rc = load_chunk(m);
            if (rc != SQLITE_OK)
                return rc;
        }
        if (m->nheap == 0)
            return 0;
        chunk_events* c = m->heap[0];
        *ev = c->ev[c->pos++];
        if (c->pos == c->n) {
            m->heap[0] = m->heap[--m->nheap];
            chunk_events_free(c);
        }
        if (m->nheap > 0)
            sift_down(m, 0);
        if ((int64_t)ev->seq > m->b.seq_hi && m->next == m->nchunks &&
            (m->nheap == 0 || (int64_t)top_event(m, 0)->seq > m->b.seq_hi))
            return 0; // past the range: nothing left can be inside it
        if (in_bounds(&m->b, ev))
            return 1;
    }
}
