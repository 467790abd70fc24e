// SPDX-License-Identifier: MIT
// The blocks live at the end with their allocation times (end_blocks.h): one replay keeps
// each live block's time in a second table of its own, then the blocks are stored sorted
// by that time; a range's leaks are summed from them as they are read, a window at a time.
#include "end_blocks.h"

#include "aggregates.h"
#include "heapmap.h"
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
    uint64_t size;
} end_block;

// An mr_replay_fn: the time of each live block's allocation, by the replay's key, in ud
// (a heapmap whose blocks' id is that time).
static int note_birth(mr_replay* r, const mt_event* ev, const mr_block* freed, void* ud) {
    (void)r;
    mr_heapmap* born = ud;
    uint64_t key = mr_replay_key(ev);
    if (mt_kind_is_alloc(ev->kind)) {
        mr_block b = {.addr = key, .id = (uint64_t)ev->ts};
        return key ? mr_heapmap_put(born, &b, NULL, NULL) : 0;
    }
    if (freed)
        mr_heapmap_take(born, key, NULL);
    return 0;
}

static int by_birth(const void* a, const void* b) {
    const end_block *x = a, *y = b;
    if (x->born != y->born)
        return x->born < y->born ? -1 : 1;
    if (x->callsite != y->callsite)
        return x->callsite < y->callsite ? -1 : 1;
    return (x->size > y->size) - (x->size < y->size);
}

// One replay of the heap: the blocks live at the end, sorted by birth, as stored bytes
// (*data malloc'd). Returns 0 or a negative errno with the reason in err.
static int compute(mt_capture* cap, int heap, uint8_t** data, size_t* len, char* err,
                   size_t errlen) {
    mr_heapmap born;
    mr_replay r;
    if (mr_heapmap_init(&born))
        return -ENOMEM;
    int e = mr_replay_init(&r, cap, heap);
    if (e) {
        mr_heapmap_free(&born);
        return e;
    }
    if ((e = mr_replay_run(&r, UINT64_MAX, note_birth, &born)))
        snprintf(err, errlen, "%s", r.err[0] ? r.err : "corrupt capture");
    end_block* blocks = e ? NULL : calloc(r.live.count + 1, sizeof *blocks);
    if (!e && !blocks)
        e = -ENOMEM;
    size_t n = 0;
    mr_block b, at;
    for (size_t i = 0; !e && mr_heapmap_next(&r.live, &i, &b);)
        blocks[n++] = (end_block){mr_heapmap_get(&born, b.addr, &at) ? (int64_t)at.id : 0,
                                  b.callsite, b.size};
    mr_replay_free(&r);
    mr_heapmap_free(&born);
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
        }
        if (!(*data = mr_varbytes_seal(&v, END_K0, END_K1, len)))
            e = -ENOMEM;
    }
    free(blocks);
    if (e == -ENOMEM)
        snprintf(err, errlen, "out of memory");
    return e < 0 ? e : e ? -EPROTO : 0;
}

// The rows summed so far: callsite -> 1 + its index in rows.
typedef struct sums {
    mr_u64map index;
    mr_profile_row* rows;
    size_t n, cap;
} sums;

static int add(sums* s, uint32_t callsite, uint64_t size) {
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

// The stored bytes [0, len), read through `read`, summed per callsite for the blocks born
// within [from, to]; every byte read and checked. Returns 0, -ENOMEM, or -EPROTO with what
// is wrong in why.
static int sum_range(mr_varstream_read_fn read, void* ud, size_t len, int64_t from, int64_t to,
                     mr_profile_row** rows, size_t* n, char* why, size_t whylen) {
    *rows = NULL;
    *n = 0;
    if (len < 8)
        return mr_varbytes_fail(why, whylen, "checksum mismatch");
    sums s = {0};
    mr_varstream st;
    if (mr_u64map_init(&s.index))
        return -ENOMEM;
    int e = mr_varstream_open(&st, read, ud, 0, len - 8, 64 << 10, true, END_K0, END_K1);
    uint64_t count = e ? 0 : mr_varstream_get(&st);
    if (!e && count > (len - 8) / 3)
        st.r.bad = true;
    int64_t born = 0;
    for (uint64_t i = 0; !e && !st.r.bad && i < count; i++) {
        born += mr_varstream_get_signed(&st);
        uint64_t callsite = mr_varstream_get(&st), size = mr_varstream_get(&st);
        st.r.bad |= callsite > UINT32_MAX;
        if (!st.r.bad && born >= from && born <= to)
            e = add(&s, (uint32_t)callsite, size);
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
    mr_u64map_free(&s.index);
    if (e) {
        free(s.rows);
        return e;
    }
    if (s.n > 1)
        qsort(s.rows, s.n, sizeof *s.rows, by_callsite);
    *rows = s.rows;
    *n = s.n;
    return 0;
}

int mr_end_blocks_in_range(mt_capture* cap, int heap, int64_t from, int64_t to,
                           mr_profile_row** rows, size_t* n, char* err, size_t errlen) {
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
        rc = sum_range(read_blob, blob, len, from, to, rows, n, why, sizeof why);
        if (rc == -EPROTO) // said, then replaced by a replay's
            snprintf(note, sizeof note,
                     "the stored blocks live at the end are damaged (%s); reading the events", why);
        else {
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
    rc = sum_range(read_memory, data, len, from, to, rows, n, why, sizeof why);
    free(data);
    if (rc)
        snprintf(err, errlen, "%s", rc == -ENOMEM ? "out of memory" : why);
    else
        snprintf(err, errlen, "%s", note);
    return rc;
}
