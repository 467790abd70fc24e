// SPDX-License-Identifier: MIT
// libFuzzer target: the event chunk decoders (mt_codec_decode of codecs 1 and 2,
// mt_codec_zstd_decode of codecs 3 to 5) on arbitrary blobs.
// Input: 2 bytes little-endian, the event count the caller claims (event_chunk.count),
// then the blob, given to both decoders. The decoders are fuzzed on their own (the chunk
// checksum, which readers verify first, would reject nearly every mutation); the checksum
// check runs on the same bytes. Besides the sanitizers' checks, a blob that decodes must
// survive a round trip: its events re-encoded and sealed within mt_codec_bound, verified and
// decoded again, are the same.
#include "memtrace/codec.h"
#include "memtrace/schema.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

static int same_events(const mt_event* a, const mt_event* b, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (a[i].seq != b[i].seq || a[i].ts != b[i].ts || a[i].addr != b[i].addr ||
            a[i].size != b[i].size || a[i].callsite != b[i].callsite || a[i].tid != b[i].tid ||
            a[i].kind != b[i].kind || a[i].heap != b[i].heap)
            return 0;
    return 1;
}

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    if (size < 2)
        return 0;
    size_t count = (size_t)data[0] | (size_t)data[1] << 8;
    const uint8_t* blob = data + 2;
    size_t len = size - 2;
    // Exactly `count` events, so ASan sees any write past what the caller provided.
    mt_event* ev = malloc((count ? count : 1) * sizeof *ev);
    if (!ev)
        return 0;
    mt_chunk_header h = {.heap = 1, .count = (int64_t)count};
    long payload = mt_codec_chunk_verify(&h, blob, len);
    if (payload > (long)len)
        abort(); // the checksummed part cannot be longer than the blob
    if (mt_codec_decode(blob, len, count, 1, ev) == 0) {
        uint8_t* enc = malloc(mt_codec_bound(count));
        mt_event* again = malloc((count ? count : 1) * sizeof *again);
        if (!enc || !again)
            abort();
        size_t n = mt_codec_encode(ev, count, enc);
        size_t sealed = mt_codec_chunk_seal(&h, enc, n);
        if (sealed > mt_codec_bound(count) || mt_codec_chunk_verify(&h, enc, sealed) != (long)n ||
            mt_codec_decode(enc, n, count, 1, again) != 0 || !same_events(ev, again, count))
            abort(); // a decoded chunk that does not round-trip: the codec is inconsistent
        free(again);
        free(enc);
    }
    static mt_chunk_coder* coder; // kept from input to input, as a reader keeps it
    if (!coder && !(coder = mt_codec_chunk_coder_new()))
        abort();
    for (int codec = MT_CODEC_ZSTD_COLUMNS_CRC32C; codec <= MT_CODEC_ZSTD_RUNS_CRC32C; codec++) {
        if (mt_codec_zstd_decode(coder, codec, blob, len, count, 1, ev) != 0)
            continue;
        uint8_t* enc = malloc(mt_codec_bound(count));
        mt_event* again = malloc(count * sizeof *again);
        if (!enc || !again)
            abort();
        h.seq_first = (int64_t)ev[0].seq;
        size_t sealed = mt_codec_chunk_encode(coder, codec, &h, ev, count, enc);
        if (sealed == 0 || sealed > mt_codec_bound(count) ||
            mt_codec_chunk_decode(coder, codec, &h, enc, sealed, again) != 0 ||
            !same_events(ev, again, count))
            abort(); // codec 3, 4 or 5 is inconsistent
        free(again);
        free(enc);
    }
    free(ev);
    return 0;
}
