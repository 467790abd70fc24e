// SPDX-License-Identifier: MIT
// Codec round trips (random and edge values) and rejection of corrupt blobs.
#include "../check.h"
#include "memtrace/codec.h"

#include <errno.h>
#include <stdlib.h>

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint64_t next_rand(void) {
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static void roundtrip(const mt_event* ev, size_t n) {
    uint8_t* buf = malloc(mt_codec_bound(n));
    mt_event* out = calloc(n ? n : 1, sizeof *out);
    size_t len = mt_codec_encode(ev, n, buf);
    CHECK(len <= mt_codec_bound(n));
    CHECK_EQ_I64(mt_codec_decode(buf, len, n, 1, out), 0);
    for (size_t i = 0; i < n; i++) {
        CHECK_EQ_I64(out[i].seq, ev[i].seq);
        CHECK_EQ_I64(out[i].ts, ev[i].ts);
        CHECK_EQ_I64(out[i].addr, ev[i].addr);
        CHECK_EQ_I64(out[i].size, ev[i].size);
        CHECK_EQ_I64(out[i].callsite, ev[i].callsite);
        CHECK_EQ_I64(out[i].tid, ev[i].tid);
        CHECK_EQ_I64(out[i].kind, ev[i].kind);
        CHECK_EQ_I64(out[i].heap, 1);
    }
    // Every truncation and every single-byte corruption must be rejected or decode to
    // something, never read out of bounds (run under ASan in CI).
    for (size_t cut = 0; cut < len; cut++)
        CHECK(mt_codec_decode(buf, cut, n, 1, out) != 0);
    for (size_t i = 0; i < len && i < 200; i++) {
        buf[i] ^= 0xff;
        (void)mt_codec_decode(buf, len, n, 1, out);
        buf[i] ^= 0xff;
    }
    CHECK(mt_codec_decode(buf, len, n + 1, 1, out) != 0);
    free(buf);
    free(out);
}

// CRC32C: the standard check value, and the CPU's instruction agrees with the table.
static void test_crc32c(void) {
    CHECK_EQ_I64(mt_crc32c(0, "123456789", 9), 0xe3069283);
    CHECK_EQ_I64(mt_crc32c_portable(0, "123456789", 9), 0xe3069283);
    CHECK_EQ_I64(mt_crc32c(0, "", 0), 0);
    uint8_t buf[1000];
    for (size_t i = 0; i < sizeof buf; i++)
        buf[i] = (uint8_t)next_rand();
    for (size_t len = 0; len <= sizeof buf; len += 1 + len / 3) {
        CHECK_EQ_I64(mt_crc32c(0, buf, len), mt_crc32c_portable(0, buf, len));
        // In pieces: the same as at once.
        CHECK_EQ_I64(mt_crc32c(mt_crc32c(0, buf, len / 3), buf + len / 3, len - len / 3),
                     mt_crc32c(0, buf, len));
    }
}

// A sealed chunk verifies; any single flipped bit, of its bytes or of a column the
// checksum covers, does not.
static void test_seal(const mt_event* ev, size_t n) {
    uint8_t* buf = malloc(mt_codec_bound(n));
    mt_chunk_header h = {1, (int64_t)ev[0].seq, (int64_t)ev[n - 1].seq, 5, 9, (int64_t)n};
    size_t payload = mt_codec_encode(ev, n, buf);
    size_t len = mt_chunk_seal(&h, buf, payload);
    CHECK_EQ_I64(len, payload + MT_CHUNK_CHECKSUM_BYTES);
    CHECK(len <= mt_codec_bound(n));
    CHECK_EQ_I64(mt_chunk_verify(&h, buf, len), (long)payload);
    size_t missed = 0;
    for (size_t bit = 0; bit < len * 8; bit++) {
        buf[bit / 8] ^= (uint8_t)(1u << bit % 8);
        missed += mt_chunk_verify(&h, buf, len) != -EBADMSG;
        buf[bit / 8] ^= (uint8_t)(1u << bit % 8);
    }
    int64_t* cols[] = {&h.heap, &h.seq_first, &h.seq_last, &h.ts_first, &h.ts_last, &h.count};
    for (size_t c = 0; c < 6; c++)
        for (int bit = 0; bit < 64; bit++) {
            *cols[c] = (int64_t)((uint64_t)*cols[c] ^ (1ull << bit));
            missed += mt_chunk_verify(&h, buf, len) != -EBADMSG;
            *cols[c] = (int64_t)((uint64_t)*cols[c] ^ (1ull << bit));
        }
    CHECK_EQ_I64(missed, 0);
    for (size_t cut = 0; cut < len; cut++)
        CHECK_EQ_I64(mt_chunk_verify(&h, buf, cut), -EBADMSG);
    free(buf);
}

int main(void) {
    test_crc32c();
    enum { N = 5000 };
    mt_event* ev = calloc(N, sizeof *ev);
    uint64_t seq = 10;
    for (size_t i = 0; i < N; i++) {
        seq += 1 + next_rand() % 3;
        ev[i] = (mt_event){.seq = seq,
                           .ts = (int64_t)(seq * 100 + next_rand() % 50),
                           .addr = 0x7f0000000000ull + (next_rand() % 100000) * 16,
                           .size = next_rand() % 70000,
                           .callsite = (uint32_t)(next_rand() % 4000),
                           .tid = 1000 + (uint32_t)(i / 700),
                           .kind = (uint8_t)(1 + next_rand() % 7)};
    }
    roundtrip(ev, N);
    roundtrip(ev, 1);
    test_seal(ev, 300);
    test_seal(ev, 1);
    // The tracer's shape: frees carry no size and no callsite (their columns are omitted),
    // and seq gaps both small and large (other threads' events in between).
    for (size_t i = 0; i < N; i++) {
        if (ev[i].kind == 4 || ev[i].kind == 6 || ev[i].kind == 7) {
            ev[i].size = 0;
            ev[i].callsite = 0;
        }
        if (i > 0 && i % 97 == 0) {
            for (size_t k = i; k < N; k++)
                ev[k].seq += 5 + (i % 1000);
        }
    }
    roundtrip(ev, N);
    // Extremes: full-range addresses and sizes, backwards timestamps, max callsite id.
    mt_event edge[3] = {
        {.seq = 1,
         .ts = 5,
         .addr = UINT64_MAX,
         .size = UINT64_MAX,
         .callsite = UINT32_MAX,
         .tid = UINT32_MAX,
         .kind = 255},
        {.seq = UINT64_MAX - 1, .ts = -3, .addr = 0, .size = 0, .callsite = 0, .tid = 0, .kind = 1},
        {.seq = UINT64_MAX,
         .ts = INT64_MAX,
         .addr = 16,
         .size = 1,
         .callsite = 7,
         .tid = 1,
         .kind = 7},
    };
    roundtrip(edge, 3);
    free(ev);
    CHECK_DONE();
}
