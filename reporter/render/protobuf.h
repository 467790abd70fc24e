// SPDX-License-Identifier: MIT
// Protocol Buffers wire format, by hand: varints, tagged scalars, length-delimited strings
// and nested messages, written into a growable buffer. Just enough to write a message
// whose schema the caller knows (export_pprof.c); it never reads one.
#ifndef MR_PROTOBUF_H
#define MR_PROTOBUF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct mr_pb {
    uint8_t* data;
    size_t len, cap;
    int err; // sticky: -ENOMEM once a write could not grow the buffer (then nothing more)
} mr_pb;

void mr_pb_free(mr_pb* b);
// Empties the buffer (keeps its memory and its error).
void mr_pb_clear(mr_pb* b);

// A bare varint (no tag).
void mr_pb_varint(mr_pb* b, uint64_t v);
// Field `field` as a varint (uint64, int64 as two's complement, bool). proto3 leaves
// fields at their default out, so the *_opt forms write nothing for 0.
void mr_pb_uint(mr_pb* b, int field, uint64_t v);
void mr_pb_uint_opt(mr_pb* b, int field, uint64_t v);
// Field `field` as length-delimited bytes (a string, written even when empty).
void mr_pb_bytes(mr_pb* b, int field, const void* data, size_t len);

// A nested message or packed repeated field: mr_pb_begin returns where its body starts;
// write the body, then mr_pb_end prefixes it with the field's tag and the body's length.
size_t mr_pb_begin(const mr_pb* b);
void mr_pb_end(mr_pb* b, int field, size_t start);

#endif
