// SPDX-License-Identifier: MIT
// What each event field costs in a capture, and what the chunk codec costs the writer thread
// (issue 14). Reads the chunks of CAPTURE as the tracer wrote them (same chunk boundaries),
// then, with the codec the tracer writes today:
// - re-encodes every chunk at each zstd level asked for: bytes per event and CPU ns per event
//   of this thread (the writer's encoding work; median of the repetitions);
// - decompresses each chunk's zstd frame back into its precoded columns and compresses each
//   column alone with zstd at the default level: the bytes each column takes by itself;
// - encodes the events again with one field made constant (ts 0, one tid, seq without gaps,
//   address 0, size 0, callsite 0, kinds reduced to malloc/free): the bytes that field adds.
// - CODEC_FIELDS_QUANTA=1: the bytes per event with timestamps rounded to coarser clocks.
// - CODEC_FIELDS_DICT=1: the chunks' precoded columns compressed with a dictionary shared by
//   the capture's chunks: the previous chunk as a prefix (a dictionary's best case), or one
//   trained on the first chunks and stored once.
// - CODEC_FIELDS_CODEC=N: encode in codec N (3 to 5) instead of the current one.
// Asserts nothing. Usage: codec_fields CAPTURE [LEVEL...] (levels default: 1 3 -1).
#define _GNU_SOURCE
#include "memtrace/codec.h"
#include "memtrace/schema.h"

#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zdict.h>
#include <zstd.h>

#define REPS 3

typedef struct chunk {
    int heap;
    mt_event* ev;
    size_t n;
} chunk;

static chunk* chunks;
static size_t nchunks, nevents, stored_bytes;
static int64_t unit = 1; // codec 4's time unit: the capture's resolution (CODEC_FIELDS_UNIT)
static int codec_used;   // the codec chunks are encoded in (CODEC_FIELDS_CODEC)

static void die(const char* what) {
    fprintf(stderr, "codec_fields: %s\n", what);
    exit(2);
}

static void load(const char* path) {
    sqlite3* db;
    sqlite3_stmt* st;
    if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(db,
                           "SELECT heap, seq_first, seq_last, ts_first, ts_last, count, codec,"
                           " data FROM event_chunk ORDER BY id",
                           -1, &st, NULL) != SQLITE_OK)
        die("cannot read the capture's event_chunk table");
    mt_chunk_coder* c = mt_codec_chunk_coder_new();
    size_t cap = 0;
    while (sqlite3_step(st) == SQLITE_ROW) {
        mt_chunk_header h = {sqlite3_column_int64(st, 0), sqlite3_column_int64(st, 1),
                             sqlite3_column_int64(st, 2), sqlite3_column_int64(st, 3),
                             sqlite3_column_int64(st, 4), sqlite3_column_int64(st, 5)};
        int codec = sqlite3_column_int(st, 6);
        const uint8_t* data = sqlite3_column_blob(st, 7);
        size_t len = (size_t)sqlite3_column_bytes(st, 7);
        if (h.count <= 0 || h.count > (1 << 22))
            die("a chunk with a bad count");
        mt_event* ev = malloc((size_t)h.count * sizeof *ev);
        if (!ev || mt_codec_chunk_decode(c, codec, &h, data, len, ev) != 0)
            die("a chunk does not decode");
        if (nchunks == cap) {
            cap = cap ? 2 * cap : 1024;
            chunks = realloc(chunks, cap * sizeof *chunks);
            if (!chunks)
                die("out of memory");
        }
        chunks[nchunks++] = (chunk){(int)h.heap, ev, (size_t)h.count};
        nevents += (size_t)h.count;
        stored_bytes += len;
    }
    sqlite3_finalize(st);
    if (sqlite3_prepare_v2(db, "SELECT value FROM meta WHERE key = 'time_resolution_ns'", -1, &st,
                           NULL) == SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW)
        unit = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    sqlite3_close(db);
    mt_codec_chunk_coder_free(c);
    if (!nevents)
        die("no events");
}

static double thread_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return t.tv_sec * 1e9 + t.tv_nsec;
}

static uint8_t* scratch;
static mt_chunk_coder* coder;

static size_t encode(const chunk* k, const mt_event* ev) {
    mt_chunk_header h = {k->heap, (int64_t)ev[0].seq, (int64_t)ev[k->n - 1].seq, 0,
                         0,       (int64_t)k->n};
    size_t len = mt_codec_chunk_encode(coder, codec_used, &h, ev, k->n, scratch);
    if (!len)
        die("encoding failed");
    return len;
}

// Every chunk encoded at `level`: total bytes, and the median CPU ns of REPS passes.
static void levels(int argc, char** argv) {
    printf("zstd level   B/event   encode ns/event (median of %d; min-max)\n", REPS);
    static const char* const dflt[] = {"1", "3", "-1"};
    int nl = argc > 2 ? argc - 2 : 3;
    for (int l = 0; l < nl; l++) {
        int level = atoi(argc > 2 ? argv[l + 2] : dflt[l]);
        mt_codec_chunk_coder_set_level(coder, level);
        double ns[REPS];
        size_t bytes = 0;
        for (int r = 0; r < REPS; r++) {
            bytes = 0;
            double t0 = thread_ns();
            for (size_t i = 0; i < nchunks; i++)
                bytes += encode(&chunks[i], chunks[i].ev);
            ns[r] = (thread_ns() - t0) / (double)nevents;
        }
        for (int a = 0; a < REPS; a++) // sort the few samples
            for (int b = a + 1; b < REPS; b++)
                if (ns[b] < ns[a]) {
                    double t = ns[a];
                    ns[a] = ns[b];
                    ns[b] = t;
                }
        printf("%11d  %8.3f   %6.1f (%.1f-%.1f)\n", level, (double)bytes / (double)nevents,
               ns[REPS / 2], ns[0], ns[REPS - 1]);
    }
    mt_codec_chunk_coder_set_level(coder, 3);
}

static uint64_t get_varint(const uint8_t** p, const uint8_t* end) {
    uint64_t v = 0;
    for (unsigned s = 0; s < 64 && *p < end; s += 7) {
        uint8_t b = *(*p)++;
        v |= (uint64_t)(b & 0x7f) << s;
        if (!(b & 0x80))
            return v;
    }
    die("a bad precoded header");
    return 0;
}

#define MAXCOLS 32

// Codec 3's header: count, first seq, flags, then one length per column (codec 4: the time
// unit before them).
static const char* const col_names3[] = {"kind",     "gap",  "ts lo",    "ts hi", "ts wide", "tid",
                                         "addr ref", "addr", "pair ref", "size",  "callsite"};

// zstd alone on a chunk's precoded columns: one shot (one block), or a block per column
// (flushed at each column's end), at `level`. Adds the bytes and the CPU ns to *bytes, *ns.
static ZSTD_CCtx* zc;
static void zstd_ways(const uint8_t* pre, size_t len, const size_t* ends, size_t ncols, int level,
                      uint8_t* z, size_t cap, double bytes[2], double ns[2]) {
    double t0 = thread_ns();
    size_t one = ZSTD_compressCCtx(zc, z, cap, pre, len, level);
    double t1 = thread_ns();
    ZSTD_CCtx_reset(zc, ZSTD_reset_session_only);
    ZSTD_CCtx_setParameter(zc, ZSTD_c_compressionLevel, level);
    ZSTD_CCtx_setPledgedSrcSize(zc, len);
    ZSTD_outBuffer o = {z, cap, 0};
    ZSTD_inBuffer in = {pre, 0, 0};
    for (size_t k = 0; k < ncols; k++) {
        in.size = ends[k];
        ZSTD_compressStream2(zc, &o, &in, k + 1 < ncols ? ZSTD_e_flush : ZSTD_e_end);
    }
    double t2 = thread_ns();
    bytes[0] += (double)one;
    bytes[1] += (double)o.pos;
    ns[0] += t1 - t0;
    ns[1] += t2 - t1;
}

static void columns(void) {
    int codec = codec_used;
    const char* const* names = col_names3;
    size_t ncols = sizeof col_names3 / sizeof *col_names3;
    if (codec < MT_CODEC_ZSTD_COLUMNS_CRC32C || codec > MT_CODEC_ZSTD_RUNS_CRC32C) {
        printf("(columns: the tool does not know codec %d's columns)\n", codec);
        return;
    }
    size_t raw[MAXCOLS] = {0}, alone[MAXCOLS] = {0}, header = 0, encoded = 0;
    size_t cap = 0;
    uint8_t *pre = NULL, *z = NULL;
    static const int ways_levels[] = {1, 2, 3};
    double wb[3][2] = {{0}}, wns[3][2] = {{0}};
    zc = ZSTD_createCCtx();
    for (size_t i = 0; i < nchunks; i++) {
        size_t len = encode(&chunks[i], chunks[i].ev) - MT_CHUNK_CHECKSUM_BYTES;
        encoded += len + MT_CHUNK_CHECKSUM_BYTES;
        unsigned long long size = ZSTD_getFrameContentSize(scratch, len);
        if (size > cap) {
            cap = size;
            pre = realloc(pre, cap);
            z = realloc(z, ZSTD_compressBound(cap));
        }
        size_t got = ZSTD_decompress(pre, cap, scratch, len);
        if (ZSTD_isError(got))
            die("a chunk does not decompress");
        const uint8_t *p = pre, *end = pre + got;
        get_varint(&p, end);
        get_varint(&p, end);
        p++;
        if (codec != MT_CODEC_ZSTD_COLUMNS_CRC32C)
            get_varint(&p, end);
        uint64_t lens[MAXCOLS];
        for (size_t k = 0; k < ncols; k++)
            lens[k] = get_varint(&p, end);
        header += (size_t)(p - pre);
        size_t ends[MAXCOLS], at = (size_t)(p - pre);
        for (size_t k = 0; k < ncols; k++)
            ends[k] = at += lens[k];
        for (int l = 0; l < 3; l++)
            zstd_ways(pre, got, ends, ncols, ways_levels[l], z, ZSTD_compressBound(cap), wb[l],
                      wns[l]);
        for (size_t k = 0; k < ncols; k++) {
            raw[k] += lens[k];
            if (lens[k])
                alone[k] += ZSTD_compress(z, ZSTD_compressBound(cap), p, lens[k], 3);
            p += lens[k];
        }
    }
    printf("column      precoded B/ev   alone+zstd3 B/ev\n");
    size_t traw = header, talone = 0;
    for (size_t k = 0; k < ncols; k++) {
        printf("%-10s  %13.3f   %16.3f\n", names[k], (double)raw[k] / (double)nevents,
               (double)alone[k] / (double)nevents);
        traw += raw[k];
        talone += alone[k];
    }
    printf("%-10s  %13.3f\n", "header", (double)header / (double)nevents);
    printf("%-10s  %13.3f   %16.3f (sum of the columns compressed apart)\n", "total",
           (double)traw / (double)nevents, (double)talone / (double)nevents);
    printf("encoded at the default level: %.3f B/event\n", (double)encoded / (double)nevents);
    for (int l = 0; l < 3; l++)
        printf("zstd level %d on the precoded chunks, one block: %.3f B/event %.1f ns/event; a "
               "block per column: %.3f B/event %.1f ns/event\n",
               ways_levels[l], wb[l][0] / (double)nevents, wns[l][0] / (double)nevents,
               wb[l][1] / (double)nevents, wns[l][1] / (double)nevents);
    ZSTD_freeCCtx(zc);
    free(pre);
    free(z);
}

// The precoded content of chunk i (its zstd frame decompressed) into *pre; its length.
static size_t precoded(size_t i, uint8_t** pre, size_t* cap) {
    size_t len = encode(&chunks[i], chunks[i].ev) - MT_CHUNK_CHECKSUM_BYTES;
    unsigned long long size = ZSTD_getFrameContentSize(scratch, len);
    if (size > *cap) {
        *cap = size;
        *pre = realloc(*pre, *cap);
    }
    size_t got = ZSTD_decompress(*pre, *cap, scratch, len);
    if (ZSTD_isError(got))
        die("a chunk does not decompress");
    return got;
}

// A dictionary shared by the chunks (CODEC_FIELDS_DICT): each chunk's precoded columns as one
// zstd frame at level 3 (one block: a dictionary applies to the frame), without a dictionary,
// with the previous chunk as a prefix, and with a dictionary trained on the first chunks (a
// tenth of them, at most 100) and counted once. B/event and CPU ns/event of each.
static void dictionary(void) {
    uint8_t *pre = NULL, *prev = NULL, *z = NULL;
    size_t cap = 0, prev_len = 0, zcap = 0;
    ZSTD_CCtx* dz = ZSTD_createCCtx();
    // Training samples: the first chunks' precoded bytes, end to end.
    size_t ntrain = nchunks / 10 > 100 ? 100 : nchunks / 10 + 1, train_len = 0;
    uint8_t* train = NULL;
    size_t* sizes = malloc(ntrain * sizeof *sizes);
    for (size_t i = 0; i < ntrain; i++) {
        size_t len = precoded(i, &pre, &cap);
        train = realloc(train, train_len + len);
        memcpy(train + train_len, pre, len);
        train_len += len;
        sizes[i] = len;
    }
    static const size_t dict_sizes[] = {4096, 16384, 65536};
    ZSTD_CDict* cdict[3] = {NULL};
    size_t dict_len[3] = {0};
    for (int d = 0; d < 3; d++) {
        uint8_t* dict = malloc(dict_sizes[d]);
        dict_len[d] = ZDICT_trainFromBuffer(dict, dict_sizes[d], train, sizes, (unsigned)ntrain);
        if (ZDICT_isError(dict_len[d]))
            dict_len[d] = 0;
        else
            cdict[d] = ZSTD_createCDict(dict, dict_len[d], 3);
        free(dict);
    }
    free(train);
    free(sizes);
    double bytes[5] = {0}, ns[5] = {0};
    for (size_t i = 0; i < nchunks; i++) {
        size_t len = precoded(i, &pre, &cap);
        if (ZSTD_compressBound(len) > zcap) {
            zcap = ZSTD_compressBound(len);
            z = realloc(z, zcap);
        }
        for (int way = 0; way < 5; way++) {
            double t0 = thread_ns();
            size_t got;
            if (way == 0) {
                got = ZSTD_compressCCtx(dz, z, zcap, pre, len, 3);
            } else if (way == 1) {
                ZSTD_CCtx_reset(dz, ZSTD_reset_session_only);
                ZSTD_CCtx_setParameter(dz, ZSTD_c_compressionLevel, 3);
                if (prev_len)
                    ZSTD_CCtx_refPrefix(dz, prev, prev_len);
                got = ZSTD_compress2(dz, z, zcap, pre, len);
            } else {
                got = cdict[way - 2]
                          ? ZSTD_compress_usingCDict(dz, z, zcap, pre, len, cdict[way - 2])
                          : 0;
            }
            ns[way] += thread_ns() - t0;
            bytes[way] += ZSTD_isError(got) ? 0 : (double)got;
        }
        prev = realloc(prev, len);
        memcpy(prev, pre, len);
        prev_len = len;
    }
    printf("dictionary (precoded chunks, one frame each, level 3)   B/event   ns/event\n");
    printf("none                                                    %7.3f   %8.1f\n",
           bytes[0] / (double)nevents, ns[0] / (double)nevents);
    printf("the previous chunk as a prefix                          %7.3f   %8.1f\n",
           bytes[1] / (double)nevents, ns[1] / (double)nevents);
    for (int d = 0; d < 3; d++)
        printf("trained on %3zu chunks, %5zu B (counted once)           %7.3f   %8.1f\n", ntrain,
               dict_len[d], (bytes[2 + d] + (double)dict_len[d]) / (double)nevents,
               ns[2 + d] / (double)nevents);
    for (int d = 0; d < 3; d++)
        ZSTD_freeCDict(cdict[d]);
    ZSTD_freeCCtx(dz);
    free(pre);
    free(prev);
    free(z);
}

// One field made constant in a copy of the events.
enum { F_TS, F_KIND, F_SEQ, F_TID, F_ADDR, F_SIZE, F_CALLSITE, NFIELDS };
static const char* const field_names[NFIELDS] = {"ts",   "kind", "seq",     "tid",
                                                 "addr", "size", "callsite"};

static void flatten(mt_event* ev, size_t n, int f) {
    for (size_t i = 0; i < n; i++) {
        mt_event* e = &ev[i];
        switch (f) {
        case F_TS:
            e->ts = 0;
            break;
        case F_KIND:
            e->kind = mt_kind_is_free(e->kind) ? MT_KIND_FREE : MT_KIND_MALLOC;
            break;
        case F_SEQ:
            e->seq = ev[0].seq + i;
            break;
        case F_TID:
            e->tid = ev[0].tid;
            break;
        case F_ADDR:
            e->addr = 0;
            break;
        case F_SIZE:
            e->size = 0;
            break;
        case F_CALLSITE:
            e->callsite = 0;
            break;
        }
    }
}

static void ablation(void) {
    size_t base = 0;
    for (size_t i = 0; i < nchunks; i++)
        base += encode(&chunks[i], chunks[i].ev);
    printf("field      B/ev the field adds (all events encoded with it constant; level 3)\n");
    mt_event* copy = malloc((1 << 22) * sizeof *copy);
    for (int f = 0; f < NFIELDS; f++) {
        size_t bytes = 0;
        for (size_t i = 0; i < nchunks; i++) {
            memcpy(copy, chunks[i].ev, chunks[i].n * sizeof *copy);
            flatten(copy, chunks[i].n, f);
            bytes += encode(&chunks[i], copy);
        }
        printf("%-9s  %6.3f\n", field_names[f], ((double)base - (double)bytes) / (double)nevents);
    }
    free(copy);
}

// Order-0 entropy of a histogram, in bits per sample.
static double entropy(const size_t* hist, size_t nbins, size_t total) {
    double h = 0;
    for (size_t b = 0; b < nbins; b++)
        if (hist[b])
            h -= (double)hist[b] / (double)total * log2((double)hist[b] / (double)total);
    return h;
}

// The timestamps' floor for a coder that sees each delta alone (order 0), and for one that
// knows the event's kind and the previous event's kind: the entropy of the ts deltas within
// chunks (deltas of 2^16 ns and more, or negative, counted as one symbol each, so this is a
// lower bound).
#define TS_BINS 65536
static void ts_entropy(void) {
    size_t* h0 = calloc(TS_BINS, sizeof *h0);
    size_t* hk = calloc((size_t)TS_BINS * 4, sizeof *hk);
    size_t total = 0;
    for (size_t i = 0; i < nchunks; i++)
        for (size_t j = 1; j < chunks[i].n; j++) {
            const mt_event* e = &chunks[i].ev[j];
            int64_t dt = e->ts - e[-1].ts;
            size_t b = dt < 0 || dt >= TS_BINS - 1 ? TS_BINS - 1 : (size_t)dt;
            size_t ctx = (size_t)mt_kind_is_free(e->kind) * 2 + mt_kind_is_free(e[-1].kind);
            h0[b]++;
            hk[ctx * TS_BINS + b]++;
            total++;
        }
    double hcond = 0;
    for (size_t c = 0; c < 4; c++) {
        size_t n = 0;
        for (size_t b = 0; b < TS_BINS; b++)
            n += hk[c * TS_BINS + b];
        if (n)
            hcond += (double)n / (double)total * entropy(hk + c * TS_BINS, TS_BINS, n);
    }
    printf("ts delta entropy: %.3f bits/event order 0 (%.3f B), %.3f bits knowing (kind, previous "
           "kind) free or not (%.3f B)\n",
           entropy(h0, TS_BINS, total), entropy(h0, TS_BINS, total) / 8, hcond, hcond / 8);
    free(h0);
    free(hk);
}

// Candidate layouts of the ts delta (as codec 3's two bytes, narrow deltas only), each stream
// compressed alone: one stream; split by whether the event is a free; split by whether it and
// the previous event are frees.
static void ts_split(void) {
    uint8_t* st[4][2];
    size_t cap = 1 << 22;
    for (int c = 0; c < 4; c++)
        for (int b = 0; b < 2; b++)
            st[c][b] = malloc(cap);
    uint8_t* z = malloc(ZSTD_compressBound(cap));
    double bytes[3] = {0};
    for (size_t i = 0; i < nchunks; i++) {
        for (int way = 0; way < 3; way++) {
            size_t len[4] = {0};
            for (size_t j = 0; j < chunks[i].n; j++) {
                const mt_event* e = &chunks[i].ev[j];
                int64_t dt = j ? e->ts - e[-1].ts : 0;
                if (dt < 0 || dt >= 0xffff)
                    dt = 0xffff;
                int c = way == 0 ? 0
                        : way == 1
                            ? mt_kind_is_free(e->kind)
                            : mt_kind_is_free(e->kind) * 2 + (j && mt_kind_is_free(e[-1].kind));
                st[c][0][len[c]] = (uint8_t)dt;
                st[c][1][len[c]++] = (uint8_t)(dt >> 8);
            }
            for (int c = 0; c < 4; c++)
                for (int b = 0; b < 2; b++)
                    if (len[c])
                        bytes[way] +=
                            (double)ZSTD_compress(z, ZSTD_compressBound(cap), st[c][b], len[c], 3);
        }
    }
    printf("ts bytes alone+zstd3: one stream %.3f B/event, split by free %.3f, by (free, previous "
           "free) %.3f\n",
           bytes[0] / (double)nevents, bytes[1] / (double)nevents, bytes[2] / (double)nevents);
    for (int c = 0; c < 4; c++)
        for (int b = 0; b < 2; b++)
            free(st[c][b]);
    free(z);
}

// Bigger chunks (CODEC_FIELDS_MERGE=k): k consecutive chunks of the same heap and thread,
// in seq order, merged into one, as a tracer with k times larger buffers would write them.
static void merge_chunks(size_t k) {
    size_t out = 0;
    for (size_t i = 0; i < nchunks;) {
        chunk m = chunks[i++];
        size_t parts = 1;
        while (parts < k && i < nchunks && chunks[i].heap == m.heap &&
               chunks[i].ev[0].tid == m.ev[0].tid && chunks[i].ev[0].seq > m.ev[m.n - 1].seq) {
            m.ev = realloc(m.ev, (m.n + chunks[i].n) * sizeof *m.ev);
            memcpy(m.ev + m.n, chunks[i].ev, chunks[i].n * sizeof *m.ev);
            m.n += chunks[i].n;
            free(chunks[i++].ev);
            parts++;
        }
        chunks[out++] = m;
    }
    nchunks = out;
}

// Timestamps rounded down to a multiple of q ns (a coarser clock, MEMTRACE_TIME_NS): B/event
// at level 3 with the times kept in ns (as codec 3 had to) and counted in q (codec 4).
static void ts_quanta(void) {
    static const int64_t quanta[] = {1, 100, 1000, 10000, 100000, 1000000};
    mt_event* copy = malloc((1 << 22) * sizeof *copy);
    printf("ts quantum ns   B/event in ns   in the quantum\n");
    for (size_t k = 0; k < sizeof quanta / sizeof *quanta; k++) {
        size_t bytes[2] = {0};
        for (int way = 0; way < 2; way++) {
            mt_codec_chunk_coder_set_time_unit(coder, way ? quanta[k] : 1);
            for (size_t i = 0; i < nchunks; i++) {
                memcpy(copy, chunks[i].ev, chunks[i].n * sizeof *copy);
                for (size_t j = 0; j < chunks[i].n; j++)
                    copy[j].ts -= copy[j].ts % quanta[k];
                bytes[way] += encode(&chunks[i], copy);
            }
        }
        printf("%13lld   %13.3f   %14.3f\n", (long long)quanta[k],
               (double)bytes[0] / (double)nevents, (double)bytes[1] / (double)nevents);
    }
    mt_codec_chunk_coder_set_time_unit(coder, unit);
    free(copy);
}

int main(int argc, char** argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: codec_fields CAPTURE [LEVEL...]\n");
        return 1;
    }
    load(argv[1]);
    if (getenv("CODEC_FIELDS_MERGE"))
        merge_chunks((size_t)atoi(getenv("CODEC_FIELDS_MERGE")));
    coder = mt_codec_chunk_coder_new();
    scratch = malloc(mt_codec_bound(1 << 22));
    codec_used = getenv("CODEC_FIELDS_CODEC") ? atoi(getenv("CODEC_FIELDS_CODEC"))
                                              : mt_codec_of_schema(MEMTRACE_SCHEMA_VERSION);
    if (!coder || !scratch)
        die("out of memory");
    if (getenv("CODEC_FIELDS_UNIT"))
        unit = atoll(getenv("CODEC_FIELDS_UNIT"));
    mt_codec_chunk_coder_set_time_unit(coder, unit);
    printf("%s: %zu events in %zu chunks (%.1f a chunk), stored %.3f B/event\n", argv[1], nevents,
           nchunks, (double)nevents / (double)nchunks, (double)stored_bytes / (double)nevents);
    if (getenv("CODEC_FIELDS_LEVELS")) { // the levels' sizes and times only
        levels(argc, argv);
        return 0;
    }
    if (getenv("CODEC_FIELDS_TS")) {
        ts_split();
        return 0;
    }
    if (getenv("CODEC_FIELDS_QUANTA")) {
        ts_quanta();
        return 0;
    }
    if (getenv("CODEC_FIELDS_SIZES")) { // each chunk's row length, a line each, for tests of
        // the SQLite pages they take
        FILE* f = fopen(getenv("CODEC_FIELDS_SIZES"), "w");
        if (!f)
            die("cannot write CODEC_FIELDS_SIZES");
        for (size_t i = 0; i < nchunks; i++)
            fprintf(f, "%d %zu %zu\n", chunks[i].heap, chunks[i].n,
                    encode(&chunks[i], chunks[i].ev));
        fclose(f);
        return 0;
    }
    if (getenv("CODEC_FIELDS_DICT")) {
        dictionary();
        return 0;
    }
    if (getenv("CODEC_FIELDS_QUICK")) { // size and columns at the default level only
        columns();
        return 0;
    }
    ts_entropy();
    ts_split();
    levels(argc, argv);
    columns();
    ablation();
    return 0;
}
