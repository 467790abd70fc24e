// SPDX-License-Identifier: MIT
// A heap's checkpoints (checkpoints.h): stored while the aggregates' replay runs, read back
// into a replay, and the profiles at chosen times they answer with the aggregates.
#include "checkpoints.h"

#include "aggregates.h"
#include "varbytes.h"

#include "memtrace/schema.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// The checksum's key (mr_varbytes_seal).
#define CKPT_K0 0x6d656d7472616365ull
#define CKPT_K1 0x636865636b706f69ull

static uint64_t every_events;

void mr_checkpoints_every(uint64_t events) {
    every_events = events;
}

uint64_t mr_checkpoints_interval(void) {
    if (every_events)
        return every_events;
    const char* env = getenv("MEMREPORT_CHECKPOINT_EVENTS");
    char* end;
    unsigned long long v = env && *env ? strtoull(env, &end, 10) : 0;
    return v && !*end ? (uint64_t)v : MR_CHECKPOINTS_EVENTS;
}

// ---- the stored bytes: the replay's counters, then its blocks in MR_HEAPMAP_PARTS runs,
// one per part of its live-block table, each by address (each address from the one before
// in the run, each tid from the one before, zigzagged), then the checksum. A run at a time
// is sorted: a sorted copy of the whole live set would double the memory of the replay
// that stores them.

// Sorts a[0..n) by address (the addresses of a part are distinct) with tmp[0..n) as the
// other buffer of a bottom-up merge sort: no allocation per sort, unlike qsort's own buffer
// of the run's size (made and freed 16 times a checkpoint).
static void sort_by_addr(mr_block* a, mr_block* tmp, size_t n) {
    enum { RUN = 16 };
    for (size_t lo = 0; lo < n; lo += RUN) { // insertion sort of each run
        size_t hi = lo + RUN < n ? lo + RUN : n;
        for (size_t i = lo + 1; i < hi; i++) {
            mr_block x = a[i];
            size_t j = i;
            for (; j > lo && a[j - 1].addr > x.addr; j--)
                a[j] = a[j - 1];
            a[j] = x;
        }
    }
    mr_block *from = a, *to = tmp;
    for (size_t width = RUN; width < n; width *= 2) {
        for (size_t lo = 0; lo < n; lo += 2 * width) {
            size_t mid = lo + width < n ? lo + width : n;
            size_t hi = mid + width < n ? mid + width : n;
            size_t i = lo, j = mid, k = lo;
            while (i < mid && j < hi)
                to[k++] = from[i].addr < from[j].addr ? from[i++] : from[j++];
            while (i < mid)
                to[k++] = from[i++];
            while (j < hi)
                to[k++] = from[j++];
        }
        mr_block* t = from;
        from = to;
        to = t;
    }
    if (from != a)
        memcpy(a, from, n * sizeof *a);
}

uint8_t* mr_checkpoints_encode(const mr_replay* r, mr_block** blocks, size_t* capblocks,
                               mr_varbuf* buf, size_t* len) {
    mr_varbuf v = *buf;
    v.n = 0;
    mr_varbytes_put(&v, r->events);
    mr_varbytes_put(&v, r->allocations);
    mr_varbytes_put(&v, r->frees);
    mr_varbytes_put(&v, r->unmatched_frees);
    mr_varbytes_put(&v, r->bytes_allocated);
    mr_varbytes_put(&v, r->live_bytes);
    mr_varbytes_put(&v, r->peak_bytes);
    mr_varbytes_put(&v, r->peak_seq);
    mr_varbytes_put_signed(&v, r->peak_ts);
    mr_varbytes_put(&v, r->last_seq);
    mr_varbytes_put_signed(&v, r->first_ts);
    mr_varbytes_put_signed(&v, r->last_ts);
    mr_varbytes_put(&v, r->live.count);
    uint32_t tid = 0;
    for (size_t k = 0; k < MR_HEAPMAP_PARTS && !v.oom; k++) {
        size_t n = r->live.parts[k].count;
        // The part's blocks, and as many again for the sort's other buffer.
        if (MT_VEC_RESERVE(blocks, capblocks, n ? 2 * n : 1)) {
            v.oom = true;
            break;
        }
        if (n)
            mr_heapmap_part_blocks(&r->live, k, *blocks);
        sort_by_addr(*blocks, *blocks + n, n);
        mr_varbytes_put(&v, n);
        uint64_t addr = 0;
        for (size_t i = 0; i < n; i++) {
            const mr_block* x = &(*blocks)[i];
            mr_varbytes_put(&v, x->addr - addr);
            mr_varbytes_put(&v, x->size);
            mr_varbytes_put(&v, x->callsite);
            mr_varbytes_put_signed(&v, (int64_t)x->tid - (int64_t)tid);
            addr = x->addr;
            tid = x->tid;
        }
    }
    uint8_t* p = mr_varbytes_seal(&v, CKPT_K0, CKPT_K1, len);
    *buf = p ? v : (mr_varbuf){0}; // sealing frees the bytes when it fails
    return p;
}

int mr_checkpoints_load(const uint8_t* p, size_t len, uint64_t seq, mr_replay* r, char* why,
                        size_t whylen) {
    mr_varreader v;
    if (!mr_varbytes_open(p, len, CKPT_K0, CKPT_K1, &v))
        return mr_varbytes_fail(why, whylen, "checkpoint at seq %llu: checksum mismatch",
                                (unsigned long long)seq);
    r->events = mr_varbytes_get(&v);
    r->allocations = mr_varbytes_get(&v);
    r->frees = mr_varbytes_get(&v);
    r->unmatched_frees = mr_varbytes_get(&v);
    r->bytes_allocated = mr_varbytes_get(&v);
    r->live_bytes = mr_varbytes_get(&v);
    r->peak_bytes = mr_varbytes_get(&v);
    r->peak_seq = mr_varbytes_get(&v);
    r->peak_ts = mr_varbytes_get_signed(&v);
    r->last_seq = mr_varbytes_get(&v);
    r->first_ts = mr_varbytes_get_signed(&v);
    r->last_ts = mr_varbytes_get_signed(&v);
    r->after_seq = seq;
    uint64_t n = mr_varbytes_get(&v);
    // A block takes at least 4 bytes: a count beyond what is left is a damaged one.
    if (v.bad || n > (size_t)(v.end - v.p) / 4)
        return mr_varbytes_fail(why, whylen, "checkpoint at seq %llu: truncated",
                                (unsigned long long)seq);
    uint64_t bytes = 0, tid = 0, i = 0; // tid wraps as written: checked below
    for (size_t k = 0; k < MR_HEAPMAP_PARTS; k++) {
        uint64_t addr = 0, end = mr_varbytes_get(&v);
        if (v.bad || end > n - i)
            return mr_varbytes_fail(why, whylen, "checkpoint at seq %llu: run %zu",
                                    (unsigned long long)seq, k);
        for (end += i; i < end; i++) {
            uint64_t step = mr_varbytes_get(&v), size = mr_varbytes_get(&v);
            uint64_t callsite = mr_varbytes_get(&v);
            tid += (uint64_t)mr_varbytes_get_signed(&v);
            bool had = false;
            if (v.bad || step == 0 || addr + step < addr || callsite > UINT32_MAX ||
                tid > UINT32_MAX || size > MT_EVENT_SIZE_MAX - bytes)
                return mr_varbytes_fail(why, whylen, "checkpoint at seq %llu: block %llu",
                                        (unsigned long long)seq, (unsigned long long)i);
            addr += step;
            bytes += size;
            mr_block b = {
                .addr = addr, .size = size, .callsite = (uint32_t)callsite, .tid = (uint32_t)tid};
            mr_block old;
            if (mr_heapmap_put(&r->live, &b, &old, &had))
                return -ENOMEM;
            if (had) // in two runs
                return mr_varbytes_fail(why, whylen, "checkpoint at seq %llu: block %llu twice",
                                        (unsigned long long)seq, (unsigned long long)i);
        }
    }
    if (v.bad || v.p != v.end || i != n)
        return mr_varbytes_fail(why, whylen, "checkpoint at seq %llu: truncated",
                                (unsigned long long)seq);
    // What a replay's state always is (replay.c), and the seq it was stored at.
    if (bytes != r->live_bytes || r->live_bytes > r->peak_bytes ||
        r->peak_bytes > r->bytes_allocated || n > r->allocations || r->last_seq != seq ||
        r->peak_seq > r->last_seq || r->allocations > r->events ||
        r->frees > r->events - r->allocations || r->unmatched_frees > r->frees ||
        (seq == 0 && r->events))
        return mr_varbytes_fail(why, whylen, "checkpoint at seq %llu: totals",
                                (unsigned long long)seq);
    return 0;
}

// ---- the allocations per callsite up to a checkpoint: their count, then each callsite's
// (from the one before, the first from 0), count and bytes, by callsite; then the checksum

#define ALLOC_K0 0x6d656d7472616365ull
#define ALLOC_K1 0x616c6c6f63617465ull

static int by_callsite(const void* a, const void* b) {
    const mr_alloc_sum *x = a, *y = b;
    return x->callsite < y->callsite ? -1 : x->callsite > y->callsite;
}

static void put_sum(mr_varbuf* v, uint32_t* last, uint32_t callsite, uint64_t count,
                    uint64_t bytes) {
    mr_varbytes_put(v, callsite - *last);
    mr_varbytes_put(v, count);
    mr_varbytes_put(v, bytes);
    *last = callsite;
}

static uint8_t* encode_allocated(mr_checkpoints_writer* w, size_t* len) {
    size_t n = 0, nstray = w->stray_count.count;
    for (size_t c = 0; c < w->nallocated; c++)
        n += w->allocated[c].count != 0;
    mr_alloc_sum* strays = nstray ? calloc(nstray, sizeof *strays) : NULL;
    if (nstray && !strays)
        return NULL;
    uint64_t c, count;
    for (size_t i = 0, k = 0; k < nstray && mr_u64map_next(&w->stray_count, &i, &c, &count);) {
        const uint64_t* bytes = mr_u64map_get(&w->stray_bytes, c);
        strays[k++] = (mr_alloc_sum){.callsite = (uint32_t)c, .count = count, .bytes = *bytes};
    }
    if (nstray) // qsort's array may not be NULL, even empty
        qsort(strays, nstray, sizeof *strays, by_callsite);
    mr_varbuf v = {0};
    mr_varbytes_put(&v, n + nstray);
    uint32_t last = 0;
    for (size_t i = 0; i < w->nallocated; i++)
        if (w->allocated[i].count)
            put_sum(&v, &last, (uint32_t)i, w->allocated[i].count, w->allocated[i].bytes);
    for (size_t i = 0; i < nstray; i++) // every stray id is beyond the array's
        put_sum(&v, &last, strays[i].callsite, strays[i].count, strays[i].bytes);
    free(strays);
    return mr_varbytes_seal(&v, ALLOC_K0, ALLOC_K1, len);
}

// The allocations stored at seq, as encode_allocated wrote them: 0 with *out and *n, or
// -EPROTO (why) or -ENOMEM.
static int decode_allocated(const uint8_t* p, size_t len, uint64_t seq, mr_alloc_sum** out,
                            size_t* n, char* why, size_t whylen) {
    *out = NULL;
    *n = 0;
    mr_varreader v;
    if (!mr_varbytes_open(p, len, ALLOC_K0, ALLOC_K1, &v))
        return mr_varbytes_fail(why, whylen, "allocations at seq %llu: checksum mismatch",
                                (unsigned long long)seq);
    uint64_t k = mr_varbytes_get(&v);
    if (v.bad || k > (size_t)(v.end - v.p) / 3)
        return mr_varbytes_fail(why, whylen, "allocations at seq %llu: truncated",
                                (unsigned long long)seq);
    if (k && !(*out = calloc(k, sizeof **out)))
        return -ENOMEM;
    uint64_t callsite = 0;
    for (uint64_t i = 0; i < k; i++) {
        uint64_t step = mr_varbytes_get(&v);
        callsite += step;
        mr_alloc_sum s = {.callsite = (uint32_t)callsite,
                          .count = mr_varbytes_get(&v),
                          .bytes = mr_varbytes_get(&v)};
        if (v.bad || (i && !step) || callsite > UINT32_MAX || !s.count ||
            s.bytes > MT_EVENT_SIZE_MAX) {
            free(*out);
            *out = NULL;
            return mr_varbytes_fail(why, whylen, "allocations at seq %llu: callsite %llu",
                                    (unsigned long long)seq, (unsigned long long)i);
        }
        (*out)[i] = s;
    }
    if (v.bad || v.p != v.end) {
        free(*out);
        *out = NULL;
        return mr_varbytes_fail(why, whylen, "allocations at seq %llu: truncated",
                                (unsigned long long)seq);
    }
    *n = k;
    return 0;
}

// ---- stored while the aggregates' replay runs

int mr_checkpoints_begin(mr_checkpoints_writer* w, mt_capture* cap, int heap,
                         uint64_t fingerprint) {
    *w = (mr_checkpoints_writer){.cap = cap,
                                 .heap = heap,
                                 .fingerprint = fingerprint,
                                 .every = mr_checkpoints_interval(),
                                 .ts_max = INT64_MIN,
                                 .ts_min = INT64_MAX};
    int64_t max_frame, max_callsite;
    if (mt_capture_stack_ids(cap, &max_frame, &max_callsite) || max_callsite < 0)
        max_callsite = 0;
    w->nallocated = (size_t)max_callsite + 1;
    int rc = (w->allocated = calloc(w->nallocated, sizeof *w->allocated)) &&
                     !mr_u64map_init(&w->stray_count) && !mr_u64map_init(&w->stray_bytes)
                 ? mt_capture_checkpoint_clear(cap, heap)
                 : -ENOMEM;
    if (rc)
        mr_checkpoints_writer_free(w);
    return rc;
}

// Counts an allocation into its callsite's sums. Returns 0 or -ENOMEM.
static int count_allocation(mr_checkpoints_writer* w, const mt_event* ev) {
    if (ev->callsite < w->nallocated) {
        w->allocated[ev->callsite].count++;
        w->allocated[ev->callsite].bytes += ev->size;
        return 0;
    }
    uint64_t* count = mr_u64map_get(&w->stray_count, ev->callsite);
    if (!count)
        return mr_u64map_put(&w->stray_count, ev->callsite, 1) ||
                       mr_u64map_put(&w->stray_bytes, ev->callsite, ev->size)
                   ? -ENOMEM
                   : 0;
    (*count)++;
    *mr_u64map_get(&w->stray_bytes, ev->callsite) += ev->size;
    return 0;
}

// Stores the state of r (blocks: NULL for the state before any event) under seq.
static void store(mr_checkpoints_writer* w, const mr_replay* r, uint64_t seq, int64_t ts_max) {
    mt_checkpoint_row row = {.seq = seq,
                             .ts_max = ts_max,
                             .ts_min = w->ts_min,
                             .high_bytes = w->high_bytes,
                             .high_seq = w->high_seq,
                             .high_ts = w->high_ts,
                             .format = MR_CHECKPOINTS_FORMAT,
                             .fingerprint = w->fingerprint};
    mr_replay empty = {0};
    mr_checkpoints_writer none = {0};
    uint8_t* allocated = encode_allocated(seq ? w : &none, &row.allocated_len);
    uint8_t* data =
        mr_checkpoints_encode(seq ? r : &empty, &w->blocks, &w->capblocks, &w->encoded, &row.len);
    row.allocated = allocated;
    row.data = data;
    // Out of memory or disk: the replay goes on, the set is not whole (never used).
    if (!allocated || !data || mt_capture_checkpoint_store(w->cap, w->heap, &row))
        w->failed = true;
    free(allocated);
}

int mr_checkpoints_observe(mr_replay* r, const mt_event* ev, const mr_block* freed, void* ud) {
    (void)freed;
    mr_checkpoints_writer* w = ud;
    if (ev->ts > w->ts_max)
        w->ts_max = ev->ts;
    if (ev->ts < w->ts_min)
        w->ts_min = ev->ts;
    if (!w->high_seq || r->live_bytes > w->high_bytes) {
        w->high_bytes = r->live_bytes;
        w->high_seq = ev->seq;
        w->high_ts = ev->ts;
    }
    if (w->failed)
        return 0;
    if (mt_kind_is_alloc(ev->kind) && count_allocation(w, ev))
        w->failed = true;
    if (w->failed || r->events % w->every)
        return 0;
    store(w, r, ev->seq, w->ts_max);
    w->ts_min = INT64_MAX;
    w->high_seq = 0;
    return 0;
}

int mr_checkpoints_end(mr_checkpoints_writer* w) {
    if (w->failed)
        return -EIO;
    store(w, NULL, 0, INT64_MIN);
    return w->failed ? -EIO : 0;
}

void mr_checkpoints_writer_free(mr_checkpoints_writer* w) {
    free(w->blocks);
    free(w->encoded.p);
    w->encoded = (mr_varbuf){0};
    free(w->allocated);
    mr_u64map_free(&w->stray_count);
    mr_u64map_free(&w->stray_bytes);
    w->blocks = NULL;
    w->allocated = NULL;
    w->capblocks = w->nallocated = 0;
}

bool mr_checkpoints_present(mt_capture* cap, int heap, uint64_t fingerprint) {
    uint64_t seq;
    uint8_t* data;
    size_t len;
    int rc = mt_capture_checkpoint_find(cap, heap, MR_CHECKPOINTS_FORMAT, fingerprint, INT64_MIN,
                                        &seq, &data, &len);
    free(data);
    return rc == 1 && seq == 0;
}

// ---- profiles at times

typedef struct at_run {
    mt_capture* cap;
    uint64_t fingerprint; // of the events, the checkpoints' own
    const mr_query* qs;
    mr_profile* out;
    const mr_profile* whole; // the aggregates' profile at the peak: rows of the whole run
    size_t order[MR_PROFILE_MAX_MOMENTS]; // the queries at a time, by time
    size_t ntimes, next;                  // next: the first of order not taken yet
    uint32_t* index;                      // callsite -> 1 + its row (NULL: searched)
    size_t nindex;
    uint64_t* live;    // per row of whole: its live bytes, then blocks, now
    uint64_t last_seq; // the last event applied (0: none)
    bool stray;        // a block of a callsite the aggregates have no row for
    bool jump;         // the next moment has a checkpoint after the events applied
} at_run;

// The row of callsite c in whole's rows, or SIZE_MAX.
static size_t row_of(const at_run* s, uint32_t c) {
    if (s->index)
        return c < s->nindex && s->index[c] ? s->index[c] - 1u : SIZE_MAX;
    size_t lo = 0, hi = s->whole->nrows;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (s->whole->rows[mid].callsite < c)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < s->whole->nrows && s->whole->rows[lo].callsite == c ? lo : SIZE_MAX;
}

// Adds a block to (sign 1) or takes it from (sign -1) its row's live values.
static bool count(at_run* s, uint32_t callsite, uint64_t size, int sign) {
    size_t i = row_of(s, callsite);
    if (i == SIZE_MAX) {
        s->stray = true;
        return false;
    }
    s->live[2 * i] += sign > 0 ? size : -size;
    s->live[2 * i + 1] += sign > 0 ? 1 : (uint64_t)-1;
    return true;
}

// Query k's profile: the whole run's rows (as builder's finish() keeps them: each allocated
// in the run), live as now.
static int take_moment(at_run* s, size_t k) {
    mr_profile* p = &s->out[k];
    if (mr_profile_moment_of(s->whole, MR_AT_PEAK, p))
        return -ENOMEM;
    p->live_bytes = p->live_blocks = 0;
    for (size_t i = 0; i < p->nrows; i++) {
        p->rows[i].live_bytes = s->live[2 * i];
        p->rows[i].live_blocks = s->live[2 * i + 1];
        p->live_bytes += s->live[2 * i];
        p->live_blocks += s->live[2 * i + 1];
    }
    p->moment_seq = s->last_seq;
    p->moment_ts = s->qs[k].at;
    return 0;
}

// Whether the next moment's checkpoint comes after the events applied: reading it is then
// cheaper than reading the events up to it.
static bool checkpoint_ahead(at_run* s) {
    uint64_t seq = 0;
    size_t len;
    return mt_capture_checkpoint_find(s->cap, s->qs[0].heap, MR_CHECKPOINTS_FORMAT, s->fingerprint,
                                      s->qs[s->order[s->next]].at, &seq, NULL, &len) == 1 &&
           seq > s->last_seq;
}

// As profile.c's MR_AT_TIME: a moment is the state before the first event stamped after it.
static int on_event(mr_replay* r, const mt_event* ev, const mr_block* freed, void* ud) {
    (void)r;
    at_run* s = ud;
    size_t taken = s->next;
    while (s->next < s->ntimes && ev->ts > s->qs[s->order[s->next]].at) {
        int rc = take_moment(s, s->order[s->next]);
        if (rc)
            return rc;
        s->next++;
    }
    if (s->next == s->ntimes)
        return 1; // every moment taken: the rest of the events is not read
    if (s->next > taken && (s->jump = checkpoint_ahead(s)))
        return 1;
    if (freed && !count(s, freed->callsite, freed->size, -1))
        return 1;
    if (mt_kind_is_alloc(ev->kind) && !count(s, ev->callsite, ev->size, 1))
        return 1;
    s->last_seq = ev->seq;
    return 0;
}

static bool at_times(const mr_query* qs, size_t n) {
    bool any = false;
    for (size_t k = 0; k < n; k++) {
        const mr_query* q = &qs[k];
        // A checkpoint is found by time: one within the nanosecond of `at` may be past
        // before_seq.
        if (q->from != INT64_MIN || q->to != INT64_MAX || q->tid || q->by_thread || q->observe ||
            q->range_blocks || q->before_seq)
            return false;
        any |= q->moment == MR_AT_TIME;
    }
    return any;
}

// Damaged checkpoints, in the words of the first damage found: the note for the caller to
// print, in err. Returns 1 (the events are read instead).
static int damaged_note(const char* why, char* err, size_t errlen) {
    snprintf(err, errlen, "the stored checkpoints are damaged (%s); reading the events", why);
    return 1;
}

// The replay from the checkpoint before the next moment's time, taking that moment and the
// next ones on the way until one has a checkpoint of its own ahead (s->jump). Returns 0, 1
// (not answered: damaged checkpoints, the note in err), or a negative errno.
static int replay_from_checkpoint(at_run* s, char* err, size_t errlen) {
    uint64_t seq = 0;
    uint8_t* data = NULL;
    size_t len = 0;
    int rc =
        mt_capture_checkpoint_find(s->cap, s->qs[0].heap, MR_CHECKPOINTS_FORMAT, s->fingerprint,
                                   s->qs[s->order[s->next]].at, &seq, &data, &len);
    if (rc <= 0) { // the seq 0 row was there a moment ago
        free(data);
        if (rc)
            snprintf(err, errlen, "out of memory");
        return rc ? rc : 1;
    }
    mr_replay r;
    char why[128] = "";
    if (mr_replay_init(&r, s->cap, s->qs[0].heap)) {
        free(data);
        snprintf(err, errlen, "out of memory");
        return -ENOMEM;
    }
    rc = mr_checkpoints_load(data, len, seq, &r, why, sizeof why);
    free(data);
    s->last_seq = r.last_seq;
    s->jump = false;
    memset(s->live, 0, 2 * (s->whole->nrows ? s->whole->nrows : 1) * sizeof *s->live);
    mr_block b;
    for (size_t i = 0; !rc && mr_heapmap_next(&r.live, &i, &b);)
        if (!count(s, b.callsite, b.size, 1))
            rc = mr_varbytes_fail(why, sizeof why, "checkpoint at seq %llu: a block of no callsite",
                                  (unsigned long long)seq);
    bool damaged = rc == -EPROTO; // the checkpoint's; the events' are worded in err
    if (!rc) {
        rc = mr_replay_run(&r, UINT64_MAX, on_event, s);
        if (rc < 0) {
            snprintf(err, errlen, "%s", r.err[0] ? r.err : "corrupt capture");
        } else if (s->stray) {
            rc = mr_varbytes_fail(why, sizeof why, "an event of no callsite after seq %llu",
                                  (unsigned long long)seq);
            damaged = true;
        } else {
            rc = 0;
        }
    }
    while (!rc && !s->jump && s->next < s->ntimes) // the events end before these times
        rc = take_moment(s, s->order[s->next++]);
    mr_replay_free(&r);
    if (damaged)
        return damaged_note(why, err, errlen);
    if (rc == -ENOMEM)
        snprintf(err, errlen, "out of memory");
    return rc;
}

int mr_checkpoints_answer(mt_capture* cap, const mr_query* qs, size_t n, mr_profile* out, char* err,
                          size_t errlen) {
    if (!at_times(qs, n))
        return 1;
    mr_aggregates a;
    uint64_t fingerprint;
    int rc =
        mr_aggregates_checkpointed(cap, qs[0].heap, qs[0].progress, &a, &fingerprint, err, errlen);
    if (rc)
        return rc;
    at_run s = {.cap = cap, .fingerprint = fingerprint, .qs = qs, .out = out, .whole = &a.peak};
    for (size_t k = 0; k < n; k++)
        if (qs[k].moment == MR_AT_TIME) {
            size_t j = s.ntimes++;
            for (; j > 0 && qs[s.order[j - 1]].at > qs[k].at; j--)
                s.order[j] = s.order[j - 1];
            s.order[j] = k;
        }
    const mr_profile* w = &a.peak;
    uint32_t top = w->nrows ? w->rows[w->nrows - 1].callsite : 0;
    // A dense index unless a stray callsite id (a damaged capture's) makes it huge.
    if (top < 4 * w->nrows + 65536 && (s.index = calloc((size_t)top + 1, sizeof *s.index))) {
        s.nindex = (size_t)top + 1;
        for (size_t i = 0; i < w->nrows; i++)
            s.index[w->rows[i].callsite] = (uint32_t)i + 1;
    }
    if (!(s.live = calloc(2 * (w->nrows ? w->nrows : 1), sizeof *s.live))) {
        snprintf(err, errlen, "out of memory");
        rc = -ENOMEM;
    } else {
        rc = 0;
        while (!rc && s.next < s.ntimes)
            rc = replay_from_checkpoint(&s, err, errlen);
    }
    for (size_t k = 0; k < n && !rc; k++)
        if (qs[k].moment != MR_AT_TIME && mr_profile_moment_of(w, qs[k].moment, &out[k])) {
            snprintf(err, errlen, "out of memory");
            rc = -ENOMEM;
        }
    if (rc)
        for (size_t k = 0; k < n; k++)
            mr_profile_free(&out[k]);
    free(s.index);
    free(s.live);
    mr_aggregates_free(&a);
    return rc;
}

// ---- a range's peak

// The checkpoints the range's events lie between, after start: every event after the first
// is stamped at or after from (mt_capture_checkpoint_settled), every one up to the second at
// or before to (their ts_max). None (inside_to 0) when they are not two.
static void inside(mt_capture* cap, const mr_query* q, uint64_t start, mr_range_span* s) {
    uint64_t first = start, second = 0;
    size_t len;
    if ((q->from == INT64_MIN ||
         mt_capture_checkpoint_settled(cap, q->heap, MR_CHECKPOINTS_FORMAT, s->fingerprint, start,
                                       q->from - 1, &first) == 1) &&
        mt_capture_checkpoint_find(cap, q->heap, MR_CHECKPOINTS_FORMAT, s->fingerprint, q->to,
                                   &second, NULL, &len) == 1 &&
        second > first &&
        mt_capture_checkpoint_high(cap, q->heap, MR_CHECKPOINTS_FORMAT, s->fingerprint, first,
                                   second, &s->high_bytes, &s->high_seq, &s->high_ts) == 1) {
        s->inside_from = first;
        s->inside_to = second;
    }
}

int mr_checkpoints_range(mt_capture* cap, const mr_query* q, mr_aggregates* a, mr_replay* r,
                         mr_range_span* span, char* err, size_t errlen) {
    if (q->moment != MR_AT_PEAK || (q->from == INT64_MIN && q->to == INT64_MAX) || q->tid ||
        q->by_thread || q->observe || q->range_blocks)
        return 1;
    uint64_t fingerprint, seq = 0;
    int rc = mr_aggregates_checkpointed(cap, q->heap, q->progress, a, &fingerprint, err, errlen);
    if (rc)
        return rc;
    *span = (mr_range_span){.fingerprint = fingerprint, .stop_seq = UINT64_MAX};
    uint8_t* data = NULL;
    size_t len = 0;
    // Every event up to the checkpoint stamped before from: each was the range's latest
    // candidate in turn (profile.c, is_peak), so the checkpoint's state is.
    rc = mt_capture_checkpoint_find(cap, q->heap, MR_CHECKPOINTS_FORMAT, fingerprint,
                                    q->from == INT64_MIN ? INT64_MIN : q->from - 1, &seq, &data,
                                    &len);
    char why[128] = "";
    if (rc == 1) {
        if (mr_replay_init(r, cap, q->heap))
            rc = -ENOMEM;
        else if ((rc = mr_checkpoints_load(data, len, seq, r, why, sizeof why)))
            mr_replay_free(r);
        else if (mt_capture_checkpoint_settled(cap, q->heap, MR_CHECKPOINTS_FORMAT, fingerprint,
                                               seq, q->to, &span->stop_seq) != 1)
            span->stop_seq = UINT64_MAX;
        // Closer still, from the chunks' times: the events stamped after to are not read.
        uint64_t last = 0;
        if (!rc && q->to != INT64_MAX &&
            mt_capture_heap_seq_until(cap, q->heap, q->to, &last) >= 0 && last < span->stop_seq)
            span->stop_seq = last;
        if (!rc)
            inside(cap, q, seq, span);
    } else if (rc == 0) { // the seq 0 row was there a moment ago
        rc = 1;
    }
    free(data);
    if (rc == -EPROTO)
        rc = damaged_note(why, err, errlen);
    if (rc == -ENOMEM)
        snprintf(err, errlen, "out of memory");
    if (rc)
        mr_aggregates_free(a);
    return rc;
}

int mr_checkpoints_state(mt_capture* cap, int heap, uint64_t fingerprint, uint64_t seq,
                         mr_replay* r, char* err, size_t errlen) {
    if (mr_replay_init(r, cap, heap)) {
        snprintf(err, errlen, "out of memory");
        return -ENOMEM;
    }
    uint64_t at = 0;
    uint8_t* data = NULL;
    size_t len = 0;
    char why[128] = "";
    int rc = mt_capture_checkpoint_before(cap, heap, MR_CHECKPOINTS_FORMAT, fingerprint, seq, &at,
                                          &data, &len);
    if (rc == 1)
        rc = mr_checkpoints_load(data, len, at, r, why, sizeof why);
    else if (rc == 0) // the checkpoints were there a moment ago
        rc = mr_varbytes_fail(why, sizeof why, "no checkpoint before seq %llu",
                              (unsigned long long)seq);
    free(data);
    if (!rc && at < seq && (rc = mr_replay_run(r, seq, NULL, NULL))) {
        snprintf(err, errlen, "%s", r->err[0] ? r->err : "corrupt capture");
        mr_replay_free(r);
        return rc; // the events' own error, not the checkpoint's
    }
    if (rc)
        mr_replay_free(r);
    if (rc == -EPROTO)
        return damaged_note(why, err, errlen);
    if (rc == -ENOMEM)
        snprintf(err, errlen, "out of memory");
    return rc;
}

// The allocations stored at checkpoint seq: as decode_allocated, and 1 when there are none.
static int allocated_at(mt_capture* cap, int heap, uint64_t fingerprint, uint64_t seq,
                        mr_alloc_sum** out, size_t* n, char* why, size_t whylen) {
    uint8_t* data = NULL;
    size_t len = 0;
    int rc = mt_capture_checkpoint_allocated(cap, heap, MR_CHECKPOINTS_FORMAT, fingerprint, seq,
                                             &data, &len);
    if (rc == 1)
        rc = decode_allocated(data, len, seq, out, n, why, whylen);
    else if (rc == 0)
        rc = mr_varbytes_fail(why, whylen, "no checkpoint at seq %llu", (unsigned long long)seq);
    free(data);
    return rc;
}

int mr_checkpoints_allocated(mt_capture* cap, int heap, uint64_t fingerprint, uint64_t from_seq,
                             uint64_t to_seq, mr_alloc_sum** out, size_t* n, char* err,
                             size_t errlen) {
    mr_alloc_sum *a = NULL, *b = NULL;
    size_t na = 0, nb = 0, j = 0, k = 0;
    char why[128] = "";
    int rc = allocated_at(cap, heap, fingerprint, from_seq, &a, &na, why, sizeof why);
    if (!rc)
        rc = allocated_at(cap, heap, fingerprint, to_seq, &b, &nb, why, sizeof why);
    // b - a, in place in b: a's callsites are all b's, each with no more than b's (sums
    // only grow).
    bool bad = false;
    for (size_t i = 0; !rc && !bad && i < nb; i++) {
        mr_alloc_sum d = b[i];
        if (j < na && a[j].callsite <= d.callsite) {
            bad = a[j].callsite < d.callsite || a[j].count > d.count || a[j].bytes > d.bytes;
            d.count -= a[j].count;
            d.bytes -= a[j++].bytes;
        }
        bad |= !d.count && d.bytes;
        if (d.count)
            b[k++] = d;
    }
    if (!rc && (bad || j < na))
        rc = mr_varbytes_fail(why, sizeof why, "allocations at seq %llu and %llu",
                              (unsigned long long)from_seq, (unsigned long long)to_seq);
    free(a);
    if (rc) {
        free(b);
        b = NULL;
        k = 0;
    }
    *out = b;
    *n = k;
    if (rc == -EPROTO)
        return damaged_note(why, err, errlen);
    if (rc == -ENOMEM)
        snprintf(err, errlen, "out of memory");
    return rc;
}
