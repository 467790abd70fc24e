// SPDX-License-Identifier: MIT
// The leak kinds of the blocks live at the end (leak_kinds.h): the leak table read into a
// map of allocation seq -> kind, then each allocation event of the heap found in it adds
// its size to its callsite's kind. The scan ran when every event was written, so a block
// with a verdict is live at the end. The whole run's sums are stored once counted (table
// derived, kind 4); a range's are summed from the stored blocks live at the end.
#include "leak_kinds.h"

#include "aggregates.h"
#include "end_blocks.h"
#include "runtime_held.h"
#include "u64map.h"
#include "varbytes.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define KINDS_FORMAT 1
// The checksum's key (mr_varbytes_seal).
#define KINDS_K0 0x6d656d7472616365ull
#define KINDS_K1 0x6c65616b6b696e64ull

int64_t mr_leak_kinds_key(void) {
    return (int64_t)(4ull << 56);
}

static int add_verdict(void* ud, uint64_t seq, int kind, uint64_t holder_seq) {
    (void)holder_seq;
    return mr_u64map_put(ud, seq, (uint64_t)kind);
}

int mr_leak_kinds_verdicts_load(mt_capture* cap, mr_u64map* out) {
    int rc = mt_capture_leaks(cap, add_verdict, out);
    return rc == -ENOENT ? 0 : rc;
}

bool mr_leak_kinds_scan_complete(mt_capture* cap, char* why, size_t whylen) {
    char* status = mt_capture_meta_text(cap, "leak_scan");
    char* said = mt_capture_meta_text(cap, "leak_scan_why");
    snprintf(why, whylen, "%s",
             said     ? said
             : status ? "the scan did not run"
                      : "the capture has no leak scan (recorded before memtrace had one)");
    bool complete = status && !strcmp(status, "complete");
    free(status);
    free(said);
    return complete;
}

int mr_leak_kinds_load(mt_capture* cap, int heap, uint32_t ncallsites, mr_leak_kinds* out,
                       char* err, size_t errlen) {
    return mr_leak_kinds_load_range(cap, heap, ncallsites, INT64_MIN, INT64_MAX, out, err, errlen);
}

// Each allocation of the heap within [from, to] with a verdict in `verdicts` counted into
// out. Returns 0 or a negative errno.
static int count_events(mt_capture* cap, int heap, int64_t from, int64_t to, mr_u64map* verdicts,
                        mr_leak_kinds* out) {
    mt_event_iter* it = NULL;
    int rc = mt_capture_iter_open(cap, heap, &it);
    mt_event ev;
    while (!rc && (rc = mt_capture_iter_next(it, &ev)) == 1) {
        rc = 0;
        bool in_range = ev.ts >= from && ev.ts <= to;
        const uint64_t* kind =
            mt_kind_is_alloc(ev.kind) && in_range ? mr_u64map_get(verdicts, ev.seq) : NULL;
        if (!kind)
            continue;
        size_t c = (ev.callsite <= out->ncallsites ? ev.callsite : 0) * (size_t)MT_LEAK_COUNT_;
        out->bytes[c + *kind] += ev.size;
        out->blocks[c + *kind]++;
        out->total_bytes[*kind] += ev.size;
        out->total_blocks[*kind]++;
    }
    if (it)
        mt_capture_iter_close(it);
    return rc;
}

// The cells of out with something in them: their number, then each one's index (as the
// difference from the previous one's), bytes and blocks.
static uint8_t* encode(const mr_leak_kinds* out, size_t* len) {
    size_t cells = ((size_t)out->ncallsites + 1) * MT_LEAK_COUNT_, used = 0;
    for (size_t i = 0; i < cells; i++)
        used += out->blocks[i] != 0;
    mr_varbuf v = {0};
    mr_varbytes_put(&v, out->ncallsites);
    mr_varbytes_put(&v, used);
    for (size_t i = 0, last = 0; i < cells; i++) {
        if (!out->blocks[i])
            continue;
        mr_varbytes_put(&v, i - last);
        mr_varbytes_put(&v, out->bytes[i]);
        mr_varbytes_put(&v, out->blocks[i]);
        last = i;
    }
    return mr_varbytes_seal(&v, KINDS_K0, KINDS_K1, len);
}

// Stored sums into out (zeroed). 0, or -EPROTO with what is wrong in why.
static int decode(const uint8_t* p, size_t len, mr_leak_kinds* out, char* why, size_t whylen) {
    mr_varreader r;
    if (!mr_varbytes_open(p, len, KINDS_K0, KINDS_K1, &r))
        return mr_varbytes_fail(why, whylen, "checksum mismatch");
    size_t cells = ((size_t)out->ncallsites + 1) * MT_LEAK_COUNT_;
    if (mr_varbytes_get(&r) != out->ncallsites)
        return mr_varbytes_fail(why, whylen, "made for other stacks");
    uint64_t used = mr_varbytes_get(&r);
    for (uint64_t k = 0, i = 0; !r.bad && k < used; k++) {
        uint64_t step = mr_varbytes_get(&r); // cells in increasing order, each once
        uint64_t bytes = mr_varbytes_get(&r), blocks = mr_varbytes_get(&r);
        if (r.bad || (k && !step) || step >= cells - i || (i + step) % MT_LEAK_COUNT_ == 0 ||
            !blocks)
            return mr_varbytes_fail(why, whylen, "cell %llu out of place", (unsigned long long)k);
        i += step;
        size_t kind = i % MT_LEAK_COUNT_;
        out->bytes[i] = bytes;
        out->blocks[i] = blocks;
        out->total_bytes[kind] += bytes;
        out->total_blocks[kind] += blocks;
    }
    if (r.bad || r.p != r.end)
        return mr_varbytes_fail(why, whylen, "truncated");
    return 0;
}

void mr_leak_kinds_clear(mr_leak_kinds* k) {
    size_t cells = ((size_t)k->ncallsites + 1) * MT_LEAK_COUNT_;
    memset(k->bytes, 0, cells * sizeof *k->bytes);
    memset(k->blocks, 0, cells * sizeof *k->blocks);
    memset(k->total_bytes, 0, sizeof k->total_bytes);
    memset(k->total_blocks, 0, sizeof k->total_blocks);
}

// The whole run's sums: read when stored for these events, else counted (and stored where
// memreport may write). Returns 0 (err: empty, or the note of a damaged stored row,
// replaced) or a negative errno with the reason in err.
static int whole_run(mt_capture* cap, int heap, mr_leak_kinds* out, char* err, size_t errlen) {
    uint64_t fp = 0;
    bool storable = mr_aggregates_enabled() && !mt_capture_aggregate_fingerprint(cap, heap, &fp);
    char note[256] = "", why[128];
    int64_t format;
    uint64_t stored_fp;
    uint8_t* data = NULL;
    size_t len;
    int stored = storable ? mt_capture_derived_read(cap, heap, mr_leak_kinds_key(), &format,
                                                    &stored_fp, &data, &len)
                          : 0;
    if (stored == 1 && format == KINDS_FORMAT && stored_fp == fp) {
        int rc = decode(data, len, out, why, sizeof why);
        free(data);
        if (!rc)
            return 0;
        snprintf(note, sizeof note, "the stored leak kinds are damaged (%s); reading the events",
                 why);
        mr_leak_kinds_clear(out);
    } else {
        free(data);
    }
    mr_u64map verdicts;
    if (mr_u64map_init(&verdicts))
        return -ENOMEM;
    int rc = mr_leak_kinds_verdicts_load(cap, &verdicts); // complete, no table: nothing was live
    if (!rc && (rc = count_events(cap, heap, INT64_MIN, INT64_MAX, &verdicts, out)))
        snprintf(err, errlen, "%s", rc == -ENOMEM ? "out of memory" : "cannot read the events");
    else if (rc)
        snprintf(err, errlen, "%s", rc == -ENOMEM ? "out of memory" : "the leak table is damaged");
    mr_u64map_free(&verdicts);
    if (rc)
        return rc;
    // A capture that cannot take them (read-only, full disk, locked) is answered all the same.
    if (storable && mt_capture_writable(cap) && (data = encode(out, &len)))
        mt_capture_derived_store(cap, heap, mr_leak_kinds_key(), KINDS_FORMAT, fp, data, len);
    free(data);
    snprintf(err, errlen, "%s", note);
    return 0;
}

// A range's sums: from the stored blocks live at the end, else from every event.
static int in_range(mt_capture* cap, int heap, int64_t from, int64_t to, mr_leak_kinds* out,
                    char* err, size_t errlen) {
    int rc = mr_end_blocks_kinds_in_range(cap, heap, from, to, out, err, errlen);
    if (rc != 1)
        return rc;
    mr_u64map verdicts;
    if (mr_u64map_init(&verdicts))
        return -ENOMEM;
    if ((rc = mr_leak_kinds_verdicts_load(cap, &verdicts)))
        snprintf(err, errlen, "%s", rc == -ENOMEM ? "out of memory" : "the leak table is damaged");
    else if ((rc = count_events(cap, heap, from, to, &verdicts, out)))
        snprintf(err, errlen, "%s", rc == -ENOMEM ? "out of memory" : "cannot read the events");
    mr_u64map_free(&verdicts);
    return rc;
}

int mr_leak_kinds_load_range(mt_capture* cap, int heap, uint32_t ncallsites, int64_t from,
                             int64_t to, mr_leak_kinds* out, char* err, size_t errlen) {
    memset(out, 0, sizeof *out);
    out->ncallsites = ncallsites;
    err[0] = 0;
    if (!mr_leak_kinds_scan_complete(cap, out->why, sizeof out->why))
        return 0;
    size_t cells = ((size_t)ncallsites + 1) * MT_LEAK_COUNT_;
    out->bytes = calloc(cells, sizeof *out->bytes);
    out->blocks = calloc(cells, sizeof *out->blocks);
    int rc = !out->bytes || !out->blocks ? -ENOMEM
             : from == INT64_MIN && to == INT64_MAX
                 ? whole_run(cap, heap, out, err, errlen)
                 : in_range(cap, heap, from, to, out, err, errlen);
    if (rc == -ENOMEM)
        snprintf(err, errlen, "out of memory");
    if (rc) {
        mr_leak_kinds_free(out);
        return rc;
    }
    out->scanned = true;
    return 0;
}

bool mr_leak_kinds_scan_skipped(mt_capture* cap, char* why, size_t len) {
    char* status = mt_capture_meta_text(cap, "leak_scan");
    bool skipped = status && strcmp(status, "complete") != 0;
    if (skipped) {
        char* text = mt_capture_meta_text(cap, "leak_scan_why");
        snprintf(why, len, "%s", text ? text : "the scan did not run");
        free(text);
    }
    free(status);
    return skipped;
}

void mr_leak_kinds_free(mr_leak_kinds* k) {
    free(k->bytes);
    free(k->blocks);
    k->bytes = k->blocks = NULL;
}

void mr_leak_kinds_program(const mr_leak_kinds* k, const mr_symbols* s,
                           uint64_t bytes[MT_LEAK_COUNT_], uint64_t blocks[MT_LEAK_COUNT_]) {
    uint32_t known = mr_symbols_callsite_count(s);
    for (size_t kind = 0; kind < MT_LEAK_COUNT_; kind++)
        bytes[kind] = blocks[kind] = 0;
    for (uint32_t c = 0; k->scanned && c <= k->ncallsites; c++) {
        if (c < known && mr_runtime_held(s, c))
            continue;
        for (size_t kind = MT_LEAK_DEFINITE; kind < MT_LEAK_COUNT_; kind++) {
            bytes[kind] += k->bytes[(size_t)c * MT_LEAK_COUNT_ + kind];
            blocks[kind] += k->blocks[(size_t)c * MT_LEAK_COUNT_ + kind];
        }
    }
}

int mr_leak_kinds_parse(const char* w) {
    static const char* const words[] = {NULL, "definite", "indirect", "possible", "reachable"};
    for (int k = MT_LEAK_DEFINITE; k < MT_LEAK_COUNT_; k++)
        if (!strcmp(w, words[k]) || !strcmp(w, mt_leak_kind_name(k)))
            return k;
    return 0;
}

unsigned mr_leak_kinds_mask(const char* list, char* bad, size_t badlen) {
    unsigned mask = 0;
    const char* p = list;
    do {
        size_t n = strcspn(p, ",");
        char w[64];
        snprintf(w, sizeof w, "%.*s", (int)(n < sizeof w ? n : sizeof w - 1), p);
        int k = mr_leak_kinds_parse(w);
        if (!strcmp(w, "all"))
            mask |= ((1u << MT_LEAK_COUNT_) - 1) & ~1u;
        else if (k)
            mask |= 1u << k;
        else {
            snprintf(bad, badlen, "%s", w);
            return 0;
        }
        p += n + (p[n] == ',');
    } while (*p);
    return mask;
}
