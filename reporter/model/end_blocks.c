// SPDX-License-Identifier: MIT
// The blocks live at the end with their allocation times and leak kinds (end_blocks.h): one
// replay keeps each live block's time and verdict in a second table of its own, then the
// blocks are stored sorted by that time; a range's leaks are summed from them as they are
// read, a window at a time.
#include "end_blocks.h"

#include "aggregates.h"
#include "heapmap.h"
#include "leak_kinds.h"
#include "replay.h"
#include "u64map.h"
#include "varbytes.h"
#include "varstream.h"

#include "memtrace/schema.h"
#include "memtrace/vec.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// The checksum's key (mr_varbytes_seal).
#define END_K0 0x6d656d7472616365ull
#define END_K1 0x656e64626c6b7331ull

int64_t mr_end_blocks_key(void) {
    return (int64_t)(3ull << 56);
}

typedef struct end_block {
    int64_t born;
    uint32_t callsite;
    uint32_t kind; // MT_LEAK_*, 0 without a verdict
    uint64_t size;
} end_block;

// What the replay keeps of each live block: its allocation's time (id) and verdict (size),
// by the replay's key.
typedef struct births {
    mr_heapmap born;
    mr_u64map verdicts; // allocation seq -> kind (empty without a complete scan)
} births;

// An mr_replay_fn noting births (ud).
static int note_birth(mr_replay* r, const mt_event* ev, const mr_block* freed, void* ud) {
    (void)r;
    births* b = ud;
    uint64_t key = mr_replay_key(ev);
    if (mt_kind_is_alloc(ev->kind)) {
        const uint64_t* kind = mr_u64map_get(&b->verdicts, ev->seq);
        mr_block born = {.addr = key, .size = kind ? *kind : 0, .id = (uint64_t)ev->ts};
        return key ? mr_heapmap_put(&b->born, &born, NULL, NULL) : 0;
    }
    if (freed)
        mr_heapmap_take(&b->born, key, NULL);
    return 0;
}

static int by_birth(const void* a, const void* b) {
    const end_block *x = a, *y = b;
    if (x->born != y->born)
        return x->born < y->born ? -1 : 1;
    if (x->callsite != y->callsite)
        return x->callsite < y->callsite ? -1 : 1;
    if (x->size != y->size)
        return x->size < y->size ? -1 : 1;
    return (x->kind > y->kind) - (x->kind < y->kind);
}

static void births_free(births* b) {
    mr_heapmap_free(&b->born);
    mr_u64map_free(&b->verdicts);
}

// One replay of the heap: the blocks live at the end, sorted by birth, as stored bytes
// (*data malloc'd). Returns 0 or a negative errno with the reason in err.
static int compute(mt_capture* cap, int heap, uint8_t** data, size_t* len, char* err,
                   size_t errlen) {
    births b;
    if (mr_heapmap_init(&b.born))
        return -ENOMEM;
    if (mr_u64map_init(&b.verdicts)) {
        mr_heapmap_free(&b.born);
        return -ENOMEM;
    }
    char why[8];
    int e = mr_leak_kinds_scan_complete(cap, why, sizeof why)
                ? mr_leak_kinds_verdicts_load(cap, &b.verdicts)
                : 0;
    mr_replay r;
    if (e || (e = mr_replay_init(&r, cap, heap))) {
        snprintf(err, errlen, "%s", e == -EPROTO ? "the leak table is damaged" : "out of memory");
        births_free(&b);
        return e;
    }
    if ((e = mr_replay_run(&r, UINT64_MAX, note_birth, &b)))
        snprintf(err, errlen, "%s", r.err[0] ? r.err : "corrupt capture");
    end_block* blocks = e ? NULL : calloc(r.live.count + 1, sizeof *blocks);
    if (!e && !blocks)
        e = -ENOMEM;
    size_t n = 0;
    mr_block live, at;
    for (size_t i = 0; !e && mr_heapmap_next(&r.live, &i, &live);) {
        bool known = mr_heapmap_get(&b.born, live.addr, &at);
        blocks[n++] = (end_block){.born = known ? (int64_t)at.id : 0,
                                  .callsite = live.callsite,
                                  .kind = known ? (uint32_t)at.size : 0,
                                  .size = live.size};
    }
    mr_replay_free(&r);
    births_free(&b);
    if (!e) {
        qsort(blocks, n, sizeof *blocks, by_birth);
        mr_varbuf v = {0};
        mr_varbytes_put(&v, n);
        int64_t last = 0;
        for (size_t i = 0; i < n; i++) {
            mr_varbytes_put_signed(&v, blocks[i].born - last);
            last = blocks[i].born;
            mr_varbytes_put(&v, blocks[i].callsite);
            mr_varbytes_put(&v, blocks[i].size);
            mr_varbytes_put(&v, blocks[i].kind);
        }
        if (!(*data = mr_varbytes_seal(&v, END_K0, END_K1, len)))
            e = -ENOMEM;
    }
    free(blocks);
    if (e == -ENOMEM)
        snprintf(err, errlen, "out of memory");
    return e < 0 ? e : e ? -EPROTO : 0;
}

// What is summed of the blocks born within a range: per callsite the rows (callsite -> 1 +
// its index in rows), or per callsite and kind the leak kinds.
typedef struct sums {
    int64_t from, to;
    mr_u64map index;
    mr_profile_row* rows;
    size_t n, cap;
    mr_leak_kinds* kinds;
} sums;

static int add_row(sums* s, uint32_t callsite, uint64_t size) {
    uint64_t* i = mr_u64map_get(&s->index, callsite);
    if (!i) {
        if (mt_vec_grow(&s->rows, &s->cap, s->n + 1, sizeof *s->rows) ||
            mr_u64map_put(&s->index, callsite, s->n + 1))
            return -ENOMEM;
        s->rows[s->n] = (mr_profile_row){.callsite = callsite};
        i = mr_u64map_get(&s->index, callsite);
        s->n++;
    }
    mr_profile_row* r = &s->rows[*i - 1];
    r->end_bytes += size;
    r->end_blocks++;
    r->live_bytes = r->end_bytes;
    r->live_blocks = r->end_blocks;
    return 0;
}

static void add_kind(mr_leak_kinds* k, uint32_t callsite, uint64_t size, uint32_t kind) {
    size_t c = (callsite <= k->ncallsites ? callsite : 0) * (size_t)MT_LEAK_COUNT_;
    k->bytes[c + kind] += size;
    k->blocks[c + kind]++;
    k->total_bytes[kind] += size;
    k->total_blocks[kind]++;
}

static int add(sums* s, const end_block* b) {
    if (b->born < s->from || b->born > s->to)
        return 0;
    if (!s->kinds)
        return add_row(s, b->callsite, b->size);
    if (b->kind)
        add_kind(s->kinds, b->callsite, b->size, b->kind);
    return 0;
}

// Forgets what a damaged row added. 0 or -ENOMEM.
static int sums_clear(sums* s) {
    s->n = 0;
    mr_u64map_free(&s->index);
    if (s->kinds)
        mr_leak_kinds_clear(s->kinds);
    return mr_u64map_init(&s->index);
}

static int by_callsite(const void* a, const void* b) {
    const mr_profile_row *x = a, *y = b;
    return (x->callsite > y->callsite) - (x->callsite < y->callsite);
}

static int read_memory(void* ud, size_t offset, void* buf, size_t n) {
    memcpy(buf, (const uint8_t*)ud + offset, n);
    return 0;
}

static int read_blob(void* ud, size_t offset, void* buf, size_t n) {
    return mt_capture_blob_read(ud, offset, buf, n);
}

// The stored bytes [0, len), read through `read`, summed into s; every byte read and
// checked. Returns 0, -ENOMEM, or -EPROTO with what is wrong in why (s then holds part).
static int sum_stored(mr_varstream_read_fn read, void* ud, size_t len, sums* s, char* why,
                      size_t whylen) {
    if (len < 8)
        return mr_varbytes_fail(why, whylen, "checksum mismatch");
    mr_varstream st;
    int e = mr_varstream_open(&st, read, ud, 0, len - 8, 64 << 10, true, END_K0, END_K1);
    uint64_t count = e ? 0 : mr_varstream_get(&st);
    if (!e && count > (len - 8) / 4)
        st.r.bad = true;
    end_block b = {0};
    for (uint64_t i = 0; !e && !st.r.bad && i < count; i++) {
        b.born += mr_varstream_get_signed(&st);
        uint64_t callsite = mr_varstream_get(&st), size = mr_varstream_get(&st);
        uint64_t kind = mr_varstream_get(&st);
        st.r.bad |= callsite > UINT32_MAX || kind >= MT_LEAK_COUNT_;
        b.callsite = (uint32_t)callsite;
        b.size = size;
        b.kind = (uint32_t)kind;
        if (!st.r.bad)
            e = add(s, &b);
    }
    bool whole = !e && mr_varstream_done(&st);
    uint64_t sum = 0, sealed = 0;
    uint8_t tail[8];
    int re = e ? 0 : mr_varstream_sum(&st, &sum);
    if (!e && !re)
        re = read(ud, len - 8, tail, 8);
    mr_varstream_close(&st);
    for (unsigned k = 0; !e && !re && k < 8; k++)
        sealed |= (uint64_t)tail[k] << (8 * k);
    if (!e && re)
        e = mr_varbytes_fail(why, whylen, "unreadable");
    else if (!e && sum != sealed)
        e = mr_varbytes_fail(why, whylen, "checksum mismatch");
    else if (!e && !whole)
        e = mr_varbytes_fail(why, whylen, "truncated");
    return e;
}

// The blocks live at the end summed into s: read when stored for these events, else
// computed by one replay and stored. Returns 0 (err: empty, or the note of damaged stored
// blocks, replaced), 1 when they are neither stored nor storable, or a negative errno
// with the reason in err.
static int sum_end_blocks(mt_capture* cap, int heap, sums* s, char* err, size_t errlen) {
    uint64_t fp = 0;
    if (!mr_aggregates_enabled() || mt_capture_aggregate_fingerprint(cap, heap, &fp))
        return 1;
    int64_t format = 0;
    uint64_t stored_fp = 0;
    mt_capture_blob* blob = NULL;
    size_t len = 0;
    int rc =
        mt_capture_derived_open(cap, heap, mr_end_blocks_key(), &format, &stored_fp, &blob, &len);
    char note[256] = "", why[128];
    if (rc == 1 && format == MR_END_BLOCKS_FORMAT && stored_fp == fp) {
        rc = sum_stored(read_blob, blob, len, s, why, sizeof why);
        if (rc == -EPROTO) { // said, then replaced by a replay's
            snprintf(note, sizeof note,
                     "the stored blocks live at the end are damaged (%s); reading the events", why);
            rc = sums_clear(s);
        } else {
            mt_capture_blob_close(blob);
            if (rc)
                snprintf(err, errlen, "out of memory");
            return rc;
        }
    }
    mt_capture_blob_close(blob); // before the row is replaced
    if (rc == -ENOMEM) {
        snprintf(err, errlen, "out of memory");
        return rc;
    }
    if (!mt_capture_writable(cap))
        return 1;
    uint8_t* data = NULL;
    if ((rc = compute(cap, heap, &data, &len, err, errlen)))
        return rc;
    // A capture that cannot take them (full disk, locked) is answered all the same.
    mt_capture_derived_store(cap, heap, mr_end_blocks_key(), MR_END_BLOCKS_FORMAT, fp, data, len);
    rc = sum_stored(read_memory, data, len, s, why, sizeof why);
    free(data);
    if (rc)
        snprintf(err, errlen, "%s", rc == -ENOMEM ? "out of memory" : why);
    else
        snprintf(err, errlen, "%s", note);
    return rc;
}

int mr_end_blocks_in_range(mt_capture* cap, int heap, int64_t from, int64_t to,
                           mr_profile_row** rows, size_t* n, char* err, size_t errlen) {
    *rows = NULL;
    *n = 0;
    sums s = {.from = from, .to = to};
    if (mr_u64map_init(&s.index)) {
        snprintf(err, errlen, "out of memory");
        return -ENOMEM;
    }
    int rc = sum_end_blocks(cap, heap, &s, err, errlen);
    mr_u64map_free(&s.index);
    if (rc) {
        free(s.rows);
        return rc;
    }
    if (s.n > 1)
        qsort(s.rows, s.n, sizeof *s.rows, by_callsite);
    *rows = s.rows;
    *n = s.n;
    return 0;
}

int mr_end_blocks_kinds_in_range(mt_capture* cap, int heap, int64_t from, int64_t to,
                                 mr_leak_kinds* kinds, char* err, size_t errlen) {
    sums s = {.from = from, .to = to, .kinds = kinds};
    if (mr_u64map_init(&s.index)) {
        snprintf(err, errlen, "out of memory");
        return -ENOMEM;
    }
    int rc = sum_end_blocks(cap, heap, &s, err, errlen);
    mr_u64map_free(&s.index);
    return rc;
}
