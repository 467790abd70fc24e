// SPDX-License-Identifier: MIT
// The event chunk codecs (event_chunk.codec, docs/capture-format.md). Codec 1: a few thousand
// events per BLOB, stored column by column (seq, ts, kind, tid runs, addr, size, callsite),
// delta- and varint-encoded. Codec 2 (schema 2): the same followed by a CRC32C of the chunk,
// because SQLite checks its pages' structure, not the bytes of a BLOB. Codec 3 (schema 3):
// columns in which repeated addresses and (size, callsite) pairs are references, compressed
// with zstd, then the CRC32C. Codec 4 (schema 4): codec 3 whose times are counted in a unit
// the chunk states (the tracer's time resolution, 1 us by default). Codec 5 (schema 5): codec
// 4 whose time deltas are runs of zeros, each ended by a step. Writers use mt_codec_chunk_encode,
// readers mt_codec_chunk_decode.
// mt_codec_* of codecs 1 and 2 are pure functions (no allocation, no I/O); codec 3 needs an
// mt_chunk_coder, which allocates once when made. All are safe on the tracer's writer thread.
#ifndef MEMTRACE_CODEC_H
#define MEMTRACE_CODEC_H

#include "memtrace/event.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

// The most events a chunk may hold: the tracer writes at most 8192 (a thread's buffer), the
// NPU importer 4096. Readers refuse a row claiming more before decoding it: a chunk of 1 KB
// can inflate into millions of events, so its count is what bounds the memory a read takes.
#define MT_CHUNK_EVENTS_MAX 65536

// Worst-case size of a chunk of n events in any codec, checksum included; size the output
// buffer of mt_codec_chunk_encode (and of mt_codec_encode) with it.
size_t mt_codec_bound(size_t n);

// ---- codec 1 (and the payload of codec 2)

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
uint32_t mt_codec_crc32c(uint32_t crc, const void* data, size_t len);
// The same by table lookup, whatever the CPU (the unit test compares both).
uint32_t mt_codec_crc32c_portable(uint32_t crc, const void* data, size_t len);

// Appends the checksum of (h, data[0..len)) at data[len] (little-endian) and returns the
// new length. data must have MT_CHUNK_CHECKSUM_BYTES spare bytes (mt_codec_bound has them).
size_t mt_codec_chunk_seal(const mt_chunk_header* h, uint8_t* data, size_t len);

// Checks the checksum at the end of a sealed chunk. Returns the length of the encoded
// events before it, or -EBADMSG when the checksum does not match (or there is none).
long mt_codec_chunk_verify(const mt_chunk_header* h, const uint8_t* data, size_t len);

// ---- codecs 3, 4 and 5

// zstd's contexts and the buffers of one thread that writes or reads codec 3 chunks.
typedef struct mt_chunk_coder mt_chunk_coder;
mt_chunk_coder* mt_codec_chunk_coder_new(void); // NULL when out of memory
void mt_codec_chunk_coder_free(mt_chunk_coder* c);
// The zstd level of the chunks c encodes from now on (bench/codec compares levels; the
// tracer keeps the default).
void mt_codec_chunk_coder_set_level(mt_chunk_coder* c, int level);
// Codec 4: the time unit in ns (1 to 10^9) of the chunks c encodes from now on, for a chunk
// whose every time is a multiple of it; other chunks are written in ns. Default 1.
void mt_codec_chunk_coder_set_time_unit(mt_chunk_coder* c, int64_t unit);

// Worst-case codec 3, 4 or 5 payload of n events (without the checksum).
size_t mt_codec_zstd_bound(size_t n);

// Encodes n >= 1 events (seq strictly increasing) as a payload of `codec` (3 to 5) into out,
// which holds mt_codec_zstd_bound(n) bytes. Returns the bytes written, 0 when out of memory.
size_t mt_codec_zstd_encode(mt_chunk_coder* c, int codec, const mt_event* ev, size_t n,
                            uint8_t* out);

// Decodes a payload of `codec` (3 to 5) of exactly `count` events into out (count events);
// `heap` is copied into each event. Returns 0, -EPROTO when it is corrupt, -ENOMEM.
int mt_codec_zstd_decode(mt_chunk_coder* c, int codec, const uint8_t* data, size_t len,
                         size_t count, uint8_t heap, mt_event* out);

// ---- whole chunks

// The codec every chunk of a capture of schema `version` has: a schema 1 capture holds codec
// 1 only, schema 2 codec 2 only, and so on to schema 5, codec 5 only; schema 6 codec 5 too.
int mt_codec_of_schema(int64_t version);

// Encodes n >= 1 events as a chunk of `codec` (1 to 5) whose row has the columns h (the
// checksum covers them) into out (mt_codec_bound(n) bytes). c may be NULL for codecs 1 and 2.
// Returns the BLOB's length, 0 when out of memory or for an unknown codec.
size_t mt_codec_chunk_encode(mt_chunk_coder* c, int codec, const mt_chunk_header* h,
                             const mt_event* ev, size_t n, uint8_t* out);

// Checks and decodes the BLOB of a chunk row of `codec` with columns h into out (h->count
// events, each given heap h->heap). Returns 0; -EBADMSG when its checksum does not match;
// -EPROTO when it does not decode into h->count events starting at seq h->seq_first (or the
// codec is unknown); -ENOMEM. c may be NULL for codecs 1 and 2.
int mt_codec_chunk_decode(mt_chunk_coder* c, int codec, const mt_chunk_header* h,
                          const uint8_t* data, size_t len, mt_event* out);

#endif
