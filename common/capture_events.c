// SPDX-License-Identifier: MIT
// The event iterator of a capture: a k-way merge, by seq, of the per-thread event chunks,
// each checked (CRC32C) and decoded as it is reached. Chunks come from the file: any of
// them may be corrupt, and then the iteration stops or, when asked, skips it.
#define _GNU_SOURCE
#include "capture_db.h"

#include "memtrace/capture.h"
#include "memtrace/codec.h"
#include "memtrace/sampling.h"
#include "memtrace/schema.h"
#include "memtrace/vec.h"

#include <errno.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// Upper bound of events in one chunk; a larger count means a corrupt row.
#define MAX_CHUNK_EVENTS (1u << 22)

// Process-wide: skip corrupt chunks (and report each through this) instead of failing.
static mt_corrupt_chunk_fn skip_corrupt_report;

void mt_capture_skip_corrupt_chunks(mt_corrupt_chunk_fn report) {
    skip_corrupt_report = report;
}

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
    mt_chunk_coder* coder; // made at the first chunk
    int64_t last_chunk;    // the highest chunk id seen
    uint64_t sample_bytes; // a sampled capture's mean interval: allocations weighed (0: not)
    bool requested;        // mt_event_iter_requested_sizes: not weighed
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
    if (MT_VEC_RESERVE(&it->heap, &it->capheap, it->nheap + 1))
        return -ENOMEM;
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
        if (sqlite3_column_int64(it->chunks, 0) > it->last_chunk)
            it->last_chunk = sqlite3_column_int64(it->chunks, 0);
        return 0;
    }
    it->pending = false;
    if (rc == SQLITE_DONE)
        return 0;
    return mt_capture_sql_problem(it->cap->db, "reading event chunks", it->err, sizeof it->err);
}

// Whether chunk id was reported already (and remembers it if not).
static bool reported_before(mt_capture* cap, int64_t id) {
    for (size_t i = 0; i < cap->nskipped; i++)
        if (cap->skipped[i] == id)
            return true;
    if (MT_VEC_RESERVE(&cap->skipped, &cap->capskipped, cap->nskipped + 1) == 0)
        cap->skipped[cap->nskipped++] = id;
    return false;
}

// A chunk that cannot be trusted: an error, or (mt_capture_skip_corrupt_chunks) left out
// and reported once per capture.
static int bad_chunk(mt_event_iter* it, int64_t id, int64_t count, const char* why) {
    snprintf(it->err, sizeof it->err, "event chunk %lld is corrupt (%s)", (long long)id, why);
    if (!skip_corrupt_report)
        return -EPROTO;
    if (!reported_before(it->cap, id)) {
        char what[320];
        snprintf(what, sizeof what, "%s; skipped its %lld events", it->err, (long long)count);
        skip_corrupt_report(it->cap->path, what);
    }
    it->err[0] = 0;
    return step_chunks(it);
}

// Decodes the chunk row under it->chunks into a new cursor, after checking its checksum.
static int load_pending(mt_event_iter* it) {
    sqlite3_stmt* st = it->chunks;
    int64_t id = sqlite3_column_int64(st, 0);
    mt_chunk_header h = {.heap = it->heap_id,
                         .seq_first = sqlite3_column_int64(st, 1),
                         .count = sqlite3_column_int64(st, 2),
                         .seq_last = sqlite3_column_int64(st, 5),
                         .ts_first = sqlite3_column_int64(st, 6),
                         .ts_last = sqlite3_column_int64(st, 7)};
    int64_t count = h.count;
    int64_t codec = sqlite3_column_int64(st, 3);
    const uint8_t* data = sqlite3_column_blob(st, 4);
    size_t len = (size_t)sqlite3_column_bytes(st, 4);
    int64_t want_codec = mt_codec_of_schema(it->cap->version);
    if (codec != want_codec) {
        char why[64];
        snprintf(why, sizeof why, "codec %lld, not %lld", (long long)codec, (long long)want_codec);
        return bad_chunk(it, id, count, why);
    }
    long payload = codec == MT_CODEC_VARINT_COLUMNS ? (long)len : mt_chunk_verify(&h, data, len);
    if (payload < 0)
        return bad_chunk(it, id, count, "checksum mismatch");
    // Codecs 1 and 2 take at least 3 bytes an event (kind, ts and addr; a free omits size and
    // callsite); codec 3 is compressed, and its decoder bounds what it inflates.
    if (count <= 0 || count > MAX_CHUNK_EVENTS ||
        (codec != MT_CODEC_ZSTD_COLUMNS_CRC32C && (size_t)count > (size_t)payload / 3 + 1))
        return bad_chunk(it, id, count, "impossible event count");
    cursor* c = calloc(1, sizeof *c);
    if (!c || !(c->ev = malloc((size_t)count * sizeof *c->ev)) ||
        (!it->coder && !(it->coder = mt_chunk_coder_new()))) {
        cursor_free(c);
        snprintf(it->err, sizeof it->err, "out of memory");
        return -ENOMEM;
    }
    c->n = (size_t)count;
    int rc = mt_chunk_decode(it->coder, (int)codec, &h, data, len, c->ev);
    if (rc != 0) {
        cursor_free(c);
        if (rc == -ENOMEM) {
            snprintf(it->err, sizeof it->err, "out of memory");
            return rc;
        }
        return bad_chunk(it, id, count,
                         rc == -EBADMSG ? "checksum mismatch" : "its events do not decode");
    }
    rc = heap_push(it, c);
    if (rc) {
        cursor_free(c);
        return rc;
    }
    return step_chunks(it);
}

// A sampled capture (include/memtrace/sampling.h): its allocations are read weighed, as the
// bytes they stand for, so every report scales without knowing. A method this reader does
// not know is refused rather than read as exact.
static int read_sampling(mt_event_iter* it) {
    int64_t n = mt_capture_meta_int(it->cap, "sample_bytes", 0);
    if (n <= 0)
        return 0;
    char* method = mt_capture_meta_text(it->cap, "sample_method");
    bool known = method && !strcmp(method, MT_SAMPLE_METHOD_POISSON_BYTES);
    if (!known)
        snprintf(it->err, sizeof it->err, "sampled by an unknown method '%s' (a newer memtrace?)",
                 method ? method : "");
    free(method);
    if (known && n > MT_SAMPLE_BYTES_MAX) {
        // The tracer writes at most MT_SAMPLE_BYTES_MAX: a larger value is a damaged file.
        snprintf(it->err, sizeof it->err, "sampled with a mean interval of %lld bytes (over %d)",
                 (long long)n, MT_SAMPLE_BYTES_MAX);
        known = false;
    }
    it->sample_bytes = (uint64_t)n;
    return known ? 0 : -EPROTO;
}

void mt_event_iter_requested_sizes(mt_event_iter* it) {
    it->requested = true;
}

int mt_event_iter_open(mt_capture* cap, int heap, mt_event_iter** out) {
    return mt_event_iter_open_chunks(cap, heap, 0, INT64_MAX, out);
}

int mt_event_iter_open_chunks(mt_capture* cap, int heap, int64_t after_chunk, int64_t upto_chunk,
                              mt_event_iter** out) {
    *out = NULL;
    mt_event_iter* it = calloc(1, sizeof *it);
    if (!it)
        return -ENOMEM;
    it->cap = cap;
    it->heap_id = heap;
    if (sqlite3_prepare_v2(cap->db,
                           "SELECT id, seq_first, count, codec, data, seq_last, ts_first,"
                           " ts_last FROM event_chunk"
                           " WHERE heap=?1 AND id>?2 AND id<=?3 ORDER BY seq_first, id",
                           -1, &it->chunks, NULL) != SQLITE_OK) {
        free(it);
        return -EPROTO;
    }
    sqlite3_bind_int(it->chunks, 1, heap);
    sqlite3_bind_int64(it->chunks, 2, after_chunk);
    sqlite3_bind_int64(it->chunks, 3, upto_chunk);
    it->last_chunk = after_chunk;
    int rc = read_sampling(it);
    if (rc) {
        *out = it;
        return rc;
    }
    rc = step_chunks(it);
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
        snprintf(it->err, sizeof it->err,
                 "corrupt capture: event seq %llu appears twice (overlapping event chunks)",
                 (unsigned long long)ev->seq);
        return -EPROTO;
    }
    it->any = true;
    it->last_seq = ev->seq;
    if (it->sample_bytes && !it->requested && mt_sample_kind(it->heap_id, ev->kind))
        ev->size = mt_sample_weight_bytes(ev->size, it->sample_bytes);
    if (c->pos == c->n) {
        it->heap[0] = it->heap[--it->nheap];
        cursor_free(c);
    }
    if (it->nheap > 0)
        sift_down(it, 0);
    return 1;
}

int64_t mt_event_iter_last_chunk(const mt_event_iter* it) {
    return it->last_chunk;
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
    mt_chunk_coder_free(it->coder);
    sqlite3_finalize(it->chunks);
    free(it);
}
