// SPDX-License-Identifier: MIT
// Protocol Buffers wire format (protobuf.h): varints, tags, length-delimited fields.
#include "protobuf.h"

#include "memtrace/vec.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

enum { WIRE_VARINT = 0, WIRE_LEN = 2 };

void mr_protobuf_free(mr_protobuf* b) {
    free(b->data);
    *b = (mr_protobuf){0};
}

void mr_protobuf_clear(mr_protobuf* b) {
    b->len = 0;
}

// Room for n more bytes; false (and the error set) when there is none.
static bool reserve(mr_protobuf* b, size_t n) {
    if (b->err)
        return false;
    if (mt_vec_grow(&b->data, &b->cap, b->len + n, 1)) {
        b->err = -ENOMEM;
        return false;
    }
    return true;
}

// Encodes v as a varint at dst (at most 10 bytes); returns its length.
static size_t encode_varint(uint8_t* dst, uint64_t v) {
    size_t n = 0;
    while (v >= 0x80) {
        dst[n++] = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    dst[n++] = (uint8_t)v;
    return n;
}

void mr_protobuf_varint(mr_protobuf* b, uint64_t v) {
    if (reserve(b, 10))
        b->len += encode_varint(b->data + b->len, v);
}

static void tag(mr_protobuf* b, int field, int wire) {
    mr_protobuf_varint(b, (uint64_t)field << 3 | (uint64_t)wire);
}

void mr_protobuf_uint(mr_protobuf* b, int field, uint64_t v) {
    tag(b, field, WIRE_VARINT);
    mr_protobuf_varint(b, v);
}

void mr_protobuf_uint_opt(mr_protobuf* b, int field, uint64_t v) {
    if (v)
        mr_protobuf_uint(b, field, v);
}

void mr_protobuf_bytes(mr_protobuf* b, int field, const void* data, size_t len) {
    tag(b, field, WIRE_LEN);
    mr_protobuf_varint(b, len);
    if (len && reserve(b, len)) {
        memcpy(b->data + b->len, data, len);
        b->len += len;
    }
}

size_t mr_protobuf_begin(const mr_protobuf* b) {
    return b->len;
}

void mr_protobuf_end(mr_protobuf* b, int field, size_t start) {
    if (b->err || start > b->len)
        return;
    uint8_t head[20];
    size_t n = encode_varint(head, (uint64_t)field << 3 | WIRE_LEN);
    n += encode_varint(head + n, b->len - start);
    if (!reserve(b, n))
        return;
    memmove(b->data + start + n, b->data + start, b->len - start);
    memcpy(b->data + start, head, n);
    b->len += n;
}
