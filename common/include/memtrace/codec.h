// SPDX-License-Identifier: MIT
// The event chunk codec (MT_CODEC_VARINT_COLUMNS): a few thousand events per BLOB,
// stored column by column: seq, ts, kind, tid runs, addr, size, callsite,
// delta- and varint-encoded. Pure functions: no allocation,
// no I/O, safe to call from the tracer's writer thread.
#ifndef MEMTRACE_CODEC_H
#define MEMTRACE_CODEC_H

#include "memtrace/event.h"

#include <stddef.h>
#include <stdint.h>

// Worst-case encoded size of n events; size the output buffer with it.
size_t mt_codec_bound(size_t n);

// Encodes n events (seq strictly increasing) into out. Returns the bytes written.
size_t mt_codec_encode(const mt_event* ev, size_t n, uint8_t* out);

// Decodes a chunk written by mt_codec_encode. `count` is the event_chunk.count column and
// `out` must hold that many events; `heap` is copied into each event.
// Returns 0, or -EPROTO when the blob is corrupt or does not hold exactly `count` events.
int mt_codec_decode(const uint8_t* data, size_t len, size_t count, uint8_t heap, mt_event* out);

#endif
