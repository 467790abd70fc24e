// SPDX-License-Identifier: MIT
// Protocol Buffers wire format, by hand: varints, tagged scalars, length-delimited strings
// and nested messages, written into a growable buffer. Just enough to write a message
// whose schema the caller knows (export_pprof.c); it never reads one.
#ifndef MR_PROTOBUF_H
#define MR_PROTOBUF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct mr_protobuf {
    uint8_t* data;
    size_t len, cap;
    int err; // sticky: -ENOMEM once a write could not grow the buffer (then nothing more)
} mr_protobuf;

void mr_protobuf_free(mr_protobuf* b);
// Empties the buffer (keeps its memory and its error).
void mr_protobuf_clear(mr_protobuf* b);

// A bare varint (no tag).
void mr_protobuf_varint(mr_protobuf* b, uint64_t v);
// Field `field` as a varint (uint64, int64 as two's complement, bool). proto3 leaves
// fields at their default out, so the *_opt forms write nothing for 0.
void mr_protobuf_uint(mr_protobuf* b, int field, uint64_t v);
void mr_protobuf_uint_opt(mr_protobuf* b, int field, uint64_t v);
// Field `field` as length-delimited bytes (a string, written even when empty).
void mr_protobuf_bytes(mr_protobuf* b, int field, const void* data, size_t len);

// A nested message or packed repeated field: mr_protobuf_begin returns where its body starts;
// write the body, then mr_protobuf_end prefixes it with the field's tag and the body's length.
size_t mr_protobuf_begin(const mr_protobuf* b);
void mr_protobuf_end(mr_protobuf* b, int field, size_t start);

#endif
