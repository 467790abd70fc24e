// SPDX-License-Identifier: MIT
// Reading a log: a reader thread splits and scans lines while the caller's thread applies
// them in order; the entry points mr_npu_parse_fd and mr_npu_parse_file.
#include "messages.h"
#include "npu_internal.h"
#include "output_file.h"
#include "siphash.h"

#include "memtrace/input.h"
#include "memtrace/vec.h"

#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

// ---- the line pipeline: a reader thread splits and scans lines (the costly, stateless
// part) while the parser thread applies them in order (the stateful part).

// What the parser needs of one line after the gate.
typedef struct scanned {
    uint64_t lineno;
    uint64_t cur_val, leg_val;
    uint32_t key_off, key_len; // the function key in the batch's arena (len 0: none)
    uint8_t cur, leg;          // rule for the current format / legacy reading (L_COUNT: none)
    bool before_ddr;
    bool end_pass; // "End Pass StaticAllocation": ends the legacy reading
} scanned;

#define BATCH_LINES 8192
#define NBATCHES 4

typedef struct batch {
    scanned* v;
    size_t n;
    char* arena;
    size_t alen, acap;
    bool full;
} batch;

typedef struct pipeline {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    batch b[NBATCHES];
    bool eof, stop;
    int rc;                 // the reader's error (read failure, out of memory)
    char err[256];          // its message
    atomic_bool legacy_off; // set by the parser: End Pass lines no longer matter
    // reader state
    int fd;
    const char* name;
    bool gate;
    uint64_t lineno, long_lines, size, done;
} pipeline;

// Scans one line; returns true when the parser must see it.
static bool examine(pipeline* q, const unsigned char* s, size_t n, scanned* out, batch* b) {
    if (!q->gate) {
        // The gate line itself is then examined like any other (§2.1).
        if (!memmem(s, n, "Start Pass StaticAllocation", 27))
            return false;
        q->gate = true;
    }
    scan sc;
    mr_npu_scan_line(&sc, s, n);
    static const bool all[L_COUNT] = {true, true, true, true, true, true, true, true};
    memset(out, 0, sizeof *out);
    out->lineno = q->lineno;
    out->before_ddr = sc.before_ddr;
    out->end_pass = !atomic_load_explicit(&q->legacy_off, memory_order_relaxed) &&
                    memmem(s, n, "End Pass StaticAllocation", 25) != NULL;
    out->cur = out->leg = L_COUNT;
    if (sc.key) {
        out->cur = (uint8_t)mr_npu_choose(&sc, all, false);
        out->cur_val = out->cur < L_COUNT ? sc.val[out->cur] : 0;
        if (MT_VEC_RESERVE(&b->arena, &b->acap, b->alen + sc.keylen)) {
            q->rc = -ENOMEM; // reported when the reader is done
            return false;
        }
        memcpy(b->arena + b->alen, sc.key, sc.keylen);
        out->key_off = (uint32_t)b->alen;
        out->key_len = (uint32_t)sc.keylen;
        b->alen += sc.keylen;
    } else {
        bool ok[L_COUNT];
        for (int l = 0; l < L_COUNT; l++)
            ok[l] = sc.found[l] && (l == L_BEFORE || mr_npu_legacy_prefix(s, sc.pos[l]));
        out->leg = (uint8_t)mr_npu_choose(&sc, ok, true);
        out->leg_val = out->leg < L_COUNT ? sc.val[out->leg] : 0;
    }
    return out->key_len || out->leg < L_COUNT || out->end_pass;
}

static int consume(parser* p, pipeline* q, const scanned* sd, const char* arena) {
    p->lineno = sd->lineno;
    if (p->legacy_on) {
        // The 2025 script stopped at the first End Pass (§5).
        if (sd->end_pass) {
            p->legacy_on = false;
            atomic_store_explicit(&q->legacy_off, true, memory_order_relaxed);
        } else if (!sd->key_len) {
            int rc = mr_npu_act(p, &p->leg, &p->legacy, sd->leg, sd->leg_val, sd->before_ddr, true);
            if (rc)
                return rc;
        }
    }
    if (!sd->key_len)
        return 0;
    func* f = mr_npu_func_get(p, arena + sd->key_off, sd->key_len);
    if (!f)
        return p->err[0] ? -EPROTO : -ENOMEM;
    int rc = mr_npu_act(p, &p->cur, f, sd->cur, sd->cur_val, sd->before_ddr, false);
    if (!rc && p->legacy_on && p->cur.max.n > 0) {
        // A current-format max point settles the format: drop the legacy reading.
        p->legacy_on = false;
        atomic_store_explicit(&q->legacy_off, true, memory_order_relaxed);
        mr_npu_store_free(&p->leg);
    }
    return rc;
}

// The terminator of the line at s: '\n', or '\r' (universal newlines: a lone CR ends a line
// too, and CRLF is one terminator).
static const unsigned char* find_eol(const unsigned char* s, size_t n) {
    const unsigned char* lf = memchr(s, '\n', n);
    const unsigned char* cr = memchr(s, '\r', lf ? (size_t)(lf - s) : n);
    return cr ? cr : lf;
}

// Hands the current batch to the parser and takes the next free one (NULL: stop).
static batch* hand_over(pipeline* q, batch* cur, size_t* slot) {
    pthread_mutex_lock(&q->mu);
    if (cur) {
        cur->full = true;
        *slot = (*slot + 1) % NBATCHES;
        pthread_cond_broadcast(&q->cv);
    }
    while (q->b[*slot].full && !q->stop)
        pthread_cond_wait(&q->cv, &q->mu);
    batch* b = q->stop ? NULL : &q->b[*slot];
    pthread_mutex_unlock(&q->mu);
    if (b)
        b->n = b->alen = 0;
    return b;
}

static void add_line(pipeline* q, batch** b, size_t* slot, const unsigned char* s, size_t n) {
    if (!*b)
        return;
    if (examine(q, s, n, &(*b)->v[(*b)->n], *b) && ++(*b)->n == BATCH_LINES)
        *b = hand_over(q, *b, slot);
}

// Hands over every complete line of buf[start, len) and returns where the unfinished rest
// begins. *skipping: the line under way was too long and is dropped up to its end;
// *after_cr: the last line ended with a CR at the end of buf, so an LF read next is its.
static size_t take_lines(pipeline* q, unsigned char* buf, size_t start, size_t len, batch** b,
                         size_t* slot, bool* skipping, bool* after_cr) {
    const unsigned char* eol;
    while (*b && (eol = find_eol(buf + start, len - start))) {
        size_t e = (size_t)(eol - buf);
        q->lineno++;
        if (*skipping) {
            *skipping = false;
        } else {
            unsigned char term = buf[e];
            buf[e] = '\0';
            add_line(q, b, slot, buf + start, e - start);
            buf[e] = term;
        }
        start = e + 1;
        if (*eol == '\r') {
            if (start < len && buf[start] == '\n')
                start++;
            else if (start == len)
                *after_cr = true;
        }
    }
    return start;
}

static void* reader_main(void* arg) {
    pipeline* q = arg;
    size_t cap = MR_NPU_LINE_LIMIT + READ_CHUNK, slot = 0;
    unsigned char* buf = malloc(cap);
    batch* b = hand_over(q, NULL, &slot);
    if (!buf) {
        q->rc = -ENOMEM;
        b = NULL;
    }
    size_t len = 0;
    bool skipping = false, after_cr = false;
    while (b) {
        ssize_t got = read(q->fd, buf + len, cap - len);
        if (got < 0) {
            if (errno == EINTR)
                continue;
            q->rc = -errno;
            snprintf(q->err, sizeof q->err, "read failed: %s", strerror(errno));
            break;
        }
        size_t start = 0;
        len += (size_t)got;
        q->done += (uint64_t)got;
        if (q->size)
            mr_messages_progress("reading log", (double)q->done / (double)q->size);
        if (after_cr && len > 0) {
            // The LF of a CRLF split across reads belongs to the line already ended.
            if (buf[0] == '\n')
                start = 1;
            after_cr = false;
        }
        start = take_lines(q, buf, start, len, &b, &slot, &skipping, &after_cr);
        if (!b)
            break;
        if (got == 0) { // EOF: the last line may lack a terminator
            if (start < len && !skipping) {
                q->lineno++;
                buf[len] = '\0'; // len < cap: the read before EOF asked for cap - len > 0
                add_line(q, &b, &slot, buf + start, len - start);
            }
            break;
        }
        if (len - start >= MR_NPU_LINE_LIMIT) {
            // Bounded memory per line: a line this long is not a memory-usage line, drop it.
            if (!skipping) {
                q->long_lines++;
                fprintf(stderr, "memreport: %s: line %llu is longer than %u bytes; skipped\n",
                        q->name, (unsigned long long)q->lineno + 1, MR_NPU_LINE_LIMIT);
            }
            skipping = true;
            start = len;
        }
        memmove(buf, buf + start, len - start);
        len -= start;
    }
    free(buf);
    if (q->size)
        mr_messages_progress("reading log", -1);
    pthread_mutex_lock(&q->mu);
    if (b && b->n) {
        b->full = true;
    }
    q->eof = true;
    pthread_cond_broadcast(&q->cv);
    pthread_mutex_unlock(&q->mu);
    return NULL;
}

// The parser's side: applies the batches in order until the reader is done.
static int read_lines(parser* p, int fd, mr_npu_log* log) {
    pipeline q = {.fd = fd, .name = p->name, .size = p->size};
    atomic_init(&q.legacy_off, false);
    int rc = 0;
    for (int i = 0; i < NBATCHES; i++)
        if (!(q.b[i].v = malloc(BATCH_LINES * sizeof *q.b[i].v)))
            rc = -ENOMEM;
    pthread_t th;
    pthread_mutex_init(&q.mu, NULL);
    pthread_cond_init(&q.cv, NULL);
    if (!rc && pthread_create(&th, NULL, reader_main, &q) != 0)
        rc = -EAGAIN;
    bool started = rc == 0;
    for (size_t slot = 0; rc == 0;) {
        pthread_mutex_lock(&q.mu);
        while (!q.b[slot].full && !q.eof)
            pthread_cond_wait(&q.cv, &q.mu);
        bool have = q.b[slot].full;
        pthread_mutex_unlock(&q.mu);
        if (!have)
            break; // eof and nothing left
        batch* b = &q.b[slot];
        for (size_t i = 0; i < b->n && !rc; i++)
            rc = consume(p, &q, &b->v[i], b->arena);
        pthread_mutex_lock(&q.mu);
        b->full = false;
        pthread_cond_broadcast(&q.cv);
        pthread_mutex_unlock(&q.mu);
        slot = (slot + 1) % NBATCHES;
    }
    if (started) {
        pthread_mutex_lock(&q.mu);
        q.stop = true; // an error here: the reader stops at its next hand-over
        pthread_cond_broadcast(&q.cv);
        pthread_mutex_unlock(&q.mu);
        pthread_join(th, NULL);
    }
    if (!rc && q.rc) {
        rc = q.rc;
        if (q.err[0])
            snprintf(p->err, p->errlen, "%s", q.err);
    }
    p->gate = q.gate;
    p->long_lines = q.long_lines;
    log->lines = q.lineno;
    for (int i = 0; i < NBATCHES; i++) {
        free(q.b[i].v);
        free(q.b[i].arena);
    }
    pthread_mutex_destroy(&q.mu);
    pthread_cond_destroy(&q.cv);
    return rc;
}

int mr_npu_parse_fd(int fd, const char* name, bool events, mr_npu_log* out, char* err,
                    size_t errlen) {
    memset(out, 0, sizeof *out);
    parser p = {.name = name, .events = events, .legacy_on = true, .err = err, .errlen = errlen};
    p.legacy.seen = MAX_FUNCS + 1; // its own key space in the buffer pairing
    err[0] = '\0';
    uint64_t key[2];
    mr_siphash_random_key(key, &p);
    p.k0 = key[0];
    p.k1 = key[1];
    struct stat st;
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode))
        p.size = (uint64_t)st.st_size;
    int rc = mr_npu_table_grow(&p);
    if (!rc)
        rc = read_lines(&p, fd, out);
    rc = mr_npu_finish(&p, rc, out);
    mr_npu_parser_free(&p);
    if (rc) {
        if (rc == -ENOMEM && !err[0])
            snprintf(err, errlen, "out of memory");
        mr_npu_log_free(out);
    }
    return rc;
}

int mr_npu_parse_file(const char* path, bool events, mr_npu_log* out, char* err, size_t errlen) {
    memset(out, 0, sizeof *out);
    int fd = mt_input_open(path, err, errlen);
    if (fd < 0)
        return fd;
    posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
    int rc = mr_npu_parse_fd(fd, path, events, out, err, errlen);
    close(fd);
    return rc;
}
