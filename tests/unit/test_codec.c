// SPDX-License-Identifier: MIT
// Codec round trips (random and edge values) and rejection of corrupt blobs, for codecs 1-5.
#include "../check.h"
#include "../rng.h"
#include "memtrace/codec.h"
#include "memtrace/schema.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

static uint64_t rng = 0x9e3779b97f4a7c15ull;

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
    CHECK_EQ_I64(mt_codec_crc32c(0, "123456789", 9), 0xe3069283);
    CHECK_EQ_I64(mt_codec_crc32c_portable(0, "123456789", 9), 0xe3069283);
    CHECK_EQ_I64(mt_codec_crc32c(0, "", 0), 0);
    uint8_t buf[1000];
    for (size_t i = 0; i < sizeof buf; i++)
        buf[i] = (uint8_t)test_rng(&rng);
    for (size_t len = 0; len <= sizeof buf; len += 1 + len / 3) {
        CHECK_EQ_I64(mt_codec_crc32c(0, buf, len), mt_codec_crc32c_portable(0, buf, len));
        // In pieces: the same as at once.
        CHECK_EQ_I64(
            mt_codec_crc32c(mt_codec_crc32c(0, buf, len / 3), buf + len / 3, len - len / 3),
            mt_codec_crc32c(0, buf, len));
    }
}

// A sealed chunk verifies; any single flipped bit, of its bytes or of a column the
// checksum covers, does not.
static void test_seal(const mt_event* ev, size_t n) {
    uint8_t* buf = malloc(mt_codec_bound(n));
    mt_chunk_header h = {1, (int64_t)ev[0].seq, (int64_t)ev[n - 1].seq, 5, 9, (int64_t)n};
    size_t payload = mt_codec_encode(ev, n, buf);
    size_t len = mt_codec_chunk_seal(&h, buf, payload);
    CHECK_EQ_I64(len, payload + MT_CHUNK_CHECKSUM_BYTES);
    CHECK(len <= mt_codec_bound(n));
    CHECK_EQ_I64(mt_codec_chunk_verify(&h, buf, len), (long)payload);
    size_t missed = 0;
    for (size_t bit = 0; bit < len * 8; bit++) {
        buf[bit / 8] ^= (uint8_t)(1u << bit % 8);
        missed += mt_codec_chunk_verify(&h, buf, len) != -EBADMSG;
        buf[bit / 8] ^= (uint8_t)(1u << bit % 8);
    }
    int64_t* cols[] = {&h.heap, &h.seq_first, &h.seq_last, &h.ts_first, &h.ts_last, &h.count};
    for (size_t c = 0; c < 6; c++)
        for (int bit = 0; bit < 64; bit++) {
            *cols[c] = (int64_t)((uint64_t)*cols[c] ^ (1ull << bit));
            missed += mt_codec_chunk_verify(&h, buf, len) != -EBADMSG;
            *cols[c] = (int64_t)((uint64_t)*cols[c] ^ (1ull << bit));
        }
    CHECK_EQ_I64(missed, 0);
    for (size_t cut = 0; cut < len; cut++)
        CHECK_EQ_I64(mt_codec_chunk_verify(&h, buf, cut), -EBADMSG);
    free(buf);
}

static void check_same(const mt_event* got, const mt_event* want, size_t n, uint8_t heap) {
    size_t bad = 0;
    for (size_t i = 0; i < n; i++)
        bad += got[i].seq != want[i].seq || got[i].ts != want[i].ts ||
               got[i].addr != want[i].addr || got[i].size != want[i].size ||
               got[i].callsite != want[i].callsite || got[i].tid != want[i].tid ||
               got[i].kind != want[i].kind || got[i].heap != heap;
    CHECK_EQ_I64(bad, 0);
}

// Codecs 3 to 5: a round trip through zstd; every truncation, and every flipped byte of the
// compressed payload, is rejected or decodes to something (never out of bounds: ASan).
// Returns the payload's size.
static size_t roundtrip_codec(mt_chunk_coder* c, int codec, const mt_event* ev, size_t n) {
    uint8_t* buf = malloc(mt_codec_zstd_bound(n));
    mt_event* out = calloc(n, sizeof *out);
    size_t len = mt_codec_zstd_encode(c, codec, ev, n, buf);
    CHECK(len > 0 && len <= mt_codec_zstd_bound(n));
    CHECK(len + MT_CHUNK_CHECKSUM_BYTES <= mt_codec_bound(n));
    CHECK_EQ_I64(mt_codec_zstd_decode(c, codec, buf, len, n, 3, out), 0);
    check_same(out, ev, n, 3);
    for (size_t cut = 0; cut < len; cut += 1 + cut / 8)
        CHECK(mt_codec_zstd_decode(c, codec, buf, cut, n, 1, out) != 0);
    for (size_t i = 0; i < len && i < 300; i++) {
        buf[i] ^= 0x5a;
        (void)mt_codec_zstd_decode(c, codec, buf, len, n, 1, out);
        buf[i] ^= 0x5a;
    }
    CHECK(mt_codec_zstd_decode(c, codec, buf, len, n + 1, 1, out) != 0);
    CHECK(mt_codec_zstd_decode(c, codec, buf, len, n - 1, 1, out) != 0);
    // The coder is reused from chunk to chunk: the same events again give the same bytes.
    uint8_t* again = malloc(mt_codec_zstd_bound(n));
    CHECK_EQ_I64(mt_codec_zstd_encode(c, codec, ev, n, again), len);
    CHECK(memcmp(buf, again, len) == 0);
    free(again);
    free(buf);
    free(out);
    return len;
}

static size_t roundtrip_zstd(mt_chunk_coder* c, const mt_event* ev, size_t n) {
    size_t len = roundtrip_codec(c, MT_CODEC_ZSTD_COLUMNS_CRC32C, ev, n);
    roundtrip_codec(c, MT_CODEC_ZSTD_UNITS_CRC32C, ev, n);
    roundtrip_codec(c, MT_CODEC_ZSTD_RUNS_CRC32C, ev, n);
    return len;
}

// Codec 4: times that are all multiples of the coder's unit are stored in that unit and
// decode to the same ns; one time off the unit makes the chunk keep ns, still exact.
// Events a few hundred ns apart take two bytes of delta each in ns, mostly 0 or 1 in us.
static void test_time_unit(mt_chunk_coder* c) {
    enum { N = 4096 };
    mt_event* ev = calloc(N, sizeof *ev);
    int64_t ts = 7000;
    for (size_t i = 0; i < N; i++) {
        ts += 150 + (int64_t)(test_rng(&rng) % 700);
        bool alloc = i % 2 == 0;
        ev[i] = (mt_event){.seq = 1 + i,
                           .ts = ts - ts % 1000,
                           .addr = 0x1000 + 16 * (i / 2 % 8),
                           .size = alloc ? 32 : 0,
                           .callsite = alloc ? 3 : 0,
                           .tid = 5,
                           .kind = alloc ? MT_KIND_MALLOC : MT_KIND_FREE};
    }
    mt_codec_chunk_coder_set_time_unit(c, 1000);
    size_t us = roundtrip_codec(c, MT_CODEC_ZSTD_UNITS_CRC32C, ev, N);
    mt_codec_chunk_coder_set_time_unit(c, 1);
    size_t ns = roundtrip_codec(c, MT_CODEC_ZSTD_UNITS_CRC32C, ev, N);
    fprintf(stderr, "time unit: %zu bytes in ns, %zu in us\n", ns, us);
    CHECK(us * 10 < ns * 8);
    // Codec 5: the same us deltas (0 or 1, a few 2) as runs of zeros take less than a byte each.
    mt_codec_chunk_coder_set_time_unit(c, 1000);
    size_t runs = roundtrip_codec(c, MT_CODEC_ZSTD_RUNS_CRC32C, ev, N);
    fprintf(stderr, "time unit: %zu bytes in us runs\n", runs);
    CHECK(runs * 10 < us * 9);
    // Not every time a multiple of the unit: written in ns, as codec 3 would be.
    ev[N / 2].ts++;
    mt_codec_chunk_coder_set_time_unit(c, 1000);
    CHECK(roundtrip_codec(c, MT_CODEC_ZSTD_UNITS_CRC32C, ev, N) > us);
    // The largest unit, and times far from 0 in it, negative ones too.
    mt_codec_chunk_coder_set_time_unit(c, 1000000000);
    for (size_t i = 0; i < N; i++)
        ev[i].ts = ((int64_t)i - 7) * 1000000000 * 1000;
    roundtrip_codec(c, MT_CODEC_ZSTD_UNITS_CRC32C, ev, N);
    roundtrip_codec(c, MT_CODEC_ZSTD_RUNS_CRC32C, ev, N);
    mt_codec_chunk_coder_set_time_unit(c, 1);
    free(ev);
}

// Codec 5's runs: a chunk that ends in a run of equal times, or in a step; deltas of 1, of
// more, backwards, from a first time of 0 or not; a run as long as the chunk.
static void test_time_runs(mt_chunk_coder* c) {
    enum { N = 300 };
    mt_event ev[N];
    static const int64_t steps[] = {0, 1, 2, -1, 1000, -5000, 0, 0, 1, 1};
    for (int shape = 0; shape < 6; shape++) {
        int64_t ts = shape % 2 ? 0 : 123;
        for (size_t i = 0; i < N; i++) {
            int64_t dt = shape == 4 ? 0 : steps[(i * (size_t)(shape + 1)) % 10];
            ts += i == 0 ? 0 : dt;
            ev[i] =
                (mt_event){.seq = 1 + i, .ts = ts, .addr = 16 * i, .tid = 1, .kind = MT_KIND_FREE};
        }
        if (shape == 5) // ends in a step
            ev[N - 1].ts = ev[N - 2].ts + 1;
        for (size_t n = 1; n <= N; n += n < 4 ? 1 : 37)
            roundtrip_codec(c, MT_CODEC_ZSTD_RUNS_CRC32C, ev, n);
        roundtrip_codec(c, MT_CODEC_ZSTD_RUNS_CRC32C, ev, N);
    }
}

// Whole chunks of each codec: encode, seal, verify and decode agree; a flipped bit is a
// checksum mismatch (codecs 2 and 3); a chunk that lies about its first seq does not decode.
static void test_chunks(mt_chunk_coder* c, const mt_event* ev, size_t n) {
    uint8_t* buf = malloc(mt_codec_bound(n));
    mt_event* out = calloc(n, sizeof *out);
    for (int codec = 1; codec <= 5; codec++) {
        mt_chunk_header h = {2, (int64_t)ev[0].seq, (int64_t)ev[n - 1].seq, 0, 0, (int64_t)n};
        size_t len = mt_codec_chunk_encode(c, codec, &h, ev, n, buf);
        CHECK(len > 0 && len <= mt_codec_bound(n));
        CHECK_EQ_I64(mt_codec_chunk_decode(c, codec, &h, buf, len, out), 0);
        check_same(out, ev, n, 2);
        if (codec > 1) {
            buf[len / 2] ^= 4;
            CHECK_EQ_I64(mt_codec_chunk_decode(c, codec, &h, buf, len, out), -EBADMSG);
            buf[len / 2] ^= 4;
        }
        CHECK(mt_codec_chunk_decode(c, codec % 5 + 1, &h, buf, len, out) != 0); // another codec
        h.seq_first++;
        if (codec == 1) // no checksum: the decoder compares the first seq
            CHECK_EQ_I64(mt_codec_chunk_decode(c, codec, &h, buf, len, out), -EPROTO);
        h.count = 0;
        CHECK_EQ_I64(mt_codec_chunk_decode(c, codec, &h, buf, len, out), -EPROTO);
    }
    CHECK_EQ_I64(mt_codec_chunk_encode(c, 77, &(mt_chunk_header){0}, ev, n, buf), 0);
    CHECK_EQ_I64(mt_codec_of_schema(1), MT_CODEC_VARINT_COLUMNS);
    CHECK_EQ_I64(mt_codec_of_schema(2), MT_CODEC_VARINT_COLUMNS_CRC32C);
    CHECK_EQ_I64(mt_codec_of_schema(3), MT_CODEC_ZSTD_COLUMNS_CRC32C);
    CHECK_EQ_I64(mt_codec_of_schema(4), MT_CODEC_ZSTD_UNITS_CRC32C);
    CHECK_EQ_I64(mt_codec_of_schema(5), MT_CODEC_ZSTD_RUNS_CRC32C);
    free(buf);
    free(out);
}

// A program's shape: a loop allocating the same few (size, callsite) pairs and freeing each
// block a few events later, glibc handing freed addresses back, times a few hundred ns
// apart with jitter. Codec 3 must store it in a fraction of codec 1's bytes.
static void test_loop_compresses(mt_chunk_coder* c) {
    enum { N = 8192 };
    mt_event* ev = calloc(N, sizeof *ev);
    uint64_t live[4] = {0};
    int64_t ts = 1000000;
    for (size_t i = 0; i < N; i++) {
        size_t k = i % 8 / 2; // alloc k, free k, for 4 pairs per iteration
        bool alloc = i % 2 == 0;
        ts += 80 + (int64_t)(test_rng(&rng) % 64);
        if (alloc)
            live[k] = 0x55550000ull + k * 0x40 + (test_rng(&rng) % 3 == 0 ? i * 0x40 : 0);
        ev[i] = (mt_event){.seq = 100 + i,
                           .ts = ts,
                           .addr = live[k],
                           .size = alloc ? 24 + k * 16 : 0,
                           .callsite = alloc ? 40 + (uint32_t)k : 0,
                           .tid = 77,
                           .kind = alloc ? MT_KIND_MALLOC : MT_KIND_FREE};
    }
    size_t zstd = roundtrip_zstd(c, ev, N);
    uint8_t* buf = malloc(mt_codec_bound(N));
    size_t varint = mt_codec_encode(ev, N, buf);
    fprintf(stderr, "loop: codec 1 %.2f B/event, codec 3 %.2f B/event\n", (double)varint / N,
            (double)zstd / N);
    CHECK(zstd * 4 < varint);
    free(buf);
    free(ev);
}

// The blocks of the one zstd frame of a codec 3 payload (-1 when it is not one frame).
static int zstd_blocks(const uint8_t* buf, size_t len) {
    // The frame header (RFC 8878 3.1.1.1): magic, descriptor, window, dictionary id, size.
    if (len < 6 || ZSTD_getFrameContentSize(buf, len) == ZSTD_CONTENTSIZE_ERROR)
        return -1;
    uint8_t d = buf[4];
    bool single = d >> 5 & 1;
    static const size_t did[4] = {0, 1, 2, 4}, fcs[4] = {0, 2, 4, 8};
    size_t pos = 5 + !single + did[d & 3] + (d >> 6 == 0 ? single : fcs[d >> 6]);
    for (int blocks = 1; pos + 3 <= len; blocks++) {
        uint32_t h =
            (uint32_t)buf[pos] | (uint32_t)buf[pos + 1] << 8 | (uint32_t)buf[pos + 2] << 16;
        size_t size = h >> 3, type = h >> 1 & 3;
        pos += 3 + (type == 1 ? 1 : size); // an RLE block stores one byte
        if (h & 1)                         // the last block
            return pos == len ? blocks : -1;
    }
    return -1;
}

// Columns are flushed into blocks of their own, so each has its own entropy tables: a chunk
// whose 11 columns all hold something is at least 8 blocks (zstd may merge tiny ones), where
// one block of 40 KB was written before. A chunk written as one block, as codec 3 was at
// first, still decodes (the frame's content is the same).
static void test_block_per_column(mt_chunk_coder* c, const mt_event* ev, size_t n) {
    uint8_t* buf = malloc(mt_codec_zstd_bound(n));
    size_t len = mt_codec_zstd_encode(c, MT_CODEC_ZSTD_UNITS_CRC32C, ev, n, buf);
    CHECK(len > 0);
    int blocks = zstd_blocks(buf, len);
    fprintf(stderr, "block per column: %zu events, %zu bytes, %d blocks\n", n, len, blocks);
    CHECK(blocks >= 8);
    unsigned long long size = ZSTD_getFrameContentSize(buf, len);
    CHECK(size != ZSTD_CONTENTSIZE_UNKNOWN && size != ZSTD_CONTENTSIZE_ERROR);
    uint8_t* pre = malloc((size_t)size);
    CHECK_EQ_I64(ZSTD_decompress(pre, (size_t)size, buf, len), (int64_t)size);
    uint8_t* one = malloc(ZSTD_compressBound((size_t)size));
    size_t olen = ZSTD_compress(one, ZSTD_compressBound((size_t)size), pre, (size_t)size, 3);
    CHECK(!ZSTD_isError(olen));
    CHECK_EQ_I64(zstd_blocks(one, olen), 1);
    mt_event* out = calloc(n, sizeof *out);
    CHECK_EQ_I64(mt_codec_zstd_decode(c, MT_CODEC_ZSTD_UNITS_CRC32C, one, olen, n, 1, out), 0);
    check_same(out, ev, n, 1);
    free(out);
    free(one);
    free(pre);
    free(buf);
}

int main(void) {
    test_crc32c();
    mt_chunk_coder* coder = mt_codec_chunk_coder_new();
    CHECK(coder != NULL);
    test_loop_compresses(coder);
    test_time_unit(coder);
    test_time_runs(coder);
    enum { N = 5000 };
    mt_event* ev = calloc(N, sizeof *ev);
    uint64_t seq = 10;
    for (size_t i = 0; i < N; i++) {
        seq += 1 + test_rng(&rng) % 3;
        ev[i] = (mt_event){.seq = seq,
                           .ts = (int64_t)(seq * 100 + test_rng(&rng) % 50),
                           .addr = 0x7f0000000000ull + (test_rng(&rng) % 100000) * 16,
                           .size = test_rng(&rng) % 70000,
                           .callsite = (uint32_t)(test_rng(&rng) % 4000),
                           .tid = 1000 + (uint32_t)(i / 700),
                           .kind = (uint8_t)(1 + test_rng(&rng) % 7)};
    }
    roundtrip(ev, N);
    roundtrip(ev, 1);
    roundtrip_zstd(coder, ev, N);
    roundtrip_zstd(coder, ev, 1);
    test_block_per_column(coder, ev, N);
    test_seal(ev, 300);
    test_seal(ev, 1);
    test_chunks(coder, ev, 300);
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
    roundtrip_zstd(coder, ev, N);
    test_chunks(coder, ev, N);
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
    roundtrip_zstd(coder, edge, 3);
    test_chunks(coder, edge, 3);
    mt_codec_chunk_coder_free(coder);
    free(ev);
    CHECK_DONE();
}
