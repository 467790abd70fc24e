// SPDX-License-Identifier: MIT
// Following a capture being written (live.h): reads new chunks in small batches, each from
// its own read-only snapshot, and applies a batch only when the tracer did not checkpoint
// while it was read (a checkpoint could have mixed two moments into what was read).
#include "live.h"

#include "extent.h"
#include "sampled.h"
#include "sites.h"

#include "memtrace/schema.h"
#include "memtrace/vec.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// Chunks read per snapshot: bounds the events buffered before they are trusted (a chunk
// holds at most a few thousand events).
#define BATCH_CHUNKS 64
// Events after a gap in seq are held back only when this close to the newest seq: a late
// event was in flight in a hook when the tracer last committed, so it is recent.
#define HOLD_WINDOW (1u << 18)
// Snapshots tried when the tracer keeps checkpointing under the reader.
#define ATTEMPTS 8

int mr_live_init(mr_live* l, int64_t bucket_ns) {
    memset(l, 0, sizeof *l);
    l->bucket_ns = bucket_ns > 0 ? bucket_ns : 1000000000;
    l->bucket_last = -1;
    l->rss_ts = l->vsz_ts = INT64_MIN;
    if (mr_replay_init(&l->heap, NULL, MT_HEAP_LIBC) || mr_u64map_init(&l->site_bytes) ||
        mr_u64map_init(&l->site_blocks)) {
        mr_live_free(l);
        return -ENOMEM;
    }
    return 0;
}

void mr_live_free(mr_live* l) {
    mr_replay_free(&l->heap);
    mr_u64map_free(&l->site_bytes);
    mr_u64map_free(&l->site_blocks);
    mr_sites_labels_free(l->labels);
    mr_symbols_free(l->sym);
    free(l->held);
    free(l->command);
    memset(l, 0, sizeof *l);
}

static void site_add(mr_u64map* m, uint32_t callsite, uint64_t v, bool add) {
    uint64_t* p = mr_u64map_get(m, callsite);
    if (p)
        *p = add ? *p + v : *p - v;
    else if (add)
        mr_u64map_put(m, callsite, v); // out of memory: the site is left out of the table
}

static void plot_sample(mr_live* l, int64_t ts) {
    // A time before the capture's start (a crafted file: the tracer writes none) is drawn
    // in the first bucket: bucket indexes are never negative.
    int64_t b = ts > 0 ? ts / l->bucket_ns : 0;
    if (b > l->bucket_last) {
        // Buckets with no event hold the level the heap stayed at; only the last
        // MR_LIVE_BUCKETS are kept, so a jump of years fills no more than those.
        int64_t from = l->bucket_last + 1;
        if (b - from >= MR_LIVE_BUCKETS)
            from = b - MR_LIVE_BUCKETS + 1;
        for (int64_t i = from; l->bucket_last >= 0 && i <= b; i++)
            l->bucket[i % MR_LIVE_BUCKETS] = l->heap.live_bytes;
        if (l->bucket_last < 0)
            l->bucket[b % MR_LIVE_BUCKETS] = 0;
        l->bucket_last = b;
    }
    uint64_t* slot = &l->bucket[l->bucket_last % MR_LIVE_BUCKETS];
    if (l->heap.live_bytes > *slot)
        *slot = l->heap.live_bytes;
}

static int apply(mr_live* l, const mt_event* ev) {
    mr_block freed;
    bool has_freed;
    int rc = mr_replay_apply(&l->heap, ev, &freed, &has_freed);
    if (rc) {
        mr_replay_describe(&l->heap, rc, ev);
        return rc == -EOVERFLOW ? -EPROTO : rc;
    }
    if (has_freed) {
        site_add(&l->site_bytes, freed.callsite, freed.size, false);
        site_add(&l->site_blocks, freed.callsite, 1, false);
    }
    if (mt_kind_is_alloc(ev->kind)) {
        site_add(&l->site_bytes, ev->callsite, ev->size, true);
        site_add(&l->site_blocks, ev->callsite, 1, true);
    }
    plot_sample(l, ev->ts);
    return 0;
}

// Merges the batch (in seq order) into the held events, then applies, in seq order, what
// can be trusted: the next seq, anything held since an earlier update (old_max), anything
// far below the newest seq, or everything when `all`. The rest stays held.
static int apply_batch(mr_live* l, const mt_event* ev, size_t n, uint64_t old_max, bool all) {
    size_t total = l->nheld + n;
    mt_event* merged = malloc((total ? total : 1) * sizeof *merged);
    if (!merged)
        return -ENOMEM;
    size_t i = 0, j = 0, k = 0;
    while (i < l->nheld || j < n)
        merged[k++] =
            j == n || (i < l->nheld && l->held[i].seq < ev[j].seq) ? l->held[i++] : ev[j++];
    if (n && ev[n - 1].seq > l->max_seq)
        l->max_seq = ev[n - 1].seq;
    size_t done = 0;
    int rc = 0;
    for (; done < total; done++) {
        uint64_t seq = merged[done].seq;
        bool next = seq <= l->heap.last_seq + 1;
        if (!all && !next && seq > old_max && seq + HOLD_WINDOW > l->max_seq)
            break;
        if ((rc = apply(l, &merged[done])))
            break;
    }
    l->nheld = 0;
    if (!rc && done < total) {
        rc = MT_VEC_RESERVE(&l->held, &l->capheld, total - done);
        if (!rc) {
            memcpy(l->held, merged + done, (total - done) * sizeof *merged);
            l->nheld = total - done;
        }
    }
    free(merged);
    return rc;
}

static int add_counter(void* ud, int track, int64_t ts, int64_t value) {
    mr_live* l = ud;
    if (track == MT_TRACK_RSS) {
        l->rss = value;
        l->rss_ts = ts;
        l->has_rss = true;
        if (value > l->rss_peak)
            l->rss_peak = value;
    } else {
        l->vsz = value;
        l->vsz_ts = ts;
    }
    return 0;
}

// One snapshot: up to BATCH_CHUNKS new chunks into *buf, the counters and the meta if this
// is the last batch. Returns 1 when more chunks may follow, 0 when all were read, -EAGAIN
// when the tracer checkpointed meanwhile (nothing was applied), or a negative errno.
static int read_batch(mr_live* l, const char* path, bool all, char* err, size_t errlen) {
    mt_capture* cap = NULL;
    int rc = mt_capture_open_live(path, &cap, err, errlen);
    if (rc)
        return rc;
    bool complete = !mt_capture_truncated(cap); // read first: its chunks are all below
    mr_sampled_note(cap);                       // the view then says its bytes are estimates
    mt_event* buf = NULL;
    size_t n = 0, cap_n = 0;
    mt_event_iter* it = NULL;
    int64_t upto = l->last_chunk + BATCH_CHUNKS;
    // A python process's heap is its libc and python heaps together, as in every report.
    int heap = mr_extent_default_heap(cap) == MT_HEAP_PROGRAM ? MT_HEAP_PROGRAM : MT_HEAP_LIBC;
    rc = mt_capture_iter_open_chunks(cap, heap, l->last_chunk, upto, &it);
    mt_event ev;
    int more = 0;
    while (!rc && (more = mt_capture_iter_next(it, &ev)) == 1) {
        if (MT_VEC_RESERVE(&buf, &cap_n, n + 1)) {
            rc = -ENOMEM;
            break;
        }
        buf[n++] = ev;
    }
    if (!rc && more < 0)
        rc = more;
    if (rc && it)
        snprintf(err, errlen, "%s", rc == -ENOMEM ? "out of memory" : mt_capture_iter_error(it));
    // Chunk ids have no holes: a batch reaching its last id may have more after it.
    int64_t last = rc ? l->last_chunk : mt_capture_iter_last_chunk(it);
    bool batch_full = last == upto;
    mt_capture_iter_close(it);
    if (!rc && !batch_full &&
        (mt_capture_counters_after(cap, MT_TRACK_RSS, l->rss_ts, add_counter, l) ||
         mt_capture_counters_after(cap, MT_TRACK_VSZ, l->vsz_ts, add_counter, l))) {
        snprintf(err, errlen, "%s", mt_capture_error(cap));
        rc = -EPROTO;
    }
    int64_t max_callsite = 0, max_frame = 0;
    if (!rc && !batch_full && mt_capture_stack_ids(cap, &max_frame, &max_callsite) == 0 &&
        (max_callsite > l->sym_callsites || (complete && !l->complete))) {
        mr_symbols* sym = NULL;
        char quiet[512]; // a screen redrawn in place has no line for notes
        if (mr_symbols_load(cap, &sym, quiet, sizeof quiet) == 0) {
            mr_sites_labels_free(l->labels);
            mr_symbols_free(l->sym);
            l->sym = sym;
            l->labels = mr_sites_labels_new(sym);
            l->sym_callsites = max_callsite;
        }
    }
    if (!rc && !l->command)
        l->command = mt_capture_meta_text(cap, "cmdline");
    int64_t duration = mt_capture_meta_int(cap, "duration_ns", 0);
    if (!rc && mt_capture_live_changed(cap))
        rc = -EAGAIN;
    mt_capture_close(cap);
    if (!rc) {
        uint64_t old_max = l->nheld ? l->held[l->nheld - 1].seq : 0;
        rc = apply_batch(l, buf, n, old_max, all || (complete && !batch_full));
        if (rc)
            snprintf(err, errlen, "%s", l->heap.err[0] ? l->heap.err : "out of memory");
        l->events_read += n;
        l->last_chunk = last;
        if (!batch_full) {
            l->complete = complete;
            if (duration > l->now_ns)
                l->now_ns = duration;
        }
    }
    free(buf);
    return rc ? rc : batch_full ? 1 : 0;
}

int mr_live_update(mr_live* l, const char* path, bool all, char* err, size_t errlen) {
    l->events_read = 0;
    l->updates++;
    int rc, failed = 0;
    do {
        rc = read_batch(l, path, all, err, errlen);
        if (rc == -EAGAIN && ++failed < ATTEMPTS)
            rc = 1; // read that batch again from a fresh snapshot
    } while (rc == 1);
    if (rc == -EAGAIN) {
        snprintf(err, errlen, "the capture kept changing under the reader; try again");
        return -EIO;
    }
    if (l->heap.last_ts > l->now_ns)
        l->now_ns = l->heap.last_ts;
    return rc;
}

static int by_name(const void* a, const void* b) {
    return strcmp(((const mr_live_site*)a)->name, ((const mr_live_site*)b)->name);
}

static int by_bytes(const void* a, const void* b) {
    const mr_live_site *x = a, *y = b;
    if (x->bytes != y->bytes)
        return x->bytes < y->bytes ? 1 : -1;
    return strcmp(x->name, y->name);
}

size_t mr_live_top_sites(const mr_live* l, mr_live_site* out, size_t max) {
    size_t n = 0, cap = 0;
    mr_live_site* rows = NULL;
    uint64_t callsite, bytes;
    for (size_t i = 0; mr_u64map_next(&l->site_bytes, &i, &callsite, &bytes);) {
        if (bytes == 0 || MT_VEC_RESERVE(&rows, &cap, n + 1))
            continue;
        uint64_t* blocks = mr_u64map_get((mr_u64map*)&l->site_blocks, callsite);
        const char* name = "[stack not written yet]";
        if (l->sym && callsite < mr_symbols_callsite_count(l->sym))
            name = l->labels ? mr_sites_label(l->labels, (uint32_t)callsite)
                             : mr_sites_site_name(l->sym, (uint32_t)callsite);
        rows[n++] = (mr_live_site){name, bytes, blocks ? *blocks : 0};
    }
    // Callsites of one label (or that differ only in return addresses) are one site.
    if (n)
        qsort(rows, n, sizeof *rows, by_name);
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        if (m && !strcmp(rows[m - 1].name, rows[i].name)) {
            rows[m - 1].bytes += rows[i].bytes;
            rows[m - 1].blocks += rows[i].blocks;
        } else {
            rows[m++] = rows[i];
        }
    }
    if (m)
        qsort(rows, m, sizeof *rows, by_bytes);
    if (m > max)
        m = max;
    if (m)
        memcpy(out, rows, m * sizeof *rows);
    free(rows);
    return m;
}
