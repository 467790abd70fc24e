// SPDX-License-Identifier: MIT
// The aggregation model (profile.h): live blocks at a moment and at the end, and
// allocations over a range, per callsite, from one replay.
#include "profile.h"

#include "aggregates.h"
#include "checkpoints.h"
#include "end_blocks.h"
#include "heapmap.h"
#include "messages.h"
#include "threads_profile.h"
#include "u64map.h"

#include "memtrace/schema.h"
#include "memtrace/vec.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// While replaying, a row's end_* hold its blocks live now, and its blocks live at each
// moment's latest candidate ("mark") are saved when the row first changes after that mark,
// so marking is O(1) however many rows there are (the peak moves often). Marks are
// numbered over all moments and each moment keeps the number of its latest. With one
// moment the saved value is the row's live_*; with several, a pair per moment in `saved`.

// A row while building, with what finding and saving it needs, in one cache line.
typedef struct brow {
    mr_profile_row row;
    uint64_t saved_at; // the mark number when it last changed (its values saved then)
    uint64_t next;     // 1 + the next row of the same callsite (another thread), 0: none
} brow;

typedef struct builder {
    const mr_query* q;  // qs[0]: the heap, thread, range, observer of every moment
    const mr_query* qs; // the moments
    size_t nmoments;
    mr_profile* out; // one per moment
    brow* rows;
    size_t nrows, cap;
    uint64_t* saved; // several moments: per row, per moment, its live bytes then blocks
    size_t saved_cap;
    // The head of each callsite's rows (1 + a row, 0: none): an array over the capture's
    // callsite ids, and a map for ids beyond them (only a damaged capture has those).
    uint64_t* heads;
    size_t nheads;
    mr_u64map stray_heads;

    uint64_t mark;                                // marks so far, over all moments
    uint64_t moment_mark[MR_PROFILE_MAX_MOMENTS]; // each moment's latest mark (0: none)
    bool past[MR_PROFILE_MAX_MOMENTS]; // MR_AT_TIME: an event stamped after `at` was seen
    bool any_peak;                     // a moment is MR_AT_PEAK
    uint64_t range_peak; // MR_AT_PEAK in a range: the heap's live bytes at the last mark
    uint64_t progress_total;
    mr_heapmap in_range; // range_blocks: the blocks allocated within the range, live now
} builder;

static uint64_t* head_of(builder* b, uint32_t callsite) {
    if (callsite < b->nheads)
        return &b->heads[callsite];
    uint64_t* h = mr_u64map_get(&b->stray_heads, callsite);
    if (!h && !mr_u64map_put(&b->stray_heads, callsite, 0))
        h = mr_u64map_get(&b->stray_heads, callsite);
    return h;
}

// Several moments: the row, unchanged since its last change, holds now what it held at
// each moment whose latest mark came after that change.
static void save_moments(builder* b, size_t i) {
    const brow* r = &b->rows[i];
    uint64_t* s = &b->saved[i * 2 * b->nmoments];
    for (size_t k = 0; k < b->nmoments; k++)
        if (b->moment_mark[k] > r->saved_at) {
            s[2 * k] = r->row.end_bytes;
            s[2 * k + 1] = r->row.end_blocks;
        }
}

// The row of (callsite, tid), made if new, with its live values brought up to the latest
// mark; NULL when out of memory.
static mr_profile_row* row_of(builder* b, uint32_t callsite, uint32_t tid) {
    uint32_t want_tid = b->q->by_thread ? tid : 0;
    uint64_t* head = head_of(b, callsite);
    if (!head)
        return NULL;
    uint64_t i = *head;
    while (i && b->rows[i - 1].row.tid != want_tid)
        i = b->rows[i - 1].next;
    if (!i) {
        size_t per_row = 2 * b->nmoments;
        if (mt_vec_grow(&b->rows, &b->cap, b->nrows + 1, sizeof *b->rows) ||
            (b->nmoments > 1 &&
             mt_vec_grow(&b->saved, &b->saved_cap, (b->nrows + 1) * per_row, sizeof *b->saved)))
            return NULL;
        if (b->nmoments > 1)
            memset(&b->saved[b->nrows * per_row], 0, per_row * sizeof *b->saved);
        b->rows[b->nrows] = (brow){
            .row = {.callsite = callsite, .tid = want_tid}, .saved_at = b->mark, .next = *head};
        i = *head = ++b->nrows;
    }
    brow* r = &b->rows[i - 1];
    if (r->saved_at != b->mark) {
        if (b->nmoments == 1) { // every mark is the moment's
            r->row.live_bytes = r->row.end_bytes;
            r->row.live_blocks = r->row.end_blocks;
        } else {
            save_moments(b, i - 1);
        }
        r->saved_at = b->mark;
    }
    return &r->row;
}

static bool wanted(const builder* b, uint32_t tid) {
    return b->q->tid == 0 || b->q->tid == tid;
}

// Counts one event into its rows: the block a free released (or an allocation replaced),
// an allocation (and its bytes in the range).
static int count(builder* b, const mt_event* ev, const mr_block* freed) {
    mr_profile_row* row;
    mr_block gone;
    bool counted =
        freed && (!b->q->range_blocks || mr_heapmap_take(&b->in_range, mr_replay_key(ev), &gone));
    if (counted && wanted(b, freed->tid)) { // freed, or replaced by an allocation
        if (!(row = row_of(b, freed->callsite, freed->tid)))
            return -ENOMEM;
        row->end_bytes -= freed->size;
        row->end_blocks--;
    }
    bool in_range = ev->ts >= b->q->from && ev->ts <= b->q->to;
    if (mt_kind_is_alloc(ev->kind) && wanted(b, ev->tid) && (in_range || !b->q->range_blocks)) {
        if (!(row = row_of(b, ev->callsite, ev->tid)))
            return -ENOMEM;
        row->end_bytes += ev->size;
        row->end_blocks++;
        if (in_range) {
            row->alloc_bytes += ev->size;
            row->alloc_count++;
        }
        mr_block born = {.addr = mr_replay_key(ev)};
        bool had;
        if (b->q->range_blocks && mr_heapmap_put(&b->in_range, &born, &gone, &had))
            return -ENOMEM;
    }
    return 0;
}

// MR_AT_PEAK: whether the state after ev is the highest point of the heap's live bytes
// within from..to so far. The state entering the range (after the last event before it)
// is the first candidate; a later one must be higher, so the first to reach the highest
// point is the moment, as for the run's peak.
static bool is_peak(builder* b, const mr_replay* r, const mt_event* ev) {
    const mr_query* q = b->q;
    if (q->from == INT64_MIN && q->to == INT64_MAX)
        return r->peak_seq == ev->seq;
    if (ev->ts > q->to || (ev->ts >= q->from && r->live_bytes <= b->range_peak))
        return false;
    b->range_peak = r->live_bytes;
    return true;
}

// Whether the state after ev is a candidate of moment k (peak: whether it is a new peak).
static inline bool is_candidate(builder* b, size_t k, const mt_event* ev, bool peak) {
    const mr_query* q = &b->qs[k];
    if (q->moment == MR_AT_PEAK)
        return peak;
    if (q->moment != MR_AT_TIME || b->past[k])
        return false;
    if (ev->ts > q->at || (q->before_seq && ev->seq >= q->before_seq)) {
        // the moment is the state before the first such event
        b->past[k] = true;
        return false;
    }
    return true;
}

static inline void set_moment(builder* b, size_t k, const mt_event* ev) {
    b->moment_mark[k] = b->mark;
    b->out[k].moment_seq = ev->seq;
    b->out[k].moment_ts = ev->ts;
}

// Marks the state after ev (one mark number) for each moment it is a candidate of.
static void mark_moments(builder* b, const mr_replay* r, const mt_event* ev) {
    if (b->nmoments == 1) { // the common case: one moment, no loop over them
        if (b->q->moment == MR_AT_PEAK ? is_peak(b, r, ev) : is_candidate(b, 0, ev, false)) {
            b->mark++;
            set_moment(b, 0, ev);
        }
        return;
    }
    bool peak = b->any_peak && is_peak(b, r, ev), marked = false;
    for (size_t k = 0; k < b->nmoments; k++)
        if (is_candidate(b, k, ev, peak)) {
            if (!marked)
                b->mark++, marked = true;
            set_moment(b, k, ev);
        }
}

static int on_event(mr_replay* r, const mt_event* ev, const mr_block* freed, void* ud) {
    builder* b = ud;
    const mr_query* q = b->q;
    int rc = count(b, ev, freed);
    if (rc)
        return rc;
    mark_moments(b, r, ev);
    if (q->progress && (r->events & 0xfffff) == 0 && b->progress_total)
        mr_messages_progress(q->progress, (double)r->events / (double)b->progress_total);
    return q->observe ? q->observe(r, ev, freed, q->observe_ud) : 0;
}

static int cmp_rows(const void* a, const void* b) {
    const mr_profile_row *x = a, *y = b;
    if (x->callsite != y->callsite)
        return x->callsite < y->callsite ? -1 : 1;
    return (x->tid > y->tid) - (x->tid < y->tid);
}

// Adds a row's metrics to p's sums.
static void add_row(mr_profile* p, const mr_profile_row* r) {
    p->live_bytes += r->live_bytes;
    p->live_blocks += r->live_blocks;
    p->end_bytes += r->end_bytes;
    p->end_blocks += r->end_blocks;
    p->alloc_bytes += r->alloc_bytes;
    p->alloc_count += r->alloc_count;
}

// Moment k's rows: every row's live_* at its last mark, the rows with something in a
// metric (not those allocated outside the range and freed before the moment), summed, sorted.
static int finish(builder* b, size_t k) {
    mr_profile* p = &b->out[k];
    bool at_end = b->qs[k].moment == MR_AT_END;
    if (b->nrows && !(p->rows = calloc(b->nrows, sizeof *p->rows)))
        return -ENOMEM;
    size_t n = 0;
    for (size_t i = 0; i < b->nrows; i++) {
        mr_profile_row row = b->rows[i].row, *r = &row;
        if (at_end || b->moment_mark[k] > b->rows[i].saved_at) { // unchanged since the mark
            r->live_bytes = r->end_bytes;
            r->live_blocks = r->end_blocks;
        } else if (b->nmoments > 1) {
            r->live_bytes = b->saved[(i * b->nmoments + k) * 2];
            r->live_blocks = b->saved[(i * b->nmoments + k) * 2 + 1];
        }
        if (!r->live_blocks && !r->end_blocks && !r->alloc_count)
            continue;
        add_row(p, r);
        p->rows[n++] = *r;
    }
    p->nrows = n;
    if (n > 1)
        qsort(p->rows, n, sizeof *p->rows, cmp_rows);
    return 0;
}

// The builder's tables: a head per callsite id the capture has.
static int builder_init(builder* b, mt_capture* cap) {
    int64_t max_frame, max_callsite;
    if (mt_capture_stack_ids(cap, &max_frame, &max_callsite) || max_callsite < 0)
        max_callsite = 0;
    b->nheads = (size_t)max_callsite + 1;
    b->heads = calloc(b->nheads, sizeof *b->heads);
    return b->heads && !mr_u64map_init(&b->stray_heads) &&
                   (!b->q->range_blocks || !mr_heapmap_init(&b->in_range))
               ? 0
               : -ENOMEM;
}

static void builder_free(builder* b) {
    free(b->rows);
    free(b->saved);
    free(b->heads);
    mr_u64map_free(&b->stray_heads);
    mr_heapmap_free(&b->in_range);
}

// The builder at a checkpoint's state (r, loaded): each live block in its row, and that
// state the range's latest candidate unless it is the state before any event.
static int start_at(builder* b, const mr_replay* r) {
    mr_block blk;
    for (size_t i = 0; mr_heapmap_next(&r->live, &i, &blk);) {
        mr_profile_row* row = row_of(b, blk.callsite, blk.tid);
        if (!row)
            return -ENOMEM;
        row->end_bytes += blk.size;
        row->end_blocks++;
    }
    if (r->events) {
        b->mark++;
        b->moment_mark[0] = b->mark;
        b->out[0].moment_seq = r->last_seq;
        b->out[0].moment_ts = r->last_ts;
        b->range_peak = r->live_bytes;
    }
    return 0;
}

// p, a range's profile from the events up to where it ends: what is live at the end and
// the totals are the whole run's (whole: the aggregates' profile). Its rows, by callsite,
// are those live at the moment, live at the end or allocated in the range, as finish()
// keeps them. Returns 0 or -ENOMEM.
static int with_whole_run(mr_profile* p, const mr_profile* whole) {
    mr_profile_row* rows = calloc(p->nrows + whole->nrows + 1, sizeof *rows);
    if (!rows)
        return -ENOMEM;
    size_t i = 0, j = 0, n = 0;
    p->live_bytes = p->live_blocks = p->end_bytes = p->end_blocks = 0;
    p->alloc_bytes = p->alloc_count = 0;
    while (i < p->nrows || j < whole->nrows) {
        bool mine =
            j == whole->nrows || (i < p->nrows && p->rows[i].callsite <= whole->rows[j].callsite);
        bool theirs =
            i == p->nrows || (j < whole->nrows && whole->rows[j].callsite <= p->rows[i].callsite);
        mr_profile_row r =
            mine ? p->rows[i++] : (mr_profile_row){.callsite = whole->rows[j].callsite};
        r.end_bytes = theirs ? whole->rows[j].end_bytes : 0;
        r.end_blocks = theirs ? whole->rows[j++].end_blocks : 0;
        if (!r.live_blocks && !r.end_blocks && !r.alloc_count)
            continue;
        add_row(p, &r);
        rows[n++] = r;
    }
    free(p->rows);
    p->rows = rows;
    p->nrows = n;
    p->peak_bytes = whole->peak_bytes;
    p->peak_seq = whole->peak_seq;
    p->peak_ts = whole->peak_ts;
    p->events = whole->events;
    p->first_ts = whole->first_ts;
    p->last_ts = whole->last_ts;
    p->heap = whole->heap;
    return 0;
}

// Whether the queries differ only in what one replay can give for each: moment and at.
static bool share_replay(const mr_query* qs, size_t n) {
    for (size_t k = 1; k < n; k++)
        if (qs[k].heap != qs[0].heap || qs[k].tid != qs[0].tid ||
            qs[k].by_thread != qs[0].by_thread || qs[k].from != qs[0].from ||
            qs[k].to != qs[0].to || qs[k].range_blocks != qs[0].range_blocks)
            return false;
    return true;
}

// Every row's live values at the latest mark (row_of does it lazily), so that a row's
// end_* may then change without a change counted.
static void save_rows(builder* b) {
    for (size_t i = 0; i < b->nrows; i++) {
        brow* r = &b->rows[i];
        if (r->saved_at != b->mark) {
            r->row.live_bytes = r->row.end_bytes;
            r->row.live_blocks = r->row.end_blocks;
            r->saved_at = b->mark;
        }
    }
}

// Adds live's blocks to their rows' live values (at_mark) or end values.
static int tally(builder* b, const mr_heapmap* live, bool at_mark) {
    mr_block blk;
    for (size_t i = 0; mr_heapmap_next(live, &i, &blk);) {
        mr_profile_row* row = row_of(b, blk.callsite, blk.tid);
        if (!row)
            return -ENOMEM;
        *(at_mark ? &row->live_bytes : &row->end_bytes) += blk.size;
        (*(at_mark ? &row->live_blocks : &row->end_blocks))++;
    }
    return 0;
}

// The builder (one moment: a range's peak) after its replay reached span->inside_from, moved
// to span->inside_to without reading the events between (each within the range): the
// range's latest candidate is the first to reach their highest live bytes when that is
// higher than the candidates' before; their allocations are the checkpoints' difference.
// r, the replay, is left at inside_to. Returns 0, 1 (damaged checkpoints: the note in err),
// or a negative errno with the reason in err.
static int skip_inside(builder* b, mr_replay* r, const mr_range_span* span, char* err,
                       size_t errlen) {
    mt_capture* cap = r->cap;
    int heap = r->heap, rc = 0;
    save_rows(b);
    mr_replay_free(r); // the rows hold what the range needs of it
    if (span->high_bytes > b->range_peak) {
        mr_replay at;
        if ((rc = mr_checkpoints_state(cap, heap, span->fingerprint, span->high_seq, &at, err,
                                       errlen)))
            return rc;
        b->mark++;
        for (size_t i = 0; i < b->nrows; i++) {
            b->rows[i].row.live_bytes = b->rows[i].row.live_blocks = 0;
            b->rows[i].saved_at = b->mark;
        }
        rc = tally(b, &at.live, true);
        mr_replay_free(&at);
        b->moment_mark[0] = b->mark;
        b->out[0].moment_seq = span->high_seq;
        b->out[0].moment_ts = span->high_ts;
        b->range_peak = span->high_bytes;
    }
    if (!rc && !(rc = mr_checkpoints_state(cap, heap, span->fingerprint, span->inside_to, r, err,
                                           errlen))) {
        for (size_t i = 0; i < b->nrows; i++)
            b->rows[i].row.end_bytes = b->rows[i].row.end_blocks = 0;
        rc = tally(b, &r->live, false);
    }
    mr_alloc_sum* sums = NULL;
    size_t n = 0;
    if (!rc)
        rc = mr_checkpoints_allocated(cap, heap, span->fingerprint, span->inside_from,
                                      span->inside_to, &sums, &n, err, errlen);
    for (size_t i = 0; !rc && i < n; i++) {
        mr_profile_row* row = row_of(b, sums[i].callsite, 0);
        if (!row) {
            rc = -ENOMEM;
        } else {
            row->alloc_count += sums[i].count;
            row->alloc_bytes += sums[i].bytes;
        }
    }
    free(sums);
    if (rc == -ENOMEM)
        snprintf(err, errlen, "out of memory");
    return rc;
}

// mr_profile_build_moments, from the checkpoints where they answer when checkpoints is set.
// Returns as it does, or 1 when damaged checkpoints were found on the way (the note in err).
static int build(mt_capture* cap, const mr_query* qs, size_t n, mr_profile* out, bool checkpoints,
                 char* err, size_t errlen) {
    const mr_query* q = &qs[0];
    builder b = {.q = q, .qs = qs, .nmoments = n, .out = out};
    for (size_t k = 0; k < n; k++)
        b.any_peak |= qs[k].moment == MR_AT_PEAK;
    // A range's peak: from the checkpoint before the range to the last event that may be in
    // it, the rest of the whole run from the aggregates.
    mr_aggregates whole;
    mr_replay r;
    mr_range_span span = {.stop_seq = UINT64_MAX};
    int ranged =
        n == 1 && checkpoints ? mr_checkpoints_range(cap, q, &whole, &r, &span, err, errlen) : 1;
    if (ranged < 0)
        return ranged;
    if (q->progress && ranged)
        b.progress_total = (uint64_t)mt_capture_meta_int(cap, "events_written", 0);
    if (builder_init(&b, cap) || (ranged && mr_replay_init(&r, cap, q->heap)) ||
        (!ranged && start_at(&b, &r))) {
        builder_free(&b);
        if (!ranged) {
            mr_replay_free(&r);
            mr_aggregates_free(&whole);
        }
        snprintf(err, errlen, "out of memory");
        return -ENOMEM;
    }
    // The live-block table on a core of its own; exact where the checkpoints' writer (an
    // observer of the aggregates' replay) reads it.
    r.pipelined = true;
    r.live_exact_every = mr_checkpoints_interval();
    bool skip = !ranged && span.inside_to, skip_failed = false;
    int rc = mr_replay_run(&r, skip ? span.inside_from : span.stop_seq, on_event, &b);
    if (!rc && skip) {
        rc = skip_inside(&b, &r, &span, err, errlen);
        skip_failed = rc != 0; // worded in err already
        if (!rc)
            rc = mr_replay_run(&r, span.stop_seq, on_event, &b);
    }
    if (q->progress)
        mr_messages_progress(q->progress, -1);
    if (rc && !skip_failed) {
        snprintf(err, errlen, "%s", r.err[0] ? r.err : "corrupt capture");
        rc = rc < 0 ? rc : -EPROTO;
    }
    for (size_t k = 0; k < n && !rc; k++) {
        mr_profile* p = &out[k];
        if (qs[k].moment == MR_AT_END) {
            p->moment_seq = r.last_seq;
            p->moment_ts = r.last_ts;
        } else if (qs[k].moment == MR_AT_TIME) {
            p->moment_ts = qs[k].at;
        }
        if ((rc = finish(&b, k)) || (!ranged && (rc = with_whole_run(p, &whole.peak))))
            snprintf(err, errlen, "out of memory");
        if (!ranged)
            continue;
        p->peak_bytes = r.peak_bytes;
        p->peak_seq = r.peak_seq;
        p->peak_ts = r.peak_ts;
        p->events = r.events;
        p->first_ts = r.first_ts;
        p->last_ts = r.last_ts;
        mr_replay_totals(&r, &p->heap);
    }
    mr_replay_free(&r);
    builder_free(&b);
    if (!ranged)
        mr_aggregates_free(&whole);
    if (rc)
        for (size_t k = 0; k < n; k++)
            mr_profile_free(&out[k]);
    return rc;
}

// A range's leaks (one query at the end counting the blocks allocated within from..to,
// every thread, rows per callsite, no observer) where the heap's checkpoints are stored:
// the blocks live at the end allocated within the range from the stored end blocks
// (end_blocks.h); unless only they are asked, the allocations within the range and the
// whole run's numbers from the range's profile at its peak (checkpoints.h), else the
// whole run's at its end. Returns as mr_profile_build, or 1 when they cannot answer (the
// caller replays).
static int range_leaks(mt_capture* cap, const mr_query* q, mr_profile* out, char* err,
                       size_t errlen) {
    if (q->moment != MR_AT_END || !q->range_blocks || q->tid || q->by_thread || q->observe)
        return 1;
    // The whole run's aggregates (ends_only's numbers) and the checkpoints the range's
    // profile at its peak reads, computed when missing where memreport may write.
    mr_aggregates whole;
    uint64_t fp;
    int rc = mr_aggregates_checkpointed(cap, q->heap, q->progress, &whole, &fp, err, errlen);
    if (rc)
        return rc;
    mr_profile_row* ends;
    size_t nends;
    char note[256] = "";
    rc = mr_end_blocks_in_range(cap, q->heap, q->from, q->to, &ends, &nends, note, sizeof note);
    if (rc) {
        mr_aggregates_free(&whole);
        if (rc < 0)
            snprintf(err, errlen, "%s", note);
        return rc;
    }
    mr_profile p = {0};
    if (q->ends_only) {
        p = whole.peak;
        p.rows = NULL;
        p.nrows = 0;
    } else {
        mr_query peak = *q;
        peak.moment = MR_AT_PEAK;
        peak.range_blocks = false;
        rc = mr_profile_build(cap, &peak, &p, err, errlen);
    }
    mr_aggregates_free(&whole);
    mr_profile_row* rows = rc ? NULL : calloc(p.nrows + nends + 1, sizeof *rows);
    if (!rows) {
        free(ends);
        mr_profile_free(&p);
        if (!rc)
            snprintf(err, errlen, "out of memory");
        return rc ? rc : -ENOMEM;
    }
    // As finish() keeps them at the end: live as at the end, with something in a metric.
    *out = p;
    out->rows = rows;
    out->nrows = 0;
    out->moment_seq = p.heap.last_seq;
    out->moment_ts = p.heap.last_ts;
    out->live_bytes = out->live_blocks = out->end_bytes = out->end_blocks = 0;
    out->alloc_bytes = out->alloc_count = 0;
    for (size_t i = 0, j = 0; i < p.nrows || j < nends;) {
        bool mine = j == nends || (i < p.nrows && p.rows[i].callsite <= ends[j].callsite);
        bool theirs = i == p.nrows || (j < nends && ends[j].callsite <= p.rows[i].callsite);
        mr_profile_row r = {.callsite = mine ? p.rows[i].callsite : ends[j].callsite};
        if (mine) {
            r.alloc_bytes = p.rows[i].alloc_bytes;
            r.alloc_count = p.rows[i++].alloc_count;
        }
        if (theirs) {
            r.live_bytes = r.end_bytes = ends[j].end_bytes;
            r.live_blocks = r.end_blocks = ends[j++].end_blocks;
        }
        if (!r.end_blocks && !r.alloc_count)
            continue;
        add_row(out, &r);
        rows[out->nrows++] = r;
    }
    free(ends);
    free(p.rows);
    if (note[0] && !err[0])
        snprintf(err, errlen, "%s", note);
    return 0;
}

int mr_profile_build_moments(mt_capture* cap, const mr_query* qs, size_t n, mr_profile* out,
                             char* err, size_t errlen) {
    memset(out, 0, n * sizeof *out);
    if (n == 0 || n > MR_PROFILE_MAX_MOMENTS || !share_replay(qs, n)) {
        snprintf(err, errlen, "%zu moments that cannot share a replay", n);
        return -EINVAL;
    }
    // What the heap's aggregates answer costs no event (stored: a read; else stored now).
    int stored = mr_aggregates_answer(cap, qs, n, out, err, errlen);
    if (stored > 0) // at times: from the checkpoint before them
        stored = mr_checkpoints_answer(cap, qs, n, out, err, errlen);
    if (stored > 0 && n == 1) // per thread: from checkpoints and a count of the allocations
        stored = mr_threads_profile_answer(cap, qs, out, err, errlen);
    if (stored > 0 && n == 1) // a range's leaks: the blocks live at the end, stored
        stored = range_leaks(cap, qs, out, err, errlen);
    if (stored <= 0)
        return stored;
    int rc = build(cap, qs, n, out, true, err, errlen);
    if (rc > 0) { // damaged checkpoints on the way (the note in err): every event read instead
        memset(out, 0, n * sizeof *out);
        rc = build(cap, qs, n, out, false, err, errlen);
    }
    return rc;
}

int mr_profile_build(mt_capture* cap, const mr_query* q, mr_profile* p, char* err, size_t errlen) {
    return mr_profile_build_moments(cap, q, 1, p, err, errlen);
}

bool mr_profile_is_default(const mr_query* q) {
    return (q->moment == MR_AT_PEAK || q->moment == MR_AT_END) && q->from == INT64_MIN &&
           q->to == INT64_MAX && q->tid == 0 && !q->by_thread && !q->observe && !q->range_blocks;
}

int mr_profile_moment_of(const mr_profile* peak, mr_moment moment, mr_profile* out) {
    *out = *peak;
    out->rows = NULL;
    if (peak->nrows && !(out->rows = malloc(peak->nrows * sizeof *out->rows)))
        return -ENOMEM;
    if (peak->nrows)
        memcpy(out->rows, peak->rows, peak->nrows * sizeof *out->rows);
    if (moment != MR_AT_END)
        return 0;
    // As finish() gives it at the end: the same rows (each allocated in the whole run),
    // live as at the end.
    for (size_t i = 0; i < out->nrows; i++) {
        out->rows[i].live_bytes = out->rows[i].end_bytes;
        out->rows[i].live_blocks = out->rows[i].end_blocks;
    }
    out->live_bytes = out->end_bytes;
    out->live_blocks = out->end_blocks;
    out->moment_seq = peak->heap.last_seq;
    out->moment_ts = peak->heap.last_ts;
    return 0;
}

void mr_profile_free(mr_profile* p) {
    free(p->rows);
    memset(p, 0, sizeof *p);
}

uint64_t mr_profile_row_value(const mr_profile_row* r, mr_metric m) {
    switch (m) {
    case MR_METRIC_LIVE_BYTES:
        return r->live_bytes;
    case MR_METRIC_LIVE_BLOCKS:
        return r->live_blocks;
    case MR_METRIC_ALLOC_BYTES:
        return r->alloc_bytes;
    case MR_METRIC_ALLOC_COUNT:
        return r->alloc_count;
    case MR_METRIC_END_BYTES:
        return r->end_bytes;
    case MR_METRIC_END_BLOCKS:
        return r->end_blocks;
    }
    return 0;
}
