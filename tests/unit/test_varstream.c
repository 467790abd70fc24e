// SPDX-License-Identifier: MIT
// Stored bytes read a window at a time (reporter/base/varstream.h) against the same bytes
// read whole (varbytes.h): every varint and offset, for windows from the smallest up, the
// checksum of what was read, a read that fails; and SipHash given in pieces against the
// whole-buffer SipHash-1-3 it must equal.
#include "siphash.h"
#include "varbytes.h"
#include "varstream.h"

#include "../check.h"
#include "../rng.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static uint64_t rng = 0x2545f4914f6cdd1dull;

// SipHash-1-3 word by word, as written before it could take pieces.
static uint64_t reference_siphash(uint64_t k0, uint64_t k1, const unsigned char* s, size_t n) {
    uint64_t v0 = 0x736f6d6570736575ull ^ k0, v1 = 0x646f72616e646f6dull ^ k1;
    uint64_t v2 = 0x6c7967656e657261ull ^ k0, v3 = 0x7465646279746573ull ^ k1;
    size_t whole = n & ~(size_t)7;
    for (size_t i = 0; i <= whole; i += 8) {
        uint64_t m = 0;
        for (size_t k = 0; k < (i < whole ? 8 : n - whole); k++)
            m |= (uint64_t)s[i + k] << (8 * k);
        if (i == whole)
            m |= (uint64_t)(n & 0xff) << 56;
        v3 ^= m;
        MR_SIPROUND;
        v0 ^= m;
    }
    v2 ^= 0xff;
    MR_SIPROUND;
    MR_SIPROUND;
    MR_SIPROUND;
    return v0 ^ v1 ^ v2 ^ v3;
}

static void test_siphash_pieces(void) {
    unsigned char buf[300];
    for (size_t i = 0; i < sizeof buf; i++)
        buf[i] = (unsigned char)test_rng(&rng);
    for (size_t n = 0; n <= sizeof buf; n += 1 + n / 16) {
        uint64_t want = reference_siphash(3, 5, buf, n);
        CHECK_EQ_I64(mr_siphash_bytes(3, 5, buf, n), want);
        for (int round = 0; round < 8; round++) {
            mr_siphash_state s;
            mr_siphash_begin(&s, 3, 5);
            for (size_t at = 0; at < n;) {
                size_t piece = 1 + (size_t)(test_rng(&rng) % 19);
                piece = piece < n - at ? piece : n - at;
                mr_siphash_add(&s, buf + at, piece);
                at += piece;
            }
            mr_siphash_add(&s, buf, 0);
            CHECK_EQ_I64(mr_siphash_end(&s), want);
        }
    }
}

typedef struct source {
    const uint8_t* p;
    size_t len;
    size_t fail_at; // a read reaching this offset fails (SIZE_MAX: none)
    size_t reads;
} source;

static int read_source(void* ud, size_t offset, void* buf, size_t n) {
    source* s = ud;
    s->reads++;
    if (offset + n > s->len || offset + n > s->fail_at)
        return -EIO;
    memcpy(buf, s->p + offset, n);
    return 0;
}

// Varints of every length (1 to 10 bytes), some signed, sealed; read back through windows
// of 16 to 70 bytes from the start and from a value's offset.
static void test_windows(void) {
    enum { N = 400 };
    uint64_t vals[N];
    size_t offsets[N + 1];
    mr_varbuf b = {0};
    for (size_t i = 0; i < N; i++) {
        offsets[i] = b.n;
        unsigned bits = (unsigned)(test_rng(&rng) % 65);
        vals[i] = bits == 64 ? test_rng(&rng) : test_rng(&rng) & ((UINT64_C(1) << bits) - 1);
        if (i % 5 == 0)
            mr_varbytes_put_signed(&b, (int64_t)vals[i]);
        else
            mr_varbytes_put(&b, vals[i]);
    }
    offsets[N] = b.n;
    size_t len = 0;
    uint8_t* p = mr_varbytes_seal(&b, 7, 11, &len);
    CHECK(p != NULL);
    uint64_t sealed = 0;
    for (unsigned k = 0; k < 8; k++)
        sealed |= (uint64_t)p[len - 8 + k] << (8 * k);
    for (size_t window = 0; window <= 70; window += window < 16 ? 16 : 1) {
        source src = {p, len, SIZE_MAX, 0};
        mr_varstream s;
        CHECK_EQ_I64(mr_varstream_open(&s, read_source, &src, 0, len - 8, window, true, 7, 11), 0);
        for (size_t i = 0; i < N; i++) {
            CHECK_EQ_I64(mr_varstream_offset(&s), offsets[i]);
            uint64_t v = i % 5 == 0 ? (uint64_t)mr_varstream_get_signed(&s) : mr_varstream_get(&s);
            CHECK_EQ_I64(v, vals[i]);
        }
        CHECK(mr_varstream_done(&s));
        mr_varstream_get(&s); // past the end: bad, as mr_varbytes_get
        CHECK(s.r.bad);
        uint64_t sum;
        CHECK_EQ_I64(mr_varstream_sum(&s, &sum), 0);
        CHECK_EQ_I64(sum, sealed);
        mr_varstream_close(&s);
        // From a value on, without a sum; windows of at least 16 bytes.
        size_t from = (size_t)(test_rng(&rng) % N);
        CHECK_EQ_I64(
            mr_varstream_open(&s, read_source, &src, offsets[from], len - 8, window, false, 0, 0),
            0);
        CHECK(s.window >= 16);
        for (size_t i = from; i < N; i++)
            CHECK_EQ_I64(i % 5 == 0 ? (uint64_t)mr_varstream_get_signed(&s) : mr_varstream_get(&s),
                         vals[i]);
        CHECK(mr_varstream_done(&s));
        mr_varstream_close(&s);
    }
    // A read failing halfway: the values before it read, then bad with its errno; the sum
    // stops there too.
    source src = {p, len, offsets[N / 2], 0};
    mr_varstream s;
    CHECK_EQ_I64(mr_varstream_open(&s, read_source, &src, 0, len - 8, 32, true, 7, 11), 0);
    size_t good = 0;
    for (size_t i = 0; i < N && !s.r.bad; i++) {
        uint64_t v = i % 5 == 0 ? (uint64_t)mr_varstream_get_signed(&s) : mr_varstream_get(&s);
        good += !s.r.bad && v == vals[i];
    }
    CHECK(s.r.bad);
    CHECK_EQ_I64(s.err, -EIO);
    CHECK(good >= N / 2 - 32 && good < N);
    uint64_t sum;
    CHECK_EQ_I64(mr_varstream_sum(&s, &sum), -EIO);
    mr_varstream_close(&s);
    free(p);
}

int main(void) {
    test_siphash_pieces();
    test_windows();
    CHECK_DONE();
}
