// SPDX-License-Identifier: MIT
// The leak kinds of the blocks live at the end (leak_kinds.h): the leak table read into a
// map of allocation seq -> kind, then each allocation event of the heap found in it adds
// its size to its callsite's kind. The scan ran when every event was written, so a block
// with a verdict is live at the end.
#include "leak_kinds.h"

#include "runtime_held.h"
#include "u64map.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

int mr_leak_kinds_load_range(mt_capture* cap, int heap, uint32_t ncallsites, int64_t from,
                             int64_t to, mr_leak_kinds* out, char* err, size_t errlen) {
    memset(out, 0, sizeof *out);
    out->ncallsites = ncallsites;
    if (!mr_leak_kinds_scan_complete(cap, out->why, sizeof out->why))
        return 0;
    mr_u64map verdicts;
    if (mr_u64map_init(&verdicts))
        return -ENOMEM;
    int rc = mr_leak_kinds_verdicts_load(cap, &verdicts); // complete, no table: nothing was live
    if (rc) {
        snprintf(err, errlen, "%s", rc == -ENOMEM ? "out of memory" : "the leak table is damaged");
        mr_u64map_free(&verdicts);
        return rc;
    }
    size_t cells = ((size_t)ncallsites + 1) * MT_LEAK_COUNT_;
    out->bytes = calloc(cells, sizeof *out->bytes);
    out->blocks = calloc(cells, sizeof *out->blocks);
    mt_event_iter* it = NULL;
    if (!out->bytes || !out->blocks)
        rc = -ENOMEM;
    else
        rc = mt_capture_iter_open(cap, heap, &it);
    mt_event ev;
    while (!rc && (rc = mt_capture_iter_next(it, &ev)) == 1) {
        rc = 0;
        bool in_range = ev.ts >= from && ev.ts <= to;
        uint64_t* kind =
            mt_kind_is_alloc(ev.kind) && in_range ? mr_u64map_get(&verdicts, ev.seq) : NULL;
        if (!kind)
            continue;
        size_t c = (ev.callsite <= ncallsites ? ev.callsite : 0) * (size_t)MT_LEAK_COUNT_;
        out->bytes[c + *kind] += ev.size;
        out->blocks[c + *kind]++;
        out->total_bytes[*kind] += ev.size;
        out->total_blocks[*kind]++;
    }
    if (it)
        mt_capture_iter_close(it);
    mr_u64map_free(&verdicts);
    if (rc) {
        snprintf(err, errlen, "%s", rc == -ENOMEM ? "out of memory" : "cannot read the events");
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
