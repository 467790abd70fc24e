// SPDX-License-Identifier: MIT
// speedscope's JSON file format (its schema: file-format-schema.json in the speedscope npm
// package): one "sampled" profile per metric (live bytes at the moment, bytes allocated and
// allocations in the range), each sample a callsite's stack as frame indexes root first,
// weighted by the metric. Frames are shared: one per source location (function, file,
// line), as memray's flame graph shows them. The file is streamed (a capture may have
// hundreds of thousands of callsites); jansson only encodes the strings, which are bytes
// from the traced program (escape.h).
#include "escape.h"
#include "export.h"
#include "json.h"
#include "u64map.h"

#include "memtrace/units.h"
#include "memtrace/vec.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

// The speedscope frames: every location used by a stack, deduplicated by content.
typedef struct frame_table {
    const mr_symloc** locs; // one per distinct location pointer, sorted by content
    size_t n, cap;
    mr_u64map index;  // location pointer -> frame index
    uint64_t nframes; // distinct locations
    bool no_stack;    // a sample has no frames: frame nframes is "(no stack)"
    bool oom;         // a string could not be encoded
} frame_table;

static const mr_symloc* stack_buf[MR_EXPORT_MAX_LOCS];

static bool row_used(const mr_profile_row* r) {
    return r->live_bytes || r->alloc_bytes || r->alloc_count;
}

static int cmp_str(const char* a, const char* b) {
    return strcmp(a ? a : "", b ? b : "");
}

static int by_content(const void* a, const void* b) {
    const mr_symloc *x = *(const mr_symloc*const*)a, *y = *(const mr_symloc*const*)b;
    int c = cmp_str(x->function, y->function);
    if (!c)
        c = cmp_str(x->file, y->file);
    return c ? c : (x->line > y->line) - (x->line < y->line);
}

static int collect_frames(const mr_export_input* in, frame_table* t) {
    if (mr_u64map_init(&t->index))
        return -ENOMEM;
    for (size_t i = 0; i < in->prof->nrows; i++) {
        if (!row_used(&in->prof->rows[i]))
            continue;
        size_t n =
            mr_export_stack_locs(in, in->prof->rows[i].callsite, stack_buf, MR_EXPORT_MAX_LOCS);
        t->no_stack |= n == 0;
        for (size_t k = 0; k < n; k++) {
            uint64_t key = (uint64_t)(uintptr_t)stack_buf[k];
            if (mr_u64map_get(&t->index, key))
                continue;
            if (mr_u64map_put(&t->index, key, 0) ||
                mt_vec_grow(&t->locs, &t->cap, t->n + 1, sizeof *t->locs))
                return -ENOMEM;
            t->locs[t->n++] = stack_buf[k];
        }
    }
    // Sorted by content, equal locations of different frames share one index.
    if (t->n > 1) // qsort must never see the NULL of an empty vector
        qsort(t->locs, t->n, sizeof *t->locs, by_content);
    uint64_t next = 0;
    for (size_t i = 0; i < t->n; i++) {
        if (i && by_content(&t->locs[i - 1], &t->locs[i]))
            next++;
        *mr_u64map_get(&t->index, (uint64_t)(uintptr_t)t->locs[i]) = next;
    }
    t->nframes = t->n ? next + 1 : 0;
    return 0;
}

static void put_string(FILE* out, frame_table* t, const char* s) {
    json_t* j = mr_json_bytes(s);
    if (!j || json_dumpf(j, out, JSON_ENCODE_ANY))
        t->oom = true;
    json_decref(j);
}

static void write_frames(FILE* out, frame_table* t) {
    fputs("\"shared\":{\"frames\":[", out);
    bool first = true;
    for (size_t i = 0; i < t->n; i++) {
        if (i && !by_content(&t->locs[i - 1], &t->locs[i]))
            continue;
        const mr_symloc* l = t->locs[i];
        fputs(first ? "\n{\"name\":" : ",\n{\"name\":", out);
        put_string(out, t, l->function);
        if (l->file) {
            fputs(",\"file\":", out);
            put_string(out, t, l->file);
            if (l->line > 0)
                fprintf(out, ",\"line\":%d", l->line);
        }
        fputc('}', out);
        first = false;
    }
    if (t->no_stack)
        fputs(first ? "\n{\"name\":\"(no stack)\"}" : ",\n{\"name\":\"(no stack)\"}", out);
    fputs("]}", out);
}

// "12.5 ms", or "step 12" for an imported NPU log.
static char* format_time(const mr_export_input* in, int64_t t, char* buf, size_t len) {
    if (in->steps)
        snprintf(buf, len, "step %" PRId64, t);
    else
        mt_units_format_duration(t, buf, len);
    return buf;
}

// What a profile holds, in words: "live bytes at the peak (12.5 ms)", "bytes allocated
// from 1 s to 2 s", with the thread when one is chosen.
static void profile_name(const mr_export_input* in, mr_metric m, char* buf, size_t len) {
    const mr_query* q = in->query;
    char a[48], b[48];
    size_t n;
    if (m == MR_METRIC_LIVE_BYTES) {
        if (in->joint_peak) // several processes, on one axis
            n = (size_t)snprintf(buf, len,
                                 "live bytes at the processes' joint peak (%s from the first "
                                 "start)",
                                 format_time(in, in->joint_ts, a, sizeof a));
        else if (q->moment == MR_AT_PEAK)
            n = (size_t)snprintf(buf, len, "live bytes at the peak (%s)",
                                 format_time(in, in->prof->moment_ts, a, sizeof a));
        else if (q->moment == MR_AT_TIME)
            n = (size_t)snprintf(buf, len, "live bytes at %s",
                                 format_time(in, in->prof->moment_ts, a, sizeof a));
        else
            n = (size_t)snprintf(buf, len, "live bytes at the end (leaks)");
    } else {
        const char* what = m == MR_METRIC_ALLOC_BYTES ? "bytes allocated" : "allocations";
        if (q->from == INT64_MIN && q->to == INT64_MAX)
            n = (size_t)snprintf(buf, len, "%s (whole run)", what);
        else if (q->to == INT64_MAX)
            n = (size_t)snprintf(buf, len, "%s from %s", what,
                                 format_time(in, q->from, a, sizeof a));
        else if (q->from == INT64_MIN)
            n = (size_t)snprintf(buf, len, "%s until %s", what,
                                 format_time(in, q->to, a, sizeof a));
        else
            n = (size_t)snprintf(buf, len, "%s from %s to %s", what,
                                 format_time(in, q->from, a, sizeof a),
                                 format_time(in, q->to, b, sizeof b));
    }
    if (q->tid && n < len)
        snprintf(buf + n, len - n, ", thread %" PRIu32, q->tid);
}

static void write_profile(FILE* out, const mr_export_input* in, frame_table* t, mr_metric m) {
    char name[256];
    profile_name(in, m, name, sizeof name);
    uint64_t total = 0;
    for (size_t i = 0; i < in->prof->nrows; i++)
        total += mr_profile_row_value(&in->prof->rows[i], m);
    fputs("\n{\"type\":\"sampled\",\"name\":", out);
    put_string(out, t, name);
    fprintf(out, ",\"unit\":\"%s\",\"startValue\":0,\"endValue\":%" PRIu64 ",\"samples\":[",
            m == MR_METRIC_ALLOC_COUNT ? "none" : "bytes", total);
    bool first = true;
    for (size_t i = 0; i < in->prof->nrows; i++) {
        if (!mr_profile_row_value(&in->prof->rows[i], m))
            continue;
        size_t n =
            mr_export_stack_locs(in, in->prof->rows[i].callsite, stack_buf, MR_EXPORT_MAX_LOCS);
        fputs(first ? "\n[" : ",\n[", out);
        for (size_t k = 0; k < n; k++) {
            uint64_t* idx = mr_u64map_get(&t->index, (uint64_t)(uintptr_t)stack_buf[k]);
            fprintf(out, k ? ",%" PRIu64 : "%" PRIu64, *idx);
        }
        if (n == 0)
            fprintf(out, "%" PRIu64, t->nframes);
        fputc(']', out);
        first = false;
    }
    fputs("],\"weights\":[", out);
    first = true;
    for (size_t i = 0; i < in->prof->nrows; i++) {
        uint64_t v = mr_profile_row_value(&in->prof->rows[i], m);
        if (!v)
            continue;
        fprintf(out, first ? "%" PRIu64 : ",%" PRIu64, v);
        first = false;
    }
    fputs("]}", out);
}

int mr_export_speedscope(FILE* out, const mr_export_input* in, char* err, size_t errlen) {
    frame_table t = {0};
    int rc = collect_frames(in, &t);
    if (rc == 0) {
        static const mr_metric metrics[] = {MR_METRIC_LIVE_BYTES, MR_METRIC_ALLOC_BYTES,
                                            MR_METRIC_ALLOC_COUNT};
        size_t active = 0;
        for (size_t i = 0; i < sizeof metrics / sizeof *metrics; i++)
            if (metrics[i] == in->metric)
                active = i;
        fputs("{\"$schema\":\"https://www.speedscope.app/file-format-schema.json\",", out);
        fprintf(out, "\"exporter\":\"memreport %s\",\"name\":", MEMTRACE_VERSION_STRING);
        put_string(out, &t, in->path);
        fprintf(out, ",\"activeProfileIndex\":%zu,\n", active);
        write_frames(out, &t);
        fputs(",\"profiles\":[", out);
        for (size_t i = 0; i < sizeof metrics / sizeof *metrics; i++) {
            if (i)
                fputc(',', out);
            write_profile(out, in, &t, metrics[i]);
        }
        fputs("]}\n", out);
        if (ferror(out))
            rc = -EIO;
        else if (t.oom)
            rc = -ENOMEM;
    }
    free(t.locs);
    mr_u64map_free(&t.index);
    if (rc)
        snprintf(err, errlen, "%s", rc == -ENOMEM ? "out of memory" : "write error");
    return rc;
}
