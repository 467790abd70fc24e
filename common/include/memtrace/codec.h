// SPDX-License-Identifier: MIT
// The event chunk codec: a few thousand events per BLOB, stored column by column: seq, ts,
// kind, tid runs, addr, size, callsite, delta- and varint-encoded; since schema 2 followed by
// a CRC32C of the chunk (MT_CODEC_VARINT_COLUMNS_CRC32C), because SQLite checks its pages'
// structure, not the bytes of a BLOB. Pure functions: no allocation, no I/O, safe to call
// from the tracer's writer thread.
#ifndef MEMTRACE_CODEC_H
#define MEMTRACE_CODEC_H

#include "memtrace/event.h"

#include <stddef.h>
#include <stdint.h>

// Worst-case encoded size of n events, checksum included; size the output buffer with it.
size_t mt_codec_bound(size_t n);

// Encodes n events (seq strictly increasing) into out. Returns the bytes written.
size_t mt_codec_encode(const mt_event* ev, size_t n, uint8_t* out);

// Decodes a chunk written by mt_codec_encode. `count` is the event_chunk.count column and
// `out` must hold that many events; `heap` is copied into each event.
// Returns 0, or -EPROTO when the blob is corrupt or does not hold exactly `count` events.
int mt_codec_decode(const uint8_t* data, size_t len, size_t count, uint8_t heap, mt_event* out);

// ---- chunk checksum (codec MT_CODEC_VARINT_COLUMNS_CRC32C)

// Bytes the checksum adds after the encoded events.
#define MT_CHUNK_CHECKSUM_BYTES 4

// The event_chunk columns the checksum covers besides the data: a bit flipped in any of
// them (a chunk moved to another heap, a wrong seq or count) is caught too.
typedef struct mt_chunk_header {
    int64_t heap, seq_first, seq_last, ts_first, ts_last, count;
} mt_chunk_header;

// CRC32C (Castagnoli) of len bytes, continuing from crc (0 to start).
// Uses the CPU's crc32 instruction where there is one (x86-64 SSE4.2).
uint32_t mt_crc32c(uint32_t crc, const void* data, size_t len);
// The same by table lookup, whatever the CPU (the unit test compares both).
uint32_t mt_crc32c_portable(uint32_t crc, const void* data, size_t len);

// Appends the checksum of (h, data[0..len)) at data[len] (little-endian) and returns the
// new length. data must have MT_CHUNK_CHECKSUM_BYTES spare bytes (mt_codec_bound has them).
size_t mt_chunk_seal(const mt_chunk_header* h, uint8_t* data, size_t len);

// Checks the checksum at the end of a sealed chunk. Returns the length of the encoded
// events before it, or -EBADMSG when the checksum does not match (or there is none).
long mt_chunk_verify(const mt_chunk_header* h, const uint8_t* data, size_t len);

#endif
