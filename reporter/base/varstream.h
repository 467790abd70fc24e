// SPDX-License-Identifier: MIT
// Stored bytes (varbytes.h) read a window at a time from where they lie, so that an answer
// of tens of MB is never whole in memory: varints as mr_varbytes_get reads them, and the
// checksum of the bytes read when asked. Knows nothing of where the bytes are kept: the
// caller's read function fetches them.
#ifndef MR_VARSTREAM_H
#define MR_VARSTREAM_H

#include "siphash.h"
#include "varbytes.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

// n bytes at offset into buf: 0 or a negative errno.
typedef int (*mr_varstream_read_fn)(void* ud, size_t offset, void* buf, size_t n);

typedef struct mr_varstream {
    mr_varstream_read_fn read;
    void* ud;
    size_t next, end; // the offset of the first byte not in the window; of the end
    uint8_t* buf;
    size_t window;
    mr_varreader r; // over the window: r.bad says a varint was bad or cut short
    int err;        // a read failed: its negative errno (r.bad set too)
    bool summing;   // sum: the checksum of every byte read into the window
    mr_siphash_state sum;
} mr_varstream;

// The bytes [from, end) through read, a window of `window` bytes (at least 16) at a time,
// summed under (k0, k1) when `sum`. Returns 0 or -ENOMEM.
int mr_varstream_open(mr_varstream* s, mr_varstream_read_fn read, void* ud, size_t from, size_t end,
                      size_t window, bool sum, uint64_t k0, uint64_t k1);
void mr_varstream_close(mr_varstream* s);
// Refills the window (mr_varstream_get does when fewer than a varint's 10 bytes are left).
void mr_varstream_fill(mr_varstream* s);

static inline uint64_t mr_varstream_get(mr_varstream* s) {
    if (s->r.end - s->r.p < 10 && s->next < s->end)
        mr_varstream_fill(s);
    return mr_varbytes_get(&s->r);
}

static inline int64_t mr_varstream_get_signed(mr_varstream* s) {
    uint64_t v = mr_varstream_get(s);
    return (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
}

// The offset of the next byte to read.
static inline size_t mr_varstream_offset(const mr_varstream* s) {
    return s->next - (size_t)(s->r.end - s->r.p);
}

// Whether every byte was read, none bad.
static inline bool mr_varstream_done(const mr_varstream* s) {
    return !s->r.bad && s->r.p == s->r.end && s->next == s->end;
}

// Reads the rest (a sum needs every byte), and gives the sum of [from, end). 0, or the
// read's negative errno.
int mr_varstream_sum(mr_varstream* s, uint64_t* sum);

#endif
