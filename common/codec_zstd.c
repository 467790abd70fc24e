// SPDX-License-Identifier: MIT
// Codec 3: an event chunk as columns in which repeats are references, compressed with zstd.
// Real programs repeat themselves: a block is freed a few events after it was allocated,
// glibc hands a freed address to the next allocation of its size, a loop allocates the same
// (size, callsite) pairs again and again. So an address or a (size, callsite) pair seen
// before in the chunk is written as "the same as the event d back", which stays the same from
// one iteration of a loop to the next, and zstd then finds those iterations as repeats.
// Every field of every event is kept exactly (docs/capture-format.md, codec 3). Codec 4 adds
// the chunk's time unit to the header: the tracer records times in whole microseconds by
// default, and deltas counted in units take a byte where nanoseconds took two. Codec 5 writes
// those deltas as runs: at 1 us most are 0 or 1, a byte each was more than a bit an event
// (zstd's literals take a whole bit at least), where a run of zeros and the step that ends it
// take a byte for several events.
// The coder allocates (zstd contexts, column buffers) once, when made; encoding and decoding
// then allocate nothing. Decoding never trusts its input: chunks come from files.
#include "codec_varint.h"

#include "memtrace/codec.h"
#include "memtrace/schema.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

// zstd level, measured on real captures (python3, bench_st, bench_rs): level 3 (zstd's
// default) makes the files 3-8% smaller than level 1 for 5-13% more encoding time (35-40 ns
// an event on random workloads, precoding included; 20 on python3); levels 5-9 cost 2-5x
// the time for another 1-5%.
#define ZSTD_LEVEL 3

enum {
    FLAG_BARE_FREES = 1, // free events have size 0 and callsite 0: the pair columns omit them
};

// The columns, in the order they are stored.
enum {
    COL_KIND,     // one byte per event
    COL_GAP,      // seq delta - 1 per event after the first
    COL_TS_LO,    // ts delta, low byte (0xff with TS_HI 0xff: see COL_TS_WIDE); codec 5: runs
    COL_TS_HI,    // ts delta, high byte; empty in codec 5
    COL_TS_WIDE,  // zigzag ts delta when it is negative or >= 0xffff; codec 5: not 0 or 1
    COL_TID,      // run-length pairs (tid, run)
    COL_ADDR_REF, // 0: a new address (COL_ADDR), else d: the address of the event d back
    COL_ADDR,     // zigzag delta from the previous new address
    COL_PAIR_REF, // 0: a new pair (COL_SIZE, COL_CALLSITE), else d: the pair of the event d back
    COL_SIZE,     // size
    COL_CALLSITE, // zigzag delta from the previous new callsite
    NCOLS
};

// Codec 5's time column COL_TS_RUN: per run, (events whose delta is 0) << 1, then 1 if the
// delta that ends the run is not 1 (in COL_TS_WIDE then); a run at the chunk's end has no
// delta after it.
#define COL_TS_RUN COL_TS_LO

// Worst-case bytes per event in each column (varints of 64 bits take 10 bytes; a tid run is
// two varints).
static const size_t col_max[NCOLS] = {1, 10, 10, 1, 10, 15, 10, 10, 10, 10, 10};
#define EVENT_MAX 97 // the sum of col_max
// count, first seq, flags, the time unit (codec 4) and the column lengths.
#define HEADER_MAX (10 + 10 + 1 + 10 + NCOLS * 10)
// The largest time unit a chunk may declare (1 s): readers refuse more, so that a delta
// times the unit stays far from wrapping.
#define UNIT_MAX 1000000000

static size_t precoded_bound(size_t n) {
    return HEADER_MAX + n * EVENT_MAX;
}

size_t mt_codec_zstd_bound(size_t n) {
    // A block per column: each flushed block may be stored raw, with its 3-byte header.
    return ZSTD_COMPRESSBOUND(precoded_bound(n)) + NCOLS * 8;
}

// A direct-mapped table from an address or a (size, callsite) pair to the last event that had
// it. A slot is overwritten on collision, never chained: a program that makes its values
// collide costs compression, never time. A chunk of n events uses the first 4n slots (at
// least 256, at most all): the tables are 768 KiB of fresh pages, and a short program's one
// small chunk touched nearly every page of them (about 250 page faults, a tenth of what
// tracing adds to such a process's CPU).
#define REF_BITS 14
#define REF_SLOTS (1u << REF_BITS)
#define REF_MIN_BITS 8

typedef struct ref_slot {
    uint64_t a;
    uint32_t b;
    uint32_t gen; // the chunk that wrote the slot; others are empty
    uint32_t idx; // event index in that chunk
} ref_slot;

struct mt_chunk_coder {
    ZSTD_CCtx* cctx;
    ZSTD_DCtx* dctx; // made at the first decode
    uint8_t* buf;    // the precoded chunk
    uint8_t* cols;   // encoding: each column's region
    size_t cap;      // events buf and cols hold
    ref_slot* addrs;
    ref_slot* pairs;
    uint32_t gen;
    int level;    // zstd level of the chunks it encodes
    int64_t unit; // codec 4: the time unit its chunks use when every time is a multiple of it
};

mt_chunk_coder* mt_codec_chunk_coder_new(void) {
    mt_chunk_coder* c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    c->cctx = ZSTD_createCCtx();
    c->addrs = calloc(REF_SLOTS, sizeof *c->addrs);
    c->pairs = calloc(REF_SLOTS, sizeof *c->pairs);
    c->level = ZSTD_LEVEL;
    c->unit = 1;
    if (!c->cctx || !c->addrs || !c->pairs) {
        mt_codec_chunk_coder_free(c);
        return NULL;
    }
    return c;
}

void mt_codec_chunk_coder_free(mt_chunk_coder* c) {
    if (!c)
        return;
    ZSTD_freeCCtx(c->cctx);
    ZSTD_freeDCtx(c->dctx);
    free(c->buf);
    free(c->cols);
    free(c->addrs);
    free(c->pairs);
    free(c);
}

void mt_codec_chunk_coder_set_level(mt_chunk_coder* c, int level) {
    c->level = level;
}

void mt_codec_chunk_coder_set_time_unit(mt_chunk_coder* c, int64_t unit) {
    c->unit = unit >= 1 && unit <= UNIT_MAX ? unit : 1;
}

// The unit a codec 4 chunk of these events is written in: the coder's, if every time is a
// multiple of it (a chunk made by another writer, or an NPU import, may not be), else 1.
static bool known_codec(int codec) {
    return codec == MT_CODEC_ZSTD_COLUMNS_CRC32C || codec == MT_CODEC_ZSTD_UNITS_CRC32C ||
           codec == MT_CODEC_ZSTD_RUNS_CRC32C;
}

static int64_t time_unit(const mt_chunk_coder* c, const mt_event* ev, size_t n) {
    if (c->unit == 1)
        return 1;
    for (size_t i = 0; i < n; i++)
        if (ev[i].ts % c->unit)
            return 1;
    return c->unit;
}

// Room for n events in the buffers (grown, never shrunk: a reader's chunks are alike).
static int reserve(mt_chunk_coder* c, size_t n, bool columns) {
    if (n > c->cap || (columns && !c->cols)) {
        size_t want = n > c->cap ? n : c->cap;
        uint8_t* buf = realloc(c->buf, precoded_bound(want));
        if (!buf)
            return -ENOMEM;
        c->buf = buf;
        free(c->cols);
        c->cols = NULL;
        c->cap = want;
    }
    if (columns && !c->cols && !(c->cols = malloc(precoded_bound(c->cap))))
        return -ENOMEM;
    return 0;
}

static inline uint32_t slot_of(uint64_t a, uint32_t b, unsigned bits) {
    uint64_t x = (a ^ (uint64_t)b << 32 ^ b) * 0x9e3779b97f4a7c15ull;
    return (uint32_t)(x >> (64 - bits));
}

// The table bits for a chunk of n events (above).
static unsigned ref_bits(size_t n) {
    unsigned bits = REF_MIN_BITS;
    while (bits < REF_BITS && ((size_t)1 << bits) < 4 * n)
        bits++;
    return bits;
}

// The distance back to the last event with (a, b), 0 if none; then remembers event i.
static inline uint64_t ref_of(mt_chunk_coder* c, ref_slot* table, uint64_t a, uint32_t b, size_t i,
                              unsigned bits) {
    ref_slot* s = &table[slot_of(a, b, bits)];
    uint64_t d = s->gen == c->gen && s->a == a && s->b == b ? i - s->idx : 0;
    *s = (ref_slot){a, b, c->gen, (uint32_t)i};
    return d;
}

// How many events ahead the encoder prefetches the reference slots: a random workload's
// slots miss the cache, and those misses were half of the precoding time.
#define PREFETCH 8

static inline bool bare_free(const mt_event* e, uint8_t flags) {
    return (flags & FLAG_BARE_FREES) && mt_kind_is_free(e->kind);
}

// One zstd frame (its content size in the header), a block per column: each column gets its own
// entropy tables (a column of timestamp bytes and one of callsite deltas are distributed
// nothing alike), while matches may still reach back into earlier columns. A reader sees one
// frame whose content is the precoded chunk, as if compressed at once.
static size_t compress_columns(mt_chunk_coder* c, const uint8_t* buf, const uint8_t* ends[NCOLS],
                               uint8_t* out, size_t cap) {
    ZSTD_CCtx* z = c->cctx;
    size_t total = (size_t)(ends[NCOLS - 1] - buf);
    if (ZSTD_isError(ZSTD_CCtx_reset(z, ZSTD_reset_session_only)) ||
        ZSTD_isError(ZSTD_CCtx_setParameter(z, ZSTD_c_compressionLevel, c->level)) ||
        ZSTD_isError(ZSTD_CCtx_setPledgedSrcSize(z, total)))
        return 0;
    ZSTD_outBuffer o = {out, cap, 0};
    ZSTD_inBuffer in = {buf, 0, 0};
    for (int k = 0; k < NCOLS; k++) {
        in.size = (size_t)(ends[k] - buf);
        if (in.pos == in.size && k + 1 < NCOLS)
            continue; // an empty column: nothing to flush
        ZSTD_EndDirective end = k + 1 < NCOLS ? ZSTD_e_flush : ZSTD_e_end;
        size_t left = ZSTD_compressStream2(z, &o, &in, end);
        if (ZSTD_isError(left) || left != 0)
            return 0; // out was large enough for everything: left is 0 when it succeeded
    }
    return o.pos;
}

size_t mt_codec_zstd_encode(mt_chunk_coder* c, int codec, const mt_event* ev, size_t n,
                            uint8_t* out) {
    if (n == 0 || n > UINT32_MAX || !known_codec(codec) || reserve(c, n, true))
        return 0;
    bool runs = codec == MT_CODEC_ZSTD_RUNS_CRC32C;
    int64_t unit = codec == MT_CODEC_ZSTD_COLUMNS_CRC32C ? 1 : time_unit(c, ev, n);
    if (++c->gen == 0) { // after 2^32 chunks: old slots could look current
        memset(c->addrs, 0, REF_SLOTS * sizeof *c->addrs);
        memset(c->pairs, 0, REF_SLOTS * sizeof *c->pairs);
        c->gen = 1;
    }
    unsigned bits = ref_bits(n);
    uint8_t *col[NCOLS], *start[NCOLS];
    uint8_t* region = c->cols;
    for (int k = 0; k < NCOLS; k++) {
        start[k] = col[k] = region;
        region += n * col_max[k];
    }
    uint8_t flags = FLAG_BARE_FREES;
    for (size_t i = 0; i < n; i++)
        if (mt_kind_is_free(ev[i].kind) && (ev[i].size || ev[i].callsite))
            flags = 0;
    uint64_t prev_addr = 0;
    int64_t prev_ts = 0, prev_cs = 0;
    size_t run = 0;
    uint64_t zeros = 0; // codec 5: the ts deltas of 0 since the last other one
    for (size_t i = 0; i < n; i++) {
        const mt_event* e = &ev[i];
        if (i + PREFETCH < n) { // the slots a few events ahead: their misses overlap
            const mt_event* f = &ev[i + PREFETCH];
            __builtin_prefetch(&c->addrs[slot_of(f->addr, 0, bits)], 1);
            __builtin_prefetch(&c->pairs[slot_of(f->size, f->callsite, bits)], 1);
        }
        *col[COL_KIND]++ = e->kind;
        if (i > 0)
            col[COL_GAP] = put_varint(col[COL_GAP], e->seq - ev[i - 1].seq - 1);
        // Unsigned arithmetic: extreme values wrap instead of overflowing (UB).
        int64_t t = e->ts / unit; // exact: a multiple of unit
        int64_t dt = (int64_t)((uint64_t)t - (uint64_t)prev_ts);
        prev_ts = t;
        if (runs) {
            if (dt == 0) {
                zeros++;
            } else {
                col[COL_TS_RUN] = put_varint(col[COL_TS_RUN], zeros << 1 | (dt != 1));
                if (dt != 1)
                    col[COL_TS_WIDE] = put_varint(col[COL_TS_WIDE], zigzag(dt));
                zeros = 0;
            }
        } else {
            bool narrow = dt >= 0 && dt < 0xffff;
            *col[COL_TS_LO]++ = narrow ? (uint8_t)dt : 0xff;
            *col[COL_TS_HI]++ = narrow ? (uint8_t)(dt >> 8) : 0xff;
            if (!narrow)
                col[COL_TS_WIDE] = put_varint(col[COL_TS_WIDE], zigzag(dt));
        }
        run++;
        if (i + 1 == n || ev[i + 1].tid != e->tid) {
            col[COL_TID] = put_varint(col[COL_TID], e->tid);
            col[COL_TID] = put_varint(col[COL_TID], run);
            run = 0;
        }
        uint64_t d = ref_of(c, c->addrs, e->addr, 0, i, bits);
        col[COL_ADDR_REF] = put_varint(col[COL_ADDR_REF], d);
        if (!d) {
            col[COL_ADDR] = put_varint(col[COL_ADDR], zigzag((int64_t)(e->addr - prev_addr)));
            prev_addr = e->addr;
        }
        if (bare_free(e, flags))
            continue;
        d = ref_of(c, c->pairs, e->size, e->callsite, i, bits);
        col[COL_PAIR_REF] = put_varint(col[COL_PAIR_REF], d);
        if (!d) {
            col[COL_SIZE] = put_varint(col[COL_SIZE], e->size);
            col[COL_CALLSITE] =
                put_varint(col[COL_CALLSITE], zigzag((int64_t)e->callsite - prev_cs));
            prev_cs = e->callsite;
        }
    }
    if (zeros)
        col[COL_TS_RUN] = put_varint(col[COL_TS_RUN], zeros << 1);
    uint8_t* p = put_varint(c->buf, n);
    p = put_varint(p, ev[0].seq);
    *p++ = flags;
    if (codec != MT_CODEC_ZSTD_COLUMNS_CRC32C)
        p = put_varint(p, (uint64_t)unit);
    for (int k = 0; k < NCOLS; k++)
        p = put_varint(p, (uint64_t)(col[k] - start[k]));
    const uint8_t* ends[NCOLS]; // where each column ends in buf
    for (int k = 0; k < NCOLS; k++) {
        size_t len = (size_t)(col[k] - start[k]);
        memcpy(p, start[k], len);
        p += len;
        ends[k] = p;
    }
    return compress_columns(c, c->buf, ends, out, mt_codec_zstd_bound(n));
}

// ---- decode

// Reads the chunk header (event count, first seq, flags, column lengths) and
// points one reader at each column; the columns must fill the rest exactly.
static int read_header(int codec, const uint8_t* data, size_t len, size_t n, uint64_t* seq,
                       uint8_t* flags, uint64_t* unit, reader col[NCOLS]) {
    reader h = {data, data + len, false};
    if (get_varint(&h) != n || h.bad)
        return -EPROTO;
    *seq = get_varint(&h);
    *flags = get_byte(&h);
    *unit = codec != MT_CODEC_ZSTD_COLUMNS_CRC32C ? get_varint(&h) : 1;
    if (h.bad || *flags & ~FLAG_BARE_FREES || *unit < 1 || *unit > UNIT_MAX)
        return -EPROTO;
    uint64_t lens[NCOLS];
    for (int k = 0; k < NCOLS; k++)
        lens[k] = get_varint(&h);
    if (h.bad)
        return -EPROTO;
    const uint8_t* p = h.p;
    for (int k = 0; k < NCOLS; k++) {
        if (lens[k] > (uint64_t)(h.end - p))
            return -EPROTO;
        col[k] = (reader){p, p + lens[k], false};
        p += lens[k];
    }
    return p == h.end ? 0 : -EPROTO;
}

static int decode_precoded(int codec, const uint8_t* data, size_t len, size_t n, uint8_t heap,
                           mt_event* out) {
    uint64_t seq, unit;
    uint8_t flags;
    reader col[NCOLS];
    if (read_header(codec, data, len, n, &seq, &flags, &unit, col) < 0)
        return -EPROTO;
    uint64_t addr = 0;
    int64_t ts = 0, cs = 0;
    uint64_t tid = 0, run = 0;
    bool runs = codec == MT_CODEC_ZSTD_RUNS_CRC32C, in_run = false, wide = false;
    uint64_t zeros = 0;
    for (size_t i = 0; i < n; i++) {
        mt_event* e = &out[i];
        e->heap = heap;
        e->kind = get_byte(&col[COL_KIND]);
        if (i > 0)
            seq += get_varint(&col[COL_GAP]) + 1;
        e->seq = seq;
        uint64_t dt;
        if (runs) {
            if (!in_run) {
                uint64_t v = get_varint(&col[COL_TS_RUN]);
                zeros = v >> 1;
                wide = v & 1;
                in_run = true;
                if (zeros > n - i)
                    return -EPROTO;
            }
            if (zeros) {
                dt = 0;
                zeros--;
            } else {
                dt = wide ? (uint64_t)unzigzag(get_varint(&col[COL_TS_WIDE])) : 1;
                in_run = false;
            }
        } else {
            uint8_t lo = get_byte(&col[COL_TS_LO]), hi = get_byte(&col[COL_TS_HI]);
            dt = lo == 0xff && hi == 0xff ? (uint64_t)unzigzag(get_varint(&col[COL_TS_WIDE]))
                                          : (uint64_t)hi << 8 | lo;
        }
        ts = (int64_t)((uint64_t)ts + dt);
        // Wraps rather than overflows on a corrupt chunk; the readers' bounds then refuse it.
        e->ts = (int64_t)((uint64_t)ts * unit);
        if (run == 0) {
            tid = get_varint(&col[COL_TID]);
            run = get_varint(&col[COL_TID]);
            if (run == 0 || run > n - i || tid > UINT32_MAX)
                return -EPROTO;
        }
        run--;
        e->tid = (uint32_t)tid;
        uint64_t d = get_varint(&col[COL_ADDR_REF]);
        if (d > i)
            return -EPROTO;
        if (d) {
            e->addr = out[i - d].addr;
        } else {
            addr += (uint64_t)unzigzag(get_varint(&col[COL_ADDR]));
            e->addr = addr;
        }
        if (bare_free(e, flags)) {
            e->size = 0;
            e->callsite = 0;
            continue;
        }
        d = get_varint(&col[COL_PAIR_REF]);
        if (d > i)
            return -EPROTO;
        if (d) {
            e->size = out[i - d].size;
            e->callsite = out[i - d].callsite;
            continue;
        }
        e->size = get_varint(&col[COL_SIZE]);
        uint64_t v = get_varint(&col[COL_CALLSITE]);
        if (v > 2 * (uint64_t)UINT32_MAX)
            return -EPROTO;
        cs += unzigzag(v); // |cs|, |delta| <= 2^32: no overflow
        if (cs < 0 || cs > UINT32_MAX)
            return -EPROTO;
        e->callsite = (uint32_t)cs;
    }
    // Every column read to its end, exactly.
    for (int k = 0; k < NCOLS; k++)
        if (col[k].bad || col[k].p != col[k].end)
            return -EPROTO;
    return 0;
}

int mt_codec_zstd_decode(mt_chunk_coder* c, int codec, const uint8_t* data, size_t len,
                         size_t count, uint8_t heap, mt_event* out) {
    if (count == 0 || count > UINT32_MAX || !known_codec(codec))
        return -EPROTO;
    // One frame, nothing after it, and no more content than count events can take.
    unsigned long long size = ZSTD_getFrameContentSize(data, len);
    if (size == ZSTD_CONTENTSIZE_UNKNOWN || size == ZSTD_CONTENTSIZE_ERROR ||
        size > precoded_bound(count) || ZSTD_findFrameCompressedSize(data, len) != len)
        return -EPROTO;
    // Made at the first decode: the tracer only encodes.
    if (reserve(c, count, false) || (!c->dctx && !(c->dctx = ZSTD_createDCtx())))
        return -ENOMEM;
    size_t got = ZSTD_decompressDCtx(c->dctx, c->buf, (size_t)size, data, len);
    if (ZSTD_isError(got) || got != size)
        return -EPROTO;
    return decode_precoded(codec, c->buf, got, count, heap, out);
}
