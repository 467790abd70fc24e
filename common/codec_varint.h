// SPDX-License-Identifier: MIT
// LEB128 varints and zigzag for the chunk codecs (codec.c, codec_zstd.c). Internal to
// common/: no allocation; the reader is bounds-checked, since chunks come from files.
#ifndef MEMTRACE_CODEC_VARINT_H
#define MEMTRACE_CODEC_VARINT_H

#include <stdbool.h>
#include <stdint.h>

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
    bool bad; // read past the end, or a varint longer than 64 bits
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

static inline uint8_t get_byte(reader* r) {
    if (r->p >= r->end) {
        r->bad = true;
        return 0;
    }
    return *r->p++;
}

#endif
