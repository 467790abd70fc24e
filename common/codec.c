// SPDX-License-Identifier: MIT
// Event chunk codec: columnar, delta + zigzag + LEB128 varints, one byte per kind, run-length
// thread ids (a chunk is usually one thread's).
// Never allocates and never trusts its input when decoding: every read is bounds-checked,
// because readers open captures from crashed or hostile programs.
#include "memtrace/codec.h"

#include <errno.h>
#include <stdbool.h>

// ---- varints

static inline uint8_t* put_varint(uint8_t* p, uint64_t v) {
    while (v >= 0x80) {
        *p++ = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    *p++ = (uint8_t)v;
    return p;
}

static inline uint64_t zigzag(int64_t v) {
    return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
}

static inline int64_t unzigzag(uint64_t v) {
    return (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
}

typedef struct reader {
    const uint8_t* p;
    const uint8_t* end;
    bool bad;
} reader;

static inline uint64_t get_varint(reader* r) {
    uint64_t v = 0;
    for (unsigned shift = 0; shift < 64; shift += 7) {
        if (r->p >= r->end) {
            r->bad = true;
            return 0;
        }
        uint8_t b = *r->p++;
        v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80))
            return v;
    }
    r->bad = true;
    return 0;
}

// ---- encode

size_t mt_codec_bound(size_t n) {
    // 10 bytes per varint, 7 columns (kind and tid runs are at most 2 varints per event),
    // plus the count.
    return 10 + n * 10 * 9;
}

// Run-length column: (value, run length) pairs.
#define PUT_RUNS(field)                                                                        \
    do {                                                                                       \
        size_t i = 0;                                                                          \
        while (i < n) {                                                                        \
            size_t j = i + 1;                                                                  \
            while (j < n && ev[j].field == ev[i].field)                                        \
                j++;                                                                           \
            p = put_varint(p, ev[i].field);                                                    \
            p = put_varint(p, j - i);                                                          \
            i = j;                                                                             \
        }                                                                                      \
    } while (0)

size_t mt_codec_encode(const mt_event* ev, size_t n, uint8_t* out) {
    uint8_t* p = put_varint(out, n);
    if (n == 0)
        return (size_t)(p - out);
    // seq: first absolute, then (delta - 1) since seqs strictly increase.
    p = put_varint(p, ev[0].seq);
    for (size_t i = 1; i < n; i++)
        p = put_varint(p, ev[i].seq - ev[i - 1].seq - 1);
    int64_t prev_ts = 0;
    for (size_t i = 0; i < n; i++) {
        p = put_varint(p, zigzag(ev[i].ts - prev_ts));
        prev_ts = ev[i].ts;
    }
    for (size_t i = 0; i < n; i++)
        *p++ = ev[i].kind;
    PUT_RUNS(tid);
    uint64_t prev_addr = 0;
    for (size_t i = 0; i < n; i++) {
        p = put_varint(p, zigzag((int64_t)(ev[i].addr - prev_addr)));
        prev_addr = ev[i].addr;
    }
    for (size_t i = 0; i < n; i++)
        p = put_varint(p, ev[i].size);
    // Callsites: 0 (frees carry none) is one byte; others are deltas from the previous
    // non-zero callsite, shifted by one, so interleaved frees do not break the runs.
    uint32_t prev_cs = 0;
    for (size_t i = 0; i < n; i++) {
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
    for (size_t i = 0; i < n; i++) {
        if (i > 0)
            seq += get_varint(&r) + 1;
        out[i].seq = seq;
        out[i].heap = heap;
    }
    int64_t ts = 0;
    for (size_t i = 0; i < n; i++) {
        ts += unzigzag(get_varint(&r));
        out[i].ts = ts;
    }
    if (r.bad || (size_t)(r.end - r.p) < n)
        return -EPROTO;
    for (size_t i = 0; i < n; i++)
        out[i].kind = *r.p++;
    if (get_tid_runs(&r, out, n))
        return -EPROTO;
    uint64_t addr = 0;
    for (size_t i = 0; i < n; i++) {
        addr += (uint64_t)unzigzag(get_varint(&r));
        out[i].addr = addr;
    }
    for (size_t i = 0; i < n; i++)
        out[i].size = get_varint(&r);
    int64_t cs = 0;
    for (size_t i = 0; i < n; i++) {
        uint64_t v = get_varint(&r);
        if (v == 0) {
            out[i].callsite = 0;
            continue;
        }
        cs += unzigzag(v - 1);
        if (cs <= 0 || cs > UINT32_MAX)
            return -EPROTO;
        out[i].callsite = (uint32_t)cs;
    }
    if (r.bad || r.p != r.end)
        return -EPROTO;
    return 0;
}
