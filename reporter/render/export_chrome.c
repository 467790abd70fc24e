// SPDX-License-Identifier: MIT
// Chrome's trace-event JSON ({"traceEvents":[...]}; chrome://tracing, Perfetto's UI,
// speedscope): counter tracks ("C" events) of the heap's live bytes, of RSS and VSZ (and the
// NPU counters of an imported log) from the capture's counter table, and the marks as
// instant ("i") events and ranges as complete ("X") events, times in microseconds (one
// allocation step reads as one microsecond for an NPU log). A long run's heap track is
// thinned to a few thousand intervals, each keeping its highest point and its last, so the
// peak is always exact.
#include "escape.h"
#include "export.h"
#include "extent.h"
#include "json.h"
#include "replay.h"

#include "memtrace/schema.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#define HEAP_INTERVALS 5000

typedef struct chrome {
    FILE* out;
    const mr_export_input* in;
    mt_capture* cap; // the process being written (several: each in turn)
    int heap;
    int64_t shift; // ns from the first process's start to this one's (several), else 0
    int64_t pid;
    bool first; // no event written yet (commas go between events)
    // The heap track: live bytes of the selected thread(s) and the current interval.
    uint64_t live;
    int64_t interval_ns, interval_end;
    uint64_t max_live;
    int64_t max_ts, last_ts;
    bool pending; // the current interval has points not written yet
} chrome;

static bool in_range(const chrome* c, int64_t ts) {
    return ts >= c->in->query->from && ts <= c->in->query->to;
}

// A string as JSON (bytes that are not UTF-8 read as \xNN).
static int put_string(FILE* out, const char* s) {
    json_t* j = mr_json_bytes(s);
    char* text = j ? json_dumps(j, JSON_ENCODE_ANY) : NULL;
    json_decref(j);
    if (!text)
        return -ENOMEM;
    fputs(text, out);
    free(text);
    return 0;
}

static void begin_event(chrome* c) {
    fputs(c->first ? "\n" : ",\n", c->out);
    c->first = false;
}

static void put_ts(chrome* c, int64_t ts) {
    if (c->in->steps)
        fprintf(c->out, "%" PRId64, ts);
    else
        fprintf(c->out, "%" PRId64 ".%03d", ts / 1000, (int)(ts % 1000));
}

static void put_counter(chrome* c, const char* name, int64_t ts, int64_t value) {
    begin_event(c);
    fprintf(c->out, "{\"name\":\"%s\",\"ph\":\"C\",\"pid\":%" PRId64 ",\"tid\":0,\"ts\":", name,
            c->pid);
    put_ts(c, ts + c->shift);
    fprintf(c->out, ",\"args\":{\"bytes\":%" PRId64 "}}", value);
}

// ---- the heap track

// Writes the interval's highest point, then its last one when it differs.
static void flush_interval(chrome* c) {
    if (!c->pending)
        return;
    put_counter(c, "heap", c->max_ts, (int64_t)c->max_live);
    if (c->last_ts != c->max_ts)
        put_counter(c, "heap", c->last_ts, (int64_t)c->live);
    c->pending = false;
}

static int on_event(mr_replay* r, const mt_event* ev, const mr_block* freed, void* ud) {
    chrome* c = ud;
    uint32_t tid = c->in->query->tid;
    if (mt_kind_is_alloc(ev->kind) && (!tid || ev->tid == tid))
        c->live += ev->size;
    else if (freed && (!tid || freed->tid == tid))
        c->live -= freed->size;
    else
        return 0;
    (void)r;
    if (!in_range(c, ev->ts))
        return 0;
    if (c->pending && ev->ts >= c->interval_end)
        flush_interval(c);
    if (!c->pending) {
        c->interval_end = ev->ts + c->interval_ns;
        c->max_live = c->live;
        c->max_ts = ev->ts;
        c->pending = true;
    } else if (c->live > c->max_live) {
        c->max_live = c->live;
        c->max_ts = ev->ts;
    }
    c->last_ts = ev->ts;
    if (c->interval_ns == 0)
        flush_interval(c); // a short run: every event is a point
    return 0;
}

// One replay of its own: the track needs no per-callsite model (the command builds none).
static int put_heap(chrome* c, char* err, size_t errlen) {
    mt_heap_span span;
    if (mt_capture_heap_span(c->cap, c->heap, &span) < 0) {
        snprintf(err, errlen, "%s", mt_capture_error(c->cap));
        return -EPROTO;
    }
    int64_t length = span.last_ts - span.first_ts;
    c->interval_ns = span.events > 4 * HEAP_INTERVALS ? length / HEAP_INTERVALS : 0;
    mr_replay r;
    int rc = mr_replay_init(&r, c->cap, c->heap);
    r.pipelined = true; // on_event reads no block of the table
    if (!rc)
        rc = mr_replay_run(&r, UINT64_MAX, on_event, c);
    if (rc)
        snprintf(err, errlen, "%s", r.err);
    mr_replay_free(&r);
    flush_interval(c);
    return rc;
}

// ---- counters, marks, names

static const struct {
    int track;
    const char* name;
} tracks[] = {{MT_TRACK_RSS, "RSS"},
              {MT_TRACK_VSZ, "VSZ"},
              {MT_TRACK_NPU_MAX_ALLOCATED, "NPU max allocated"},
              {MT_TRACK_NPU_USED, "NPU used"},
              {MT_TRACK_NPU_FREE, "NPU free"}};

typedef struct counter_ctx {
    chrome* c;
    const char* name;
} counter_ctx;

static int on_counter(void* ud, int track, int64_t ts, int64_t value) {
    counter_ctx* k = ud;
    (void)track;
    if (in_range(k->c, ts))
        put_counter(k->c, k->name, ts, value);
    return 0;
}

static int on_mark(void* ud, const mt_mark_rec* m) {
    chrome* c = ud;
    int64_t tid = m->has_tid ? m->tid : 0;
    uint32_t want = c->in->query->tid;
    if ((want && tid != want) || !in_range(c, m->ts_begin))
        return 0;
    // The kind decides: the tracer stores a point mark with its end equal to its start.
    bool range = m->kind && !strcmp(m->kind, "range");
    begin_event(c);
    fputs("{\"name\":", c->out);
    if (put_string(c->out, m->name))
        return -ENOMEM;
    fprintf(c->out, ",\"cat\":\"%s\",\"ph\":\"%s\",\"pid\":%" PRId64 ",\"tid\":%" PRId64 ",\"ts\":",
            range ? "range" : "mark",
            !range       ? "i"
            : m->has_end ? "X"
                         : "B",
            c->pid, tid);
    put_ts(c, m->ts_begin + c->shift);
    if (range && m->has_end) {
        fputs(",\"dur\":", c->out);
        put_ts(c, m->ts_end - m->ts_begin);
    }
    if (!range)
        fprintf(c->out, ",\"s\":\"%s\"", tid ? "t" : "p");
    fputs("}", c->out);
    return 0;
}

static void on_thread(void* ud, int64_t tid, const char* name) {
    chrome* c = ud;
    begin_event(c);
    fprintf(c->out,
            "{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":%" PRId64 ",\"tid\":%" PRId64
            ",\"args\":{\"name\":",
            c->pid, tid);
    put_string(c->out, name);
    fputs("}}", c->out);
}

static int put_names(chrome* c) {
    char* exe = mt_capture_meta_text(c->cap, "exe");
    const char* base = exe ? strrchr(exe, '/') : NULL;
    begin_event(c);
    fprintf(
        c->out,
        "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":%" PRId64 ",\"args\":{\"name\":", c->pid);
    int rc = put_string(c->out, base ? base + 1 : exe ? exe : "memtrace capture");
    fputs("}}", c->out);
    free(exe);
    return rc ? rc : mt_capture_threads(c->cap, on_thread, c);
}

// One process: its names, counter tracks, marks and heap track, under its pid.
static int put_process(chrome* c, char* err, size_t errlen) {
    c->pid = mt_capture_meta_int(c->cap, "pid", 0);
    c->live = 0;
    c->pending = false;
    int rc = put_names(c);
    for (size_t i = 0; i < sizeof tracks / sizeof *tracks && !rc; i++) {
        counter_ctx k = {c, tracks[i].name};
        rc = mt_capture_counters(c->cap, tracks[i].track, on_counter, &k);
    }
    mt_mark_query mq = {.heap = c->heap, .by_time = true};
    if (!rc)
        rc = mt_capture_marks(c->cap, &mq, on_mark, c);
    if (rc == -EPROTO)
        snprintf(err, errlen, "%s", mt_capture_error(c->cap));
    if (!rc)
        rc = put_heap(c, err, errlen);
    return rc;
}

int mr_export_chrome(FILE* out, const mr_export_input* in, char* err, size_t errlen) {
    chrome c = {.out = out, .in = in, .first = true, .cap = in->cap, .heap = in->query->heap};
    fputs("{\"displayTimeUnit\":\"ms\",\"traceEvents\":[", out);
    int rc = 0;
    if (!in->nprocs)
        rc = put_process(&c, err, errlen);
    for (size_t i = 0; !rc && i < in->nprocs; i++) { // each process under its pid
        c.cap = in->procs[i].cap;
        c.heap = mr_extent_default_heap(c.cap);
        c.shift = in->procs[i].offset;
        rc = put_process(&c, err, errlen);
    }
    fputs("\n]}\n", out);
    if (rc == -ENOMEM)
        snprintf(err, errlen, "out of memory");
    return rc;
}
