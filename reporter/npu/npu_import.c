// SPDX-License-Identifier: MIT
// The NPU import: turns an NPU compiler memory-usage log into a capture (heap 2 'npu',
// time unit 'step') through common's capture writer, so every report reads it like a
// native capture. Parsing rules live in npu_parse.c and its siblings; this file only maps the model
// to rows.
#include "messages.h"
#include "npu.h"
#include "output_file.h"

#include "memtrace/capture.h"
#include "memtrace/codec.h"
#include "memtrace/schema.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define CHUNK_EVENTS 4096

// One frame and one root callsite per function: a flame graph shows bytes by function.
static int write_names(mt_capture_writer* w, const mr_npu_log* log) {
    for (size_t i = 0; i < log->nfuncs; i++) {
        int64_t id = (int64_t)i + 1;
        mt_frame_rec f = {.id = id, .pc = (uint64_t)id, .function = log->funcs[i]};
        mt_callsite_rec c = {.id = id, .parent_id = 0, .frame_id = id, .depth = 1};
        if (mt_capture_writer_frame(w, &f) || mt_capture_writer_callsite(w, &c))
            return -EIO;
    }
    return 0;
}

static int write_events(mt_capture_writer* w, const mr_npu_log* log) {
    mt_event* ev = malloc(CHUNK_EVENTS * sizeof *ev);
    uint8_t* scratch = malloc(mt_codec_bound(CHUNK_EVENTS));
    int rc = ev && scratch ? 0 : -ENOMEM;
    size_t n = 0;
    for (size_t i = 0; i < log->nev && !rc; i++) {
        const mr_npu_event* e = &log->ev[i];
        ev[n++] = (mt_event){
            .seq = i + 1,
            .ts = e->step,
            .addr = e->addr,
            .size = e->size,
            .callsite = e->func + 1,
            .tid = 0,
            .kind = e->is_free ? MT_KIND_NPU_FREE : MT_KIND_NPU_ALLOC,
            .heap = MT_HEAP_NPU,
        };
        if (n == CHUNK_EVENTS || i + 1 == log->nev) {
            rc = mt_capture_writer_chunk(w, MT_HEAP_NPU, ev, n, scratch);
            n = 0;
        }
    }
    free(ev);
    free(scratch);
    return rc;
}

static int write_counters(mt_capture_writer* w, int track, const mr_points* p) {
    mt_counter_point block[1024];
    for (size_t i = 0; i < p->n;) {
        size_t n = 0;
        for (; n < sizeof block / sizeof *block && i < p->n; n++, i++)
            block[n] = (mt_counter_point){p->v[i].x, (int64_t)p->v[i].y};
        if (mt_capture_writer_counters(w, track, block, n))
            return -EIO;
    }
    return 0;
}

static int write_marks(mt_capture_writer* w, const mr_npu_log* log) {
    int64_t total = log->max_raw.n ? log->max_raw.v[log->max_raw.n - 1].x + 1 : 0;
    for (size_t i = 0; i < log->nregions; i++) {
        const mr_npu_region* r = &log->regions[i];
        mt_mark_rec m = {.heap = MT_HEAP_NPU,
                         .kind = "range",
                         .name = r->name,
                         .ts_begin = r->start,
                         .has_end = true,
                         .ts_end = i + 1 < log->nregions ? log->regions[i + 1].start : total};
        if (mt_capture_writer_mark(w, &m))
            return -EIO;
    }
    // Every fragmentation line, in timeline order; the plot keeps those that set a new
    // global maximum (docs/npu-memory-usage-log.md §2.5 item 3).
    for (size_t i = 0; i < log->frag.n; i++) {
        char attrs[64];
        snprintf(attrs, sizeof attrs, "{\"bytes\":%llu}", (unsigned long long)log->frag.v[i].y);
        mt_mark_rec m = {.heap = MT_HEAP_NPU,
                         .kind = MR_NPU_MARK_FRAGMENTATION,
                         .name = "fragmentation",
                         .ts_begin = log->frag.v[i].x,
                         .attrs = attrs};
        if (mt_capture_writer_mark(w, &m))
            return -EIO;
    }
    return 0;
}

int mr_npu_write_capture(const char* path, const mr_npu_log* log, const char* source, char* err,
                         size_t errlen) {
    mt_capture_writer* w;
    int rc = mt_capture_writer_open(path, &w, err, errlen);
    if (rc)
        return rc;
    char* abs = realpath(source, NULL);
    // The file is a temporary renamed into place only on success, so it needs no journal:
    // WAL would write every page twice (log, then checkpoint). Counters go in track by
    // track in ts order, so the (track, ts) index only ever appends (cheaper, measured,
    // than dropping it and rebuilding it after the insert).
    rc = mt_capture_writer_no_journal(w) || mt_capture_writer_begin(w) ||
         mt_capture_writer_meta_text(w, "tool_version", "memreport " MEMTRACE_VERSION_STRING) ||
         mt_capture_writer_meta_text(w, "format", log->legacy ? "npu-log-legacy" : "npu-log") ||
         mt_capture_writer_meta_text(w, "source", abs ? abs : source) ||
         mt_capture_writer_meta_int(w, "events_written", (int64_t)log->nev) ||
         mt_capture_writer_meta_int(w, "npu_lines", (int64_t)log->lines) ||
         mt_capture_writer_meta_int(w, "npu_long_lines_skipped", (int64_t)log->long_lines) ||
         mt_capture_writer_meta_int(w, "npu_cmx_events_skipped", (int64_t)log->cmx_events) ||
         mt_capture_writer_meta_text(w, "symbolized", "1") ||
         mt_capture_writer_heap(w, MT_HEAP_NPU, "npu", "npu", "step") ||
         mt_capture_writer_counter_track(w, MT_TRACK_NPU_MAX_ALLOCATED, MT_HEAP_NPU,
                                         "npu max allocated", "bytes") ||
         mt_capture_writer_counter_track(w, MT_TRACK_NPU_USED, MT_HEAP_NPU, "npu used", "bytes") ||
         mt_capture_writer_counter_track(w, MT_TRACK_NPU_FREE, MT_HEAP_NPU, "npu free", "bytes") ||
         write_names(w, log) || write_events(w, log) ||
         write_counters(w, MT_TRACK_NPU_MAX_ALLOCATED, &log->max_raw) ||
         write_counters(w, MT_TRACK_NPU_USED, &log->used) ||
         write_counters(w, MT_TRACK_NPU_FREE, &log->free) || write_marks(w, log) ||
         mt_capture_writer_commit(w);
    free(abs);
    if (rc) {
        snprintf(err, errlen, "cannot write capture: %s", mt_capture_writer_error(w));
        mt_capture_writer_abandon(w);
        return -EIO;
    }
    if (mt_capture_writer_finish(w, "complete")) {
        snprintf(err, errlen, "cannot finish capture");
        return -EIO;
    }
    return 0;
}

int mr_npu_exit_code(int rc) {
    // A directory (or a FIFO, a device) given as the log is bad input, not an I/O failure.
    return rc == -EPROTO || rc == -EISDIR || rc == -ENODEV ? MR_EXIT_BAD_INPUT : MR_EXIT_IO;
}
