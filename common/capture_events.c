// SPDX-License-Identifier: MIT
// The event iterator of a capture: a k-way merge, by seq, of the per-thread event chunks,
// each checked (CRC32C) and decoded a few chunks ahead of the merge, on a second thread
// when the capture has many. Chunks come from the file: any of them may be corrupt, and
// then the iteration stops or, when asked, skips it, where the merge reaches it (a chunk
// decoded ahead keeps its verdict until then). Only the calling thread uses SQLite.
#define _GNU_SOURCE
#include "capture_db.h"

#include "memtrace/capture.h"
#include "memtrace/codec.h"
#include "memtrace/sampling.h"
#include "memtrace/schema.h"
#include "memtrace/vec.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// Process-wide: skip corrupt chunks (and report each through this) instead of failing.
static mt_corrupt_chunk_fn skip_corrupt_report;

void mt_capture_skip_corrupt_chunks(mt_corrupt_chunk_fn report) {
    skip_corrupt_report = report;
}

typedef struct cursor {
    mt_event* ev;
    size_t n, pos;
} cursor;

// A chunk row read from the statement (its blob copied: the row's pointer dies at the next
// step) and, once decoded, what came of it: rc, why and c are written by whoever decodes it
// (the worker, while the job is counted in fetched but not yet in decoded), and read by the
// calling thread after that.
typedef struct chunk_job {
    int64_t id, codec;
    mt_chunk_header h;
    uint8_t* data;
    size_t len;
    int rc;          // 0: c holds its events; -EPROTO: corrupt (why says how); -ENOMEM
    const char* why; // a literal or why_buf
    char why_buf[64];
    cursor* c;
} chunk_job;

// Chunks are checked (CRC) and decoded AHEAD chunks before the merge reaches them, on a
// worker thread once a capture has shown it has many (THREAD_AFTER chunks read the plain way:
// a small capture starts no thread). The main thread keeps every SQLite call and every
// message; the worker only calls the codec.
enum { AHEAD = 8, THREAD_AFTER = 16 };

typedef struct heap_entry {
    uint64_t seq; // c->ev[c->pos].seq, kept here so that sifting reads no cursor
    cursor* c;
} heap_entry;

struct mt_event_iter {
    mt_capture* cap;
    sqlite3_stmt* chunks;
    int heap_id;
    int64_t want_codec;
    heap_entry* heap; // min-heap on seq
    size_t nheap, capheap;
    uint64_t last_seq;
    uint64_t after_seq; // events up to this seq are not given (mt_capture_iter_open_after)
    bool any;
    mt_chunk_coder* coder; // made at the first chunk; the worker's once it runs
    int64_t last_chunk;    // the highest chunk id seen
    uint64_t sample_bytes; // a sampled capture's mean interval: allocations weighed (0: not)
    bool requested;        // mt_capture_iter_requested_sizes: not weighed
    // Jobs fetched, decoded and taken, counted from the start: job k is in jobs[k % AHEAD],
    // fetched - taken <= AHEAD; the worker decodes jobs [decoded, fetched) in order.
    chunk_job jobs[AHEAD];
    uint64_t fetched, decoded, taken;
    int fetch_rc;        // the statement's end (SQLITE_DONE: 0) or error, after the jobs
    bool fetch_ended;    // no row will be fetched any more
    char fetch_err[256]; // fetch_rc's message
    bool worker_running, stop;
    pthread_t worker;
    pthread_mutex_t lock;     // fetched, decoded, stop (and the jobs changing hands)
    pthread_cond_t work_cond; // to the worker: a job fetched, or stop
    pthread_cond_t done_cond; // to the main thread: a job decoded
    char err[256];
};

static void sift_down(mt_event_iter* it, size_t i) {
    heap_entry* h = it->heap;
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < it->nheap && h[l].seq < h[m].seq)
            m = l;
        if (r < it->nheap && h[r].seq < h[m].seq)
            m = r;
        if (m == i)
            return;
        heap_entry t = h[i];
        h[i] = h[m];
        h[m] = t;
        i = m;
    }
}

static int heap_push(mt_event_iter* it, cursor* c) {
    if (MT_VEC_RESERVE(&it->heap, &it->capheap, it->nheap + 1))
        return -ENOMEM;
    size_t i = it->nheap++;
    it->heap[i] = (heap_entry){c->ev[c->pos].seq, c};
    while (i > 0) {
        size_t p = (i - 1) / 2;
        if (it->heap[p].seq <= it->heap[i].seq)
            break;
        heap_entry t = it->heap[p];
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

static void job_clear(chunk_job* j) {
    free(j->data);
    cursor_free(j->c);
    memset(j, 0, sizeof *j);
}

static bool ts_in_bounds(int64_t ts) {
    return ts > -MT_EVENT_TS_LIMIT && ts < MT_EVENT_TS_LIMIT;
}

// The limits of memtrace/event.h: no tracer writes beyond them, and every report's sums and
// differences of times rely on them. why: a literal.
static bool events_in_bounds(const mt_chunk_header* h, const cursor* c, const char** why) {
    *why = "a time beyond 2^62 ns";
    if (!ts_in_bounds(h->ts_first) || !ts_in_bounds(h->ts_last))
        return false;
    for (size_t i = 0; i < c->n; i++) {
        if (!ts_in_bounds(c->ev[i].ts))
            return false;
        if (c->ev[i].size > MT_EVENT_SIZE_MAX) {
            *why = "a size over 2^63-1 bytes";
            return false;
        }
    }
    return true;
}

// Checks and decodes job j (no SQLite, no shared state but the coder: the worker's once it
// runs). The checks and their order are those a chunk always had, so are the messages.
static void decode_job(mt_chunk_coder** coder, int64_t want_codec, chunk_job* j) {
    j->rc = -ENOMEM;
    if (j->len && !j->data)
        return; // its blob could not be copied
    j->rc = -EPROTO;
    if (j->codec != want_codec) {
        snprintf(j->why_buf, sizeof j->why_buf, "codec %lld, not %lld", (long long)j->codec,
                 (long long)want_codec);
        j->why = j->why_buf;
        return;
    }
    long payload = j->codec == MT_CODEC_VARINT_COLUMNS
                       ? (long)j->len
                       : mt_codec_chunk_verify(&j->h, j->data, j->len);
    j->why = "checksum mismatch";
    if (payload < 0)
        return;
    // Codecs 1 and 2 take at least 3 bytes an event (kind, ts and addr; a free omits size and
    // callsite); codecs 3 to 5 are compressed, and their decoder bounds what it inflates.
    int64_t count = j->h.count;
    j->why = "impossible event count";
    if (count > MT_CHUNK_EVENTS_MAX) {
        snprintf(j->why_buf, sizeof j->why_buf, "impossible event count %lld, over %d",
                 (long long)count, MT_CHUNK_EVENTS_MAX);
        j->why = j->why_buf;
        return;
    }
    if (count <= 0 ||
        (j->codec <= MT_CODEC_VARINT_COLUMNS_CRC32C && (size_t)count > (size_t)payload / 3 + 1))
        return;
    j->rc = -ENOMEM;
    cursor* c = calloc(1, sizeof *c);
    if (!c || !(c->ev = malloc((size_t)count * sizeof *c->ev)) ||
        (!*coder && !(*coder = mt_codec_chunk_coder_new()))) {
        cursor_free(c);
        return;
    }
    c->n = (size_t)count;
    int rc = mt_codec_chunk_decode(*coder, (int)j->codec, &j->h, j->data, j->len, c->ev);
    free(j->data); // the events are out: the blob is not needed any more
    j->data = NULL;
    if (rc != 0) {
        cursor_free(c);
        j->rc = rc == -ENOMEM ? -ENOMEM : -EPROTO;
        j->why = rc == -EBADMSG ? "checksum mismatch" : "its events do not decode";
        return;
    }
    if (!events_in_bounds(&j->h, c, &j->why)) {
        cursor_free(c);
        j->rc = -EPROTO;
        return;
    }
    j->c = c;
    j->rc = 0;
}

static void* worker_main(void* arg) {
    mt_event_iter* it = arg;
    pthread_mutex_lock(&it->lock);
    for (;;) {
        while (!it->stop && it->decoded == it->fetched)
            pthread_cond_wait(&it->work_cond, &it->lock);
        if (it->stop)
            break;
        chunk_job* j = &it->jobs[it->decoded % AHEAD];
        pthread_mutex_unlock(&it->lock);
        decode_job(&it->coder, it->want_codec, j);
        pthread_mutex_lock(&it->lock);
        it->decoded++;
        pthread_cond_signal(&it->done_cond);
    }
    pthread_mutex_unlock(&it->lock);
    return NULL;
}

static void start_worker(mt_event_iter* it) {
    if (pthread_mutex_init(&it->lock, NULL))
        return;
    if (pthread_cond_init(&it->work_cond, NULL)) {
        pthread_mutex_destroy(&it->lock);
        return;
    }
    if (pthread_cond_init(&it->done_cond, NULL)) {
        pthread_cond_destroy(&it->work_cond);
        pthread_mutex_destroy(&it->lock);
        return;
    }
    // The worker takes no signals: a program's handlers (memreport live's SIGINT, which must
    // interrupt the main thread's poll) stay on the threads they were made for.
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int failed = pthread_create(&it->worker, NULL, worker_main, it);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    // Nothing is lost if no thread can be made: the main thread goes on decoding.
    if (failed) {
        pthread_cond_destroy(&it->done_cond);
        pthread_cond_destroy(&it->work_cond);
        pthread_mutex_destroy(&it->lock);
        return;
    }
    it->worker_running = true;
}

static void stop_worker(mt_event_iter* it) {
    if (!it->worker_running)
        return;
    pthread_mutex_lock(&it->lock);
    it->stop = true;
    pthread_cond_signal(&it->work_cond);
    pthread_mutex_unlock(&it->lock);
    pthread_join(it->worker, NULL);
    pthread_cond_destroy(&it->done_cond);
    pthread_cond_destroy(&it->work_cond);
    pthread_mutex_destroy(&it->lock);
    it->worker_running = false;
}

// Reads chunk rows into jobs until `want` are waiting (or the rows end); an SQL error ends
// the rows and is said once the jobs before it are taken.
static void fetch_rows(mt_event_iter* it, uint64_t want) {
    while (!it->fetch_ended && it->fetched - it->taken < want) {
        int rc = sqlite3_step(it->chunks);
        if (rc != SQLITE_ROW) {
            it->fetch_ended = true;
            if (rc != SQLITE_DONE)
                it->fetch_rc = mt_capture_db_sql_problem(it->cap->db, "reading event chunks",
                                                         it->fetch_err, sizeof it->fetch_err);
            return;
        }
        sqlite3_stmt* st = it->chunks;
        chunk_job* j = &it->jobs[it->fetched % AHEAD];
        j->id = sqlite3_column_int64(st, 0);
        j->h = (mt_chunk_header){.heap = sqlite3_column_int(st, 8),
                                 .seq_first = sqlite3_column_int64(st, 1),
                                 .count = sqlite3_column_int64(st, 2),
                                 .seq_last = sqlite3_column_int64(st, 5),
                                 .ts_first = sqlite3_column_int64(st, 6),
                                 .ts_last = sqlite3_column_int64(st, 7)};
        j->codec = sqlite3_column_int64(st, 3);
        const void* blob = sqlite3_column_blob(st, 4);
        j->len = (size_t)sqlite3_column_bytes(st, 4);
        // A blob that cannot be copied fails as "out of memory" when its chunk is taken.
        if (j->len && (j->data = malloc(j->len)))
            memcpy(j->data, blob, j->len);
        if (j->id > it->last_chunk)
            it->last_chunk = j->id;
        if (it->worker_running) {
            pthread_mutex_lock(&it->lock);
            it->fetched++;
            pthread_cond_signal(&it->work_cond);
            pthread_mutex_unlock(&it->lock);
        } else {
            it->fetched++;
        }
    }
}

// Whether a fetched chunk waits to be taken, and the seq its events start at.
static bool next_chunk_seq(const mt_event_iter* it, uint64_t* seq) {
    if (it->taken == it->fetched)
        return false;
    *seq = (uint64_t)it->jobs[it->taken % AHEAD].h.seq_first;
    return true;
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
    return 0;
}

// Takes the next fetched chunk into the merge (decoding it here unless the worker does),
// then fetches more rows. Returns 0, or the chunk's or the statement's error.
static int load_next(mt_event_iter* it) {
    chunk_job* j = &it->jobs[it->taken % AHEAD];
    if (it->worker_running) {
        pthread_mutex_lock(&it->lock);
        while (it->decoded == it->taken)
            pthread_cond_wait(&it->done_cond, &it->lock);
        pthread_mutex_unlock(&it->lock);
    } else {
        decode_job(&it->coder, it->want_codec, j);
        it->decoded++;
    }
    int rc = 0;
    if (j->rc == 0) {
        if ((rc = heap_push(it, j->c)) == 0)
            j->c = NULL; // the merge's now
        else
            snprintf(it->err, sizeof it->err, "out of memory");
    } else if (j->rc == -ENOMEM) {
        snprintf(it->err, sizeof it->err, "out of memory");
        rc = -ENOMEM;
    } else {
        rc = bad_chunk(it, j->id, j->h.count, j->why);
    }
    job_clear(j);
    it->taken++;
    if (rc)
        return rc;
    if (!it->worker_running && it->taken == THREAD_AFTER)
        start_worker(it);
    fetch_rows(it, it->worker_running ? AHEAD : 1);
    if (it->taken == it->fetched && it->fetch_rc) {
        snprintf(it->err, sizeof it->err, "%s", it->fetch_err);
        return it->fetch_rc;
    }
    return 0;
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

void mt_capture_iter_requested_sizes(mt_event_iter* it) {
    it->requested = true;
}

int mt_capture_iter_open(mt_capture* cap, int heap, mt_event_iter** out) {
    return mt_capture_iter_open_chunks(cap, heap, 0, INT64_MAX, out);
}

static int open_iter(mt_capture* cap, int heap, int64_t after_chunk, int64_t upto_chunk,
                     uint64_t after_seq, mt_event_iter** out);

int mt_capture_iter_open_chunks(mt_capture* cap, int heap, int64_t after_chunk, int64_t upto_chunk,
                                mt_event_iter** out) {
    return open_iter(cap, heap, after_chunk, upto_chunk, 0, out);
}

int mt_capture_iter_open_after(mt_capture* cap, int heap, uint64_t after_seq, mt_event_iter** out) {
    return open_iter(cap, heap, 0, INT64_MAX, after_seq, out);
}

static int open_iter(mt_capture* cap, int heap, int64_t after_chunk, int64_t upto_chunk,
                     uint64_t after_seq, mt_event_iter** out) {
    *out = NULL;
    mt_event_iter* it = calloc(1, sizeof *it);
    if (!it)
        return -ENOMEM;
    it->cap = cap;
    it->heap_id = heap;
#define CHUNKS_OF(h)                                                                               \
    "SELECT id, seq_first, count, codec, data, seq_last, ts_first, ts_last, heap"                  \
    " FROM event_chunk WHERE heap=" h " AND id>?2 AND id<=?3 AND seq_last>?4"
    // MT_HEAP_PROGRAM: the program's heaps' chunks merged, each read in order through the index.
    const char* sql = heap == MT_HEAP_PROGRAM
                          ? CHUNKS_OF("1") " UNION ALL " CHUNKS_OF("4") " UNION ALL " CHUNKS_OF(
                                "5") " ORDER BY seq_first, id"
                          : CHUNKS_OF("?1") " ORDER BY seq_first, id";
#undef CHUNKS_OF
    if (sqlite3_prepare_v2(cap->db, sql, -1, &it->chunks, NULL) != SQLITE_OK) {
        free(it);
        return -EPROTO;
    }
    if (heap != MT_HEAP_PROGRAM)
        sqlite3_bind_int(it->chunks, 1, heap);
    sqlite3_bind_int64(it->chunks, 2, after_chunk);
    sqlite3_bind_int64(it->chunks, 3, upto_chunk);
    // after_seq 0: every chunk, whatever its seqs (a damaged one's too, to be reported).
    sqlite3_bind_int64(it->chunks, 4, after_seq ? (int64_t)after_seq : INT64_MIN);
    it->last_chunk = after_chunk;
    it->after_seq = after_seq;
    it->want_codec = mt_codec_of_schema(cap->version);
    *out = it; // on an error too: the caller reads the message, then closes
    int rc = read_sampling(it);
    if (rc)
        return rc;
    fetch_rows(it, 1);
    if (it->fetched == 0 && it->fetch_rc) {
        snprintf(it->err, sizeof it->err, "%s", it->fetch_err);
        return it->fetch_rc;
    }
    return 0;
}

static int next_event(mt_event_iter* it, mt_event* ev) {
    // Any unread event with a smaller seq lives in a chunk with seq_first <= that seq, so
    // loading every chunk that starts at or below the current minimum keeps the merge exact.
    uint64_t first;
    while (next_chunk_seq(it, &first) && (it->nheap == 0 || first <= it->heap[0].seq)) {
        int rc = load_next(it);
        if (rc)
            return rc;
    }
    if (it->nheap == 0)
        return 0;
    cursor* c = it->heap[0].c;
    // The merge hops between chunks decoded elsewhere (another core): fetch a cursor's next
    // lines before they are needed (past the end it is only a hint, never a fault).
    __builtin_prefetch(&c->ev[c->pos + 4]);
    *ev = c->ev[c->pos++];
    if (it->any && ev->seq <= it->last_seq) {
        snprintf(it->err, sizeof it->err,
                 "corrupt capture: event seq %llu appears twice (overlapping event chunks)",
                 (unsigned long long)ev->seq);
        return -EPROTO;
    }
    it->any = true;
    it->last_seq = ev->seq;
    if (it->sample_bytes && !it->requested && mt_sample_kind(ev->heap, ev->kind))
        ev->size = mt_sample_weight_bytes(ev->size, it->sample_bytes);
    if (c->pos < c->n) {
        it->heap[0].seq = c->ev[c->pos].seq;
    } else {
        it->heap[0] = it->heap[--it->nheap];
        cursor_free(c);
    }
    if (it->nheap > 1)
        sift_down(it, 0);
    return 1;
}

int mt_capture_iter_next(mt_event_iter* it, mt_event* ev) {
    int rc;
    // A chunk that holds after_seq holds events before it too: those are passed over.
    while ((rc = next_event(it, ev)) == 1 && it->after_seq && ev->seq <= it->after_seq)
        ;
    return rc;
}

int64_t mt_capture_iter_last_chunk(const mt_event_iter* it) {
    return it->last_chunk;
}

const char* mt_capture_iter_error(const mt_event_iter* it) {
    return it->err[0] ? it->err : "corrupt capture";
}

void mt_capture_iter_close(mt_event_iter* it) {
    if (!it)
        return;
    stop_worker(it); // a report may stop early: the worker and its jobs end here
    for (uint64_t k = it->taken; k < it->fetched; k++)
        job_clear(&it->jobs[k % AHEAD]);
    for (size_t i = 0; i < it->nheap; i++)
        cursor_free(it->heap[i].c);
    free(it->heap);
    mt_codec_chunk_coder_free(it->coder);
    sqlite3_finalize(it->chunks);
    free(it);
}
