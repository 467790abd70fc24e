// SPDX-License-Identifier: MIT
// memreport import: turns an NPU compiler memory-usage log into a capture (heap 2 'npu',
// time unit 'step') through common's capture writer, so every report reads it like a
// native capture. Parsing rules live in import_npu.c; this file only maps the model to rows.
#include "commands.h"
#include "import_npu.h"
#include "util.h"

#include "memtrace/codec.h"
#include "memtrace/schema.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define CHUNK_EVENTS 4096

static const char import_help[] =
    "usage: memreport import LOG [-o CAPTURE] [-f]\n"
    "Imports an NPU compiler memory-usage log (OV_NPU_LOG_LEVEL=LOG_TRACE\n"
    "IE_NPU_LOG_FILTER=\"vpux-compiler|memory-usage-info\") into a capture: one event per\n"
    "'Buffer size to allocate' / 'Free buffer of size' line (time = allocation step), counters\n"
    "for max allocated, used and free memory, function regions and fragmentation flags,\n"
    "read with the rules of upstream's plot_memory_usage.py. The 2025 format without\n"
    "function prefixes is read too.\n"
    "  -o, --output   the capture to write (default: LOG with its extension replaced by .db)\n"
    "  -f, --force    overwrite the capture if it exists\n";

static int exec_sql(sqlite3* db, const char* sql) {
    return sqlite3_exec(db, sql, NULL, NULL, NULL) == SQLITE_OK ? 0 : -EIO;
}

static int write_names(sqlite3* db, const mr_npu_log* log) {
    sqlite3_stmt *fr = NULL, *cs = NULL;
    int rc = -EIO;
    if (sqlite3_prepare_v2(db,
                           "INSERT INTO frame(id, mapping_id, pc, rel_pc, function, relevant)"
                           " VALUES(?1, NULL, ?1, NULL, ?2, 1)",
                           -1, &fr, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(db,
                           "INSERT INTO callsite(id, parent_id, frame_id, depth)"
                           " VALUES(?1, 0, ?1, 1)",
                           -1, &cs, NULL) != SQLITE_OK)
        goto out;
    // One frame and one root callsite per function: a flame graph shows bytes by function.
    for (size_t i = 0; i < log->nfuncs; i++) {
        sqlite3_bind_int64(fr, 1, (int64_t)i + 1);
        sqlite3_bind_text(fr, 2, log->funcs[i], -1, SQLITE_STATIC);
        sqlite3_bind_int64(cs, 1, (int64_t)i + 1);
        if (sqlite3_step(fr) != SQLITE_DONE || sqlite3_step(cs) != SQLITE_DONE)
            goto out;
        sqlite3_reset(fr);
        sqlite3_reset(cs);
    }
    rc = 0;
out:
    sqlite3_finalize(fr);
    sqlite3_finalize(cs);
    return rc;
}

static int write_events(mt_capwriter* w, const mr_npu_log* log) {
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
            rc = mt_capwriter_chunk(w, MT_HEAP_NPU, ev, n, scratch);
            n = 0;
        }
    }
    free(ev);
    free(scratch);
    return rc;
}

// Millions of counter rows: a multi-row INSERT costs one statement execution per
// COUNTER_ROWS points instead of one per point (mt_capwriter_counter takes the remainder).
#define COUNTER_ROWS 128

static int write_counters(mt_capwriter* w, int track, const mr_npu_points* p) {
    char sql[COUNTER_ROWS * 8 + 64];
    size_t k = (size_t)snprintf(sql, sizeof sql, "INSERT INTO counter(track, ts, value) VALUES");
    for (int i = 0; i < COUNTER_ROWS; i++)
        k += (size_t)snprintf(sql + k, sizeof sql - k, "%s(?,?,?)", i ? "," : "");
    sqlite3_stmt* st;
    if (sqlite3_prepare_v2(mt_capwriter_db(w), sql, -1, &st, NULL) != SQLITE_OK)
        return -EIO;
    size_t i = 0;
    for (; i + COUNTER_ROWS <= p->n; i += COUNTER_ROWS) {
        for (int r = 0; r < COUNTER_ROWS; r++) {
            sqlite3_bind_int(st, 3 * r + 1, track);
            sqlite3_bind_int64(st, 3 * r + 2, p->v[i + (size_t)r].x);
            sqlite3_bind_int64(st, 3 * r + 3, (int64_t)p->v[i + (size_t)r].bytes);
        }
        int rc = sqlite3_step(st);
        sqlite3_reset(st);
        if (rc != SQLITE_DONE) {
            sqlite3_finalize(st);
            return -EIO;
        }
    }
    sqlite3_finalize(st);
    for (; i < p->n; i++)
        if (mt_capwriter_counter(w, track, p->v[i].x, (int64_t)p->v[i].bytes))
            return -EIO;
    return 0;
}

static int write_marks(sqlite3* db, const mr_npu_log* log) {
    sqlite3_stmt* st;
    if (sqlite3_prepare_v2(db,
                           "INSERT INTO mark(heap, kind, name, ts_begin, ts_end, tid, attrs)"
                           " VALUES(?1, ?2, ?3, ?4, ?5, NULL, ?6)",
                           -1, &st, NULL) != SQLITE_OK)
        return -EIO;
    int64_t total = log->max_raw.n ? log->max_raw.v[log->max_raw.n - 1].x + 1 : 0;
    int rc = 0;
    for (size_t i = 0; i < log->nregions && !rc; i++) {
        const mr_npu_region* r = &log->regions[i];
        int64_t end = i + 1 < log->nregions ? log->regions[i + 1].start : total;
        sqlite3_bind_int(st, 1, MT_HEAP_NPU);
        sqlite3_bind_text(st, 2, "range", -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 3, r->name, -1, SQLITE_STATIC);
        sqlite3_bind_int64(st, 4, r->start);
        sqlite3_bind_int64(st, 5, end);
        sqlite3_bind_null(st, 6);
        rc = sqlite3_step(st) == SQLITE_DONE ? 0 : -EIO;
        sqlite3_reset(st);
    }
    // Every fragmentation line, in timeline order; the plot keeps those that set a new
    // global maximum (docs/npu-memory-usage-log.md §2.5 item 3).
    for (size_t i = 0; i < log->frag.n && !rc; i++) {
        char attrs[64];
        snprintf(attrs, sizeof attrs, "{\"bytes\":%llu}", (unsigned long long)log->frag.v[i].bytes);
        sqlite3_bind_int(st, 1, MT_HEAP_NPU);
        sqlite3_bind_text(st, 2, MR_NPU_MARK_FRAGMENTATION, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 3, "fragmentation", -1, SQLITE_STATIC);
        sqlite3_bind_int64(st, 4, log->frag.v[i].x);
        sqlite3_bind_null(st, 5);
        sqlite3_bind_text(st, 6, attrs, -1, SQLITE_TRANSIENT);
        rc = sqlite3_step(st) == SQLITE_DONE ? 0 : -EIO;
        sqlite3_reset(st);
    }
    sqlite3_finalize(st);
    return rc;
}

int mr_npu_write_capture(const char* path, const mr_npu_log* log, const char* source, char* err,
                         size_t errlen) {
    mt_capwriter* w;
    int rc = mt_capwriter_open(path, &w, err, errlen);
    if (rc)
        return rc;
    sqlite3* db = mt_capwriter_db(w);
    char* abs = realpath(source, NULL);
    // The file is a temporary renamed into place only on success, so it needs no journal:
    // WAL would write every page twice (log, then checkpoint). Counters go in track by
    // track in ts order, so the (track, ts) index only ever appends (cheaper, measured,
    // than dropping it and rebuilding it after the insert).
    rc = exec_sql(db, "PRAGMA journal_mode=OFF") || mt_capwriter_begin(w) ||
         mt_capwriter_meta_text(w, "tool_version", "memreport " MEMTRACE_VERSION_STRING) ||
         mt_capwriter_meta_text(w, "format", log->legacy ? "npu-log-legacy" : "npu-log") ||
         mt_capwriter_meta_text(w, "source", abs ? abs : source) ||
         mt_capwriter_meta_int(w, "events_written", (int64_t)log->nev) ||
         mt_capwriter_meta_int(w, "npu_lines", (int64_t)log->lines) ||
         mt_capwriter_meta_int(w, "npu_long_lines_skipped", (int64_t)log->long_lines) ||
         mt_capwriter_meta_int(w, "npu_cmx_events_skipped", (int64_t)log->cmx_events) ||
         mt_capwriter_meta_text(w, "symbolized", "1") ||
         mt_capwriter_heap(w, MT_HEAP_NPU, "npu", "npu", "step") ||
         mt_capwriter_counter_track(w, MT_TRACK_NPU_MAX_ALLOCATED, MT_HEAP_NPU, "npu max allocated",
                                    "bytes") ||
         mt_capwriter_counter_track(w, MT_TRACK_NPU_USED, MT_HEAP_NPU, "npu used", "bytes") ||
         mt_capwriter_counter_track(w, MT_TRACK_NPU_FREE, MT_HEAP_NPU, "npu free", "bytes") ||
         write_names(db, log) || write_events(w, log) ||
         write_counters(w, MT_TRACK_NPU_MAX_ALLOCATED, &log->max_raw) ||
         write_counters(w, MT_TRACK_NPU_USED, &log->used) ||
         write_counters(w, MT_TRACK_NPU_FREE, &log->free) || write_marks(db, log) ||
         mt_capwriter_commit(w);
    free(abs);
    if (rc) {
        snprintf(err, errlen, "cannot write capture: %s", mt_capwriter_error(w));
        mt_capwriter_abandon(w);
        return -EIO;
    }
    if (mt_capwriter_finish(w, "complete")) {
        snprintf(err, errlen, "cannot finish capture");
        return -EIO;
    }
    return 0;
}

int mr_npu_exit_code(int rc) {
    // A directory given as the log is bad input, not an I/O failure.
    return rc == -EPROTO || rc == -EISDIR ? MR_EXIT_BAD_INPUT : MR_EXIT_IO;
}

static void remove_sidecars(const char* path) {
    char buf[PATH_MAX + 16];
    snprintf(buf, sizeof buf, "%s-wal", path);
    unlink(buf);
    snprintf(buf, sizeof buf, "%s-shm", path);
    unlink(buf);
    snprintf(buf, sizeof buf, "%s-journal", path);
    unlink(buf);
}

int mr_cmd_import(int argc, char** argv) {
    static const struct option opts[] = {{"output", required_argument, NULL, 'o'},
                                         {"force", no_argument, NULL, 'f'},
                                         {"help", no_argument, NULL, 'h'},
                                         {NULL, 0, NULL, 0}};
    const char* output = NULL;
    bool force = false;
    int c;
    while ((c = getopt_long(argc, argv, "o:fh", opts, NULL)) != -1) {
        switch (c) {
        case 'o':
            output = optarg;
            break;
        case 'f':
            force = true;
            break;
        case 'h':
            fputs(import_help, stdout);
            return MR_EXIT_OK;
        default: // getopt said what is wrong
            mr_usage_hint(import_help);
            return MR_EXIT_USAGE;
        }
    }
    const char* path = mr_opts_input(argc, argv, import_help);
    if (!path)
        return MR_EXIT_USAGE;
    struct stat st;
    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
        mr_error(path, "is a directory, not an NPU log");
        return MR_EXIT_BAD_INPUT;
    }
    char* def = output ? NULL : mr_path_with_ext(path, ".db");
    if (!output && !(output = def)) {
        mr_error(path, "out of memory");
        return MR_EXIT_IO;
    }
    if (strcmp(output, "-") == 0 || strcmp(output, path) == 0) {
        mr_error(output, "cannot write the capture over the log or to stdout");
        free(def);
        return MR_EXIT_USAGE;
    }
    // The output first: a refused or unwritable output fails before minutes of parsing.
    // mr_output gives the temporary name and the refuse-or-force check; SQLite then writes
    // the file at that name (replacing the empty placeholder) and commit renames it.
    mr_output out;
    int xrc = mr_output_open(&out, output, force);
    if (xrc) {
        free(def);
        return xrc;
    }
    char err[512];
    mr_npu_log log;
    int rc = mr_npu_parse_file(path, true, &log, err, sizeof err);
    if (rc) {
        mr_error(path, "%s", err);
        mr_output_abort(&out);
        free(def);
        return mr_npu_exit_code(rc);
    }
    rc = mr_npu_write_capture(out.tmp, &log, path, err, sizeof err);
    if (rc) {
        mr_error(output, "%s", err);
        remove_sidecars(out.tmp);
        mr_output_abort(&out);
        xrc = MR_EXIT_IO;
    } else {
        xrc = mr_output_commit(&out);
    }
    mr_npu_log_free(&log);
    free(def);
    return xrc;
}
