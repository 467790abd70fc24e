// SPDX-License-Identifier: MIT
// Bytes a report stores in a capture (the aggregates, the checkpoints): LEB128 varints,
// signed ones zigzagged, appended to a growable buffer and read back with bounds checked,
// then sealed by a keyed checksum of the bytes before it. A reader never reads past the end;
// a buffer that cannot grow only says so at the end (oom).
#ifndef MR_VARBYTES_H
#define MR_VARBYTES_H

#include "siphash.h"

#include "memtrace/vec.h"

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

typedef struct mr_varbuf {
    uint8_t* p;
    size_t n, cap;
    bool oom;
} mr_varbuf;

static inline void mr_varbytes_put(mr_varbuf* b, uint64_t v) {
    if (b->oom || mt_vec_grow(&b->p, &b->cap, b->n + 10, 1)) {
        b->oom = true;
        return;
    }
    do {
        uint8_t byte = v & 0x7f;
        v >>= 7;
        b->p[b->n++] = byte | (v ? 0x80 : 0);
    } while (v);
}

static inline void mr_varbytes_put_signed(mr_varbuf* b, int64_t v) {
    mr_varbytes_put(b, ((uint64_t)v << 1) ^ (uint64_t)(v >> 63));
}

typedef struct mr_varreader {
    const uint8_t *p, *end;
    bool bad; // read past the end, or a varint over 64 bits
} mr_varreader;

static inline uint64_t mr_varbytes_get(mr_varreader* r) {
    uint64_t v = 0;
    for (unsigned shift = 0; shift < 64; shift += 7) {
        if (r->p == r->end) {
            r->bad = true;
            return 0;
        }
        uint8_t byte = *r->p++;
        v |= (uint64_t)(byte & 0x7f) << shift;
        if (!(byte & 0x80))
            return v;
    }
    r->bad = true;
    return 0;
}

static inline int64_t mr_varbytes_get_signed(mr_varreader* r) {
    uint64_t v = mr_varbytes_get(r);
    return (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
}

// Appends the SipHash of the bytes so far under (k0, k1), 8 bytes little-endian. The key is
// fixed by each kind of bytes: it guards against damage, not against a chosen input. Returns
// the bytes (*len set), or NULL (and frees them) when the buffer ran out of memory.
static inline uint8_t* mr_varbytes_seal(mr_varbuf* b, uint64_t k0, uint64_t k1, size_t* len) {
    uint64_t sum = b->oom ? 0 : mr_siphash_bytes(k0, k1, b->p, b->n);
    if (!b->oom && mt_vec_grow(&b->p, &b->cap, b->n + 8, 1))
        b->oom = true;
    if (b->oom) {
        free(b->p);
        return NULL;
    }
    for (unsigned k = 0; k < 8; k++)
        b->p[b->n++] = (uint8_t)(sum >> (8 * k));
    *len = b->n;
    return b->p;
}

// Whether p[0..len) ends with the checksum mr_varbytes_seal put there; if so, a reader of
// the bytes before it.
static inline bool mr_varbytes_open(const uint8_t* p, size_t len, uint64_t k0, uint64_t k1,
                                    mr_varreader* r) {
    if (len < 8)
        return false;
    uint64_t sum = 0;
    for (unsigned k = 0; k < 8; k++)
        sum |= (uint64_t)p[len - 8 + k] << (8 * k);
    *r = (mr_varreader){p, p + len - 8, false};
    return sum == mr_siphash_bytes(k0, k1, p, len - 8);
}

// Words what is wrong with stored bytes into why; returns -EPROTO, for `return
// mr_varbytes_fail(...)` in their checks.
__attribute__((format(printf, 3, 4))) static inline int mr_varbytes_fail(char* why, size_t whylen,
                                                                         const char* fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, whylen, fmt, ap);
    va_end(ap);
    return -EPROTO;
}

#endif
