// SPDX-License-Identifier: MIT
// The callsite_chunk codec (docs/capture-format.md, "Callsites"): a batch of callsites as
// four columns of varints (id, parent, frame and depth, each as a difference from what the
// row before or the tree predicts), compressed with zstd, then a CRC32C. A row per callsite
// took 16.5 bytes in SQLite's B-tree; a chunk takes under one. Pure functions: no SQLite, no
// I/O; the decoder never trusts its input, since chunks come from files.
#include "codec_varint.h"

#include "memtrace/capture.h"
#include "memtrace/codec.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

// The columns: 4 varints of at most 10 bytes per callsite.
#define ROW_MAX 40
#define ZSTD_LEVEL 3

size_t mt_capture_callsite_chunk_bound(size_t n) {
    return ZSTD_compressBound(n * ROW_MAX) + MT_CHUNK_CHECKSUM_BYTES;
}

// a - b - 1 without overflow: forged or imported ids may be anything.
static uint64_t step(int64_t a, int64_t b) {
    return zigzag((int64_t)((uint64_t)a - (uint64_t)b - 1));
}

// Covers the count column too, so that a row whose count was changed is caught.
static uint32_t checksum(int64_t count, const uint8_t* data, size_t len) {
    uint8_t head[8];
    for (int i = 0; i < 8; i++)
        head[i] = (uint8_t)((uint64_t)count >> (8 * i));
    return mt_codec_crc32c(mt_codec_crc32c(0, head, sizeof head), data, len);
}

size_t mt_capture_callsite_chunk_encode(const mt_callsite_rec* c, size_t n, uint8_t* out) {
    if (n == 0 || n > MT_CALLSITE_CHUNK_MAX)
        return 0;
    uint8_t* raw = malloc(n * ROW_MAX);
    if (!raw)
        return 0;
    // Column by column: zstd finds each column's repeats (chains of parent = id - 1, a
    // stack's frames again under another caller) in bytes alike.
    uint8_t* p = raw;
    int64_t prev = 0;
    for (size_t i = 0; i < n; prev = c[i++].id)
        p = put_varint(p, step(c[i].id, prev));
    for (size_t i = 0; i < n; i++)
        p = put_varint(p, step(c[i].id, c[i].parent_id));
    prev = 0;
    for (size_t i = 0; i < n; prev = c[i++].frame_id)
        p = put_varint(p, step(c[i].frame_id, prev));
    prev = 0;
    for (size_t i = 0; i < n; prev = c[i++].depth)
        p = put_varint(p, step(c[i].depth, prev));
    size_t cap = mt_capture_callsite_chunk_bound(n) - MT_CHUNK_CHECKSUM_BYTES;
    size_t len = ZSTD_compress(out, cap, raw, (size_t)(p - raw), ZSTD_LEVEL);
    free(raw);
    if (ZSTD_isError(len))
        return 0;
    uint32_t crc = checksum((int64_t)n, out, len);
    for (int i = 0; i < 4; i++)
        out[len + (size_t)i] = (uint8_t)(crc >> (8 * i));
    return len + MT_CHUNK_CHECKSUM_BYTES;
}

static int64_t get_delta(reader* r) {
    return unzigzag(get_varint(r));
}

int mt_capture_callsite_chunk_decode(const uint8_t* data, size_t len, int64_t count,
                                     mt_callsite_rec* out) {
    if (count <= 0 || count > MT_CALLSITE_CHUNK_MAX || len < MT_CHUNK_CHECKSUM_BYTES)
        return -EPROTO;
    len -= MT_CHUNK_CHECKSUM_BYTES;
    uint32_t stored = 0;
    for (int i = 0; i < 4; i++)
        stored |= (uint32_t)data[len + (size_t)i] << (8 * i);
    if (stored != checksum(count, data, len))
        return -EBADMSG;
    size_t n = (size_t)count;
    unsigned long long size = ZSTD_getFrameContentSize(data, len);
    if (size == ZSTD_CONTENTSIZE_UNKNOWN || size == ZSTD_CONTENTSIZE_ERROR || size > n * ROW_MAX ||
        size < n * 4)
        return -EPROTO;
    uint8_t* raw = malloc(size ? (size_t)size : 1);
    if (!raw)
        return -ENOMEM;
    size_t got = ZSTD_decompress(raw, (size_t)size, data, len);
    if (ZSTD_isError(got) || got != size) {
        free(raw);
        return -EPROTO;
    }
    // Sums of differences wrap in uint64_t: a forged chunk gives wrong numbers, never
    // undefined behaviour (the capture reader then checks the tree).
    reader r = {raw, raw + got, false};
    uint64_t v = 0;
    for (size_t i = 0; i < n; i++)
        out[i].id = (int64_t)(v += 1 + (uint64_t)get_delta(&r));
    for (size_t i = 0; i < n; i++)
        out[i].parent_id = (int64_t)((uint64_t)out[i].id - 1 - (uint64_t)get_delta(&r));
    v = 0;
    for (size_t i = 0; i < n; i++)
        out[i].frame_id = (int64_t)(v += 1 + (uint64_t)get_delta(&r));
    v = 0;
    for (size_t i = 0; i < n; i++)
        out[i].depth = (int64_t)(v += 1 + (uint64_t)get_delta(&r));
    bool ok = !r.bad && r.p == r.end;
    free(raw);
    return ok ? 0 : -EPROTO;
}
