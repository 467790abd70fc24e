// SPDX-License-Identifier: MIT
// Event chunk codec: columnar, delta + zigzag + LEB128 varints, one byte per kind, run-length
// thread ids (a chunk is usually one thread's).
// Never allocates and never trusts its input when decoding: every read is bounds-checked,
// because readers open captures from crashed or hostile programs.
#include "memtrace/codec.h"

#include "codec_varint.h"

#include "memtrace/schema.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <string.h>
#if defined(__x86_64__)
#include <cpuid.h>
#endif

// ---- encode

size_t mt_codec_bound(size_t n) {
    // Codec 1: 10 bytes per varint, 7 columns (kind and tid runs are at most 2 varints per
    // event), plus the count. Codec 3: zstd's bound of its columns. Then the checksum.
    size_t varint = 10 + n * 10 * 9, zstd = mt_codec_zstd_bound(n);
    return (varint > zstd ? varint : zstd) + MT_CHUNK_CHECKSUM_BYTES;
}

// Run-length column: (value, run length) pairs.
#define PUT_RUNS(field)                                                                            \
    do {                                                                                           \
        size_t i = 0;                                                                              \
        while (i < n) {                                                                            \
            size_t j = i + 1;                                                                      \
            while (j < n && ev[j].field == ev[i].field)                                            \
                j++;                                                                               \
            p = put_varint(p, ev[i].field);                                                        \
            p = put_varint(p, j - i);                                                              \
            i = j;                                                                                 \
        }                                                                                          \
    } while (0)

enum {
    FLAG_BARE_FREES = 1, // free events have size 0 and callsite 0: both columns omit them
    FLAG_WIDE_KINDS = 2, // some kind >= 32: kinds and seq gaps in separate columns
};

// A free event whose size and callsite columns are omitted under FLAG_BARE_FREES.
static inline bool bare_free(const mt_event* e) {
    return mt_kind_is_free(e->kind);
}

size_t mt_codec_encode(const mt_event* ev, size_t n, uint8_t* out) {
    uint8_t* p = put_varint(out, n);
    if (n == 0)
        return (size_t)(p - out);
    p = put_varint(p, ev[0].seq);
    uint8_t flags = FLAG_BARE_FREES;
    for (size_t i = 0; i < n; i++) {
        if (bare_free(&ev[i]) && (ev[i].size || ev[i].callsite))
            flags &= (uint8_t)~FLAG_BARE_FREES;
        if (ev[i].kind >= 32)
            flags |= FLAG_WIDE_KINDS;
    }
    *p++ = flags;
    // kind and seq gap (delta - 1; seqs strictly increase) share a byte: gaps 0-6 inline,
    // 7 = the gap minus 7 follows in an escape column. One thread's chunk has mostly gap 0.
    if (flags & FLAG_WIDE_KINDS) {
        for (size_t i = 0; i < n; i++)
            *p++ = ev[i].kind;
        for (size_t i = 1; i < n; i++)
            p = put_varint(p, ev[i].seq - ev[i - 1].seq - 1);
    } else {
        for (size_t i = 0; i < n; i++) {
            uint64_t gap = i ? ev[i].seq - ev[i - 1].seq - 1 : 0;
            *p++ = (uint8_t)(ev[i].kind | (gap < 7 ? gap : 7) << 5);
        }
        for (size_t i = 1; i < n; i++) {
            uint64_t gap = ev[i].seq - ev[i - 1].seq - 1;
            if (gap >= 7)
                p = put_varint(p, gap - 7);
        }
    }
    int64_t prev_ts = 0;
    for (size_t i = 0; i < n; i++) {
        // Unsigned arithmetic: a corrupt or extreme pair must wrap, not overflow (UB).
        p = put_varint(p, zigzag((int64_t)((uint64_t)ev[i].ts - (uint64_t)prev_ts)));
        prev_ts = ev[i].ts;
    }
    PUT_RUNS(tid);
    uint64_t prev_addr = 0;
    for (size_t i = 0; i < n; i++) {
        p = put_varint(p, zigzag((int64_t)(ev[i].addr - prev_addr)));
        prev_addr = ev[i].addr;
    }
    bool bare = flags & FLAG_BARE_FREES;
    for (size_t i = 0; i < n; i++)
        if (!bare || !bare_free(&ev[i]))
            p = put_varint(p, ev[i].size);
    // Callsites: 0 is one byte; others are deltas from the previous non-zero callsite,
    // shifted by one, so interleaved zeros do not break the runs.
    uint32_t prev_cs = 0;
    for (size_t i = 0; i < n; i++) {
        if (bare && bare_free(&ev[i]))
            continue;
        if (!ev[i].callsite) {
            *p++ = 0;
            continue;
        }
        p = put_varint(p, zigzag((int64_t)ev[i].callsite - (int64_t)prev_cs) + 1);
        prev_cs = ev[i].callsite;
    }
    return (size_t)(p - out);
}

// ---- decode

static int get_tid_runs(reader* r, mt_event* out, size_t n) {
    size_t i = 0;
    while (i < n) {
        uint64_t v = get_varint(r);
        uint64_t run = get_varint(r);
        if (r->bad || run == 0 || run > n - i)
            return -EPROTO;
        if (v > UINT32_MAX)
            return -EPROTO;
        for (uint64_t k = 0; k < run; k++, i++)
            out[i].tid = (uint32_t)v;
    }
    return 0;
}

int mt_codec_decode(const uint8_t* data, size_t len, size_t count, uint8_t heap, mt_event* out) {
    reader r = {data, data + len, false};
    uint64_t n = get_varint(&r);
    if (r.bad || n != count)
        return -EPROTO;
    if (n == 0)
        return r.p == r.end ? 0 : -EPROTO;
    uint64_t seq = get_varint(&r);
    if (r.bad || r.p >= r.end)
        return -EPROTO;
    uint8_t flags = *r.p++;
    if (flags & ~(FLAG_BARE_FREES | FLAG_WIDE_KINDS) || (size_t)(r.end - r.p) < n)
        return -EPROTO;
    if (flags & FLAG_WIDE_KINDS) {
        for (size_t i = 0; i < n; i++)
            out[i].kind = *r.p++;
        for (size_t i = 0; i < n; i++) {
            if (i > 0)
                seq += get_varint(&r) + 1;
            out[i].seq = seq;
        }
    } else {
        const uint8_t* kinds = r.p;
        r.p += n;
        for (size_t i = 0; i < n; i++) {
            out[i].kind = kinds[i] & 31;
            uint64_t gap = kinds[i] >> 5;
            if (i == 0 && gap)
                return -EPROTO;
            if (gap == 7)
                gap += get_varint(&r);
            if (i > 0)
                seq += gap + 1;
            out[i].seq = seq;
        }
    }
    for (size_t i = 0; i < n; i++)
        out[i].heap = heap;
    int64_t ts = 0;
    for (size_t i = 0; i < n; i++) {
        ts = (int64_t)((uint64_t)ts + (uint64_t)unzigzag(get_varint(&r)));
        out[i].ts = ts;
    }
    if (r.bad || get_tid_runs(&r, out, n))
        return -EPROTO;
    uint64_t addr = 0;
    for (size_t i = 0; i < n; i++) {
        addr += (uint64_t)unzigzag(get_varint(&r));
        out[i].addr = addr;
    }
    bool bare = flags & FLAG_BARE_FREES;
    for (size_t i = 0; i < n; i++)
        out[i].size = bare && bare_free(&out[i]) ? 0 : get_varint(&r);
    int64_t cs = 0;
    for (size_t i = 0; i < n; i++) {
        if (bare && bare_free(&out[i])) {
            out[i].callsite = 0;
            continue;
        }
        uint64_t v = get_varint(&r);
        if (v == 0) {
            out[i].callsite = 0;
            continue;
        }
        int64_t delta = unzigzag(v - 1);
        if (delta > (int64_t)UINT32_MAX || delta < -(int64_t)UINT32_MAX)
            return -EPROTO;
        cs += delta; // |cs| and |delta| < 2^33: no overflow
        if (cs <= 0 || cs > UINT32_MAX)
            return -EPROTO;
        out[i].callsite = (uint32_t)cs;
    }
    if (r.bad || r.p != r.end)
        return -EPROTO;
    return 0;
}

// ---- CRC32C

#define CRC32C_POLY 0x82f63b78u // Castagnoli, reflected

static uint32_t crc_table[256];
static pthread_once_t crc_once = PTHREAD_ONCE_INIT;
static bool crc_hw;

static void crc_init(void) {
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++)
            c = c >> 1 ^ (c & 1 ? CRC32C_POLY : 0);
        crc_table[i] = c;
    }
#if defined(__x86_64__)
    unsigned a, b, c, d;
    crc_hw = __get_cpuid(1, &a, &b, &c, &d) && (c & bit_SSE4_2);
#endif
}

static uint32_t crc_soft(uint32_t crc, const uint8_t* p, size_t len) {
    while (len--)
        crc = crc >> 8 ^ crc_table[(crc ^ *p++) & 0xff];
    return crc;
}

#if defined(__x86_64__)
// The SSE4.2 crc32 instruction computes exactly CRC32C, 8 bytes at a time: the writer
// thread checksums every chunk, so this keeps the cost near zero.
__attribute__((target("sse4.2"))) static uint32_t crc_sse42(uint32_t crc, const uint8_t* p,
                                                            size_t len) {
    uint64_t c = crc;
    for (; len >= 8; p += 8, len -= 8) {
        uint64_t w;
        memcpy(&w, p, 8);
        c = __builtin_ia32_crc32di(c, w);
    }
    uint32_t c32 = (uint32_t)c;
    for (; len; p++, len--)
        c32 = __builtin_ia32_crc32qi(c32, *p);
    return c32;
}
#endif

uint32_t mt_codec_crc32c(uint32_t crc, const void* data, size_t len) {
    pthread_once(&crc_once, crc_init);
    crc = ~crc;
#if defined(__x86_64__)
    if (crc_hw)
        return ~crc_sse42(crc, data, len);
#endif
    return ~crc_soft(crc, data, len);
}

uint32_t mt_codec_crc32c_portable(uint32_t crc, const void* data, size_t len) {
    pthread_once(&crc_once, crc_init);
    return ~crc_soft(~crc, data, len);
}

// ---- chunk checksum

static uint32_t chunk_checksum(const mt_chunk_header* h, const uint8_t* data, size_t len) {
    const int64_t cols[6] = {h->heap, h->seq_first, h->seq_last, h->ts_first, h->ts_last, h->count};
    uint8_t le[sizeof cols];
    for (size_t i = 0; i < 6; i++)
        for (size_t b = 0; b < 8; b++)
            le[i * 8 + b] = (uint8_t)((uint64_t)cols[i] >> (8 * b));
    return mt_codec_crc32c(mt_codec_crc32c(0, le, sizeof le), data, len);
}

size_t mt_codec_chunk_seal(const mt_chunk_header* h, uint8_t* data, size_t len) {
    uint32_t crc = chunk_checksum(h, data, len);
    for (size_t b = 0; b < MT_CHUNK_CHECKSUM_BYTES; b++)
        data[len + b] = (uint8_t)(crc >> (8 * b));
    return len + MT_CHUNK_CHECKSUM_BYTES;
}

long mt_codec_chunk_verify(const mt_chunk_header* h, const uint8_t* data, size_t len) {
    if (len < MT_CHUNK_CHECKSUM_BYTES)
        return -EBADMSG;
    size_t payload = len - MT_CHUNK_CHECKSUM_BYTES;
    uint32_t stored = 0;
    for (size_t b = 0; b < MT_CHUNK_CHECKSUM_BYTES; b++)
        stored |= (uint32_t)data[payload + b] << (8 * b);
    return stored == chunk_checksum(h, data, payload) ? (long)payload : -EBADMSG;
}

// ---- whole chunks

int mt_codec_of_schema(int64_t version) {
    return version <= 1   ? MT_CODEC_VARINT_COLUMNS
           : version == 2 ? MT_CODEC_VARINT_COLUMNS_CRC32C
           : version == 3 ? MT_CODEC_ZSTD_COLUMNS_CRC32C
           : version == 4 ? MT_CODEC_ZSTD_UNITS_CRC32C
                          : MT_CODEC_ZSTD_RUNS_CRC32C;
}

size_t mt_codec_chunk_encode(mt_chunk_coder* c, int codec, const mt_chunk_header* h,
                             const mt_event* ev, size_t n, uint8_t* out) {
    switch (codec) {
    case MT_CODEC_VARINT_COLUMNS:
        return mt_codec_encode(ev, n, out);
    case MT_CODEC_VARINT_COLUMNS_CRC32C:
        return mt_codec_chunk_seal(h, out, mt_codec_encode(ev, n, out));
    case MT_CODEC_ZSTD_COLUMNS_CRC32C:
    case MT_CODEC_ZSTD_UNITS_CRC32C:
    case MT_CODEC_ZSTD_RUNS_CRC32C: {
        size_t len = c ? mt_codec_zstd_encode(c, codec, ev, n, out) : 0;
        return len ? mt_codec_chunk_seal(h, out, len) : 0;
    }
    default:
        return 0;
    }
}

int mt_codec_chunk_decode(mt_chunk_coder* c, int codec, const mt_chunk_header* h,
                          const uint8_t* data, size_t len, mt_event* out) {
    if (h->count <= 0 || h->heap < 0 || h->heap > 255)
        return -EPROTO;
    bool zstd = codec == MT_CODEC_ZSTD_COLUMNS_CRC32C || codec == MT_CODEC_ZSTD_UNITS_CRC32C ||
                codec == MT_CODEC_ZSTD_RUNS_CRC32C;
    if (codec == MT_CODEC_VARINT_COLUMNS_CRC32C || zstd) {
        long payload = mt_codec_chunk_verify(h, data, len);
        if (payload < 0)
            return -EBADMSG;
        len = (size_t)payload;
    }
    size_t n = (size_t)h->count;
    int rc;
    if (zstd)
        rc = c ? mt_codec_zstd_decode(c, codec, data, len, n, (uint8_t)h->heap, out) : -ENOMEM;
    else if (codec == MT_CODEC_VARINT_COLUMNS || codec == MT_CODEC_VARINT_COLUMNS_CRC32C)
        rc = mt_codec_decode(data, len, n, (uint8_t)h->heap, out);
    else
        rc = -EPROTO;
    if (rc == 0 && out[0].seq != (uint64_t)h->seq_first)
        rc = -EPROTO;
    return rc;
}
