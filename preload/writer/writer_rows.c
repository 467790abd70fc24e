// SPDX-License-Identifier: MIT
// The writer thread's rows besides events and marks (see writer_rows.h).
#include "writer_rows.h"

#include "core.h"
#include "maps.h"
#include "python_frames.h"
#include "trie.h"
#include "writer.h"

#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define ROW_BATCH 4096

static void json_escape_append(char* out, size_t cap, size_t* n, const char* s, size_t len) {
    for (size_t i = 0; i < len && *n + 8 < cap; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '"' || c == '\\') {
            out[(*n)++] = '\\';
            out[(*n)++] = (char)c;
        } else if (c < 0x20) {
            *n += (size_t)snprintf(out + *n, cap - *n, "\\u%04x", c);
        } else {
            out[(*n)++] = (char)c;
        }
    }
}

// /proc/self/cmdline as a JSON array of strings.
void mt_writer_rows_cmdline_json(char* out, size_t cap) {
    // Not on the stack: this runs in the constructor, on the program's main thread, whose
    // stack may be small (ulimit -s 32 KiB overflowed). Captures start one at a time.
    static char buf[16384];
    size_t n = 0, len = 0;
    int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
        ssize_t r;
        while (len < sizeof buf && (r = read(fd, buf + len, sizeof buf - len)) > 0)
            len += (size_t)r;
        close(fd);
    }
    out[n++] = '[';
    // An argument is begun only with room for its separator, quotes, some of it (as much as
    // fits: json_escape_append) and the closing "]": the rest are left out (thousands of
    // short arguments fill it; each added ',""' past the end).
    for (size_t i = 0; i < len && n + 16 < cap;) {
        size_t k = strnlen(buf + i, len - i);
        if (n > 1)
            out[n++] = ',';
        out[n++] = '"';
        json_escape_append(out, cap - 3, &n, buf + i, k);
        out[n++] = '"';
        i += k + 1;
    }
    out[n++] = ']';
    out[n] = 0;
}

static mt_capture_writer* python_said; // the capture meta `python` was written to
static uint64_t failed_said;

void mt_writer_rows_stacks(mt_capture_writer* cw) {
    static mt_frame_row frames[ROW_BATCH];
    static mt_callsite_row sites[ROW_BATCH];
    size_t n;
    const char* python = mt_python_frames_status();
    if (python && python_said != cw) {
        python_said = cw;
        if (mt_capture_writer_meta_text(cw, "python", python))
            mt_writer_fail_sqlite("cannot write meta");
    }
    uint64_t failed = mt_python_frames_failed();
    if (failed != failed_said) {
        failed_said = failed;
        mt_capture_writer_meta_int(cw, "python_walks_failed", (int64_t)failed);
    }
    // Callsites first: in a fork child they queue the frames they stand at (trie.h).
    while ((n = mt_trie_drain_callsites(sites, ROW_BATCH)) > 0) {
        for (size_t i = 0; i < n; i++) {
            mt_callsite_rec c = {.id = sites[i].id,
                                 .parent_id = sites[i].parent,
                                 .frame_id = sites[i].frame,
                                 .depth = sites[i].depth};
            if (mt_capture_writer_callsite(cw, &c))
                mt_writer_fail_sqlite("cannot write callsites");
        }
    }
    while ((n = mt_trie_drain_frames(frames, ROW_BATCH)) > 0) {
        for (size_t i = 0; i < n; i++) {
            mt_frame_rec f = {.id = frames[i].id,
                              .mapping_id = frames[i].mapping,
                              .pc = frames[i].pc,
                              .has_rel_pc = true,
                              .rel_pc = frames[i].rel_pc};
            // A Python frame comes named: the symbolizer leaves it as it is.
            mt_python_frames_name(frames[i].pc, &f.function, &f.file, &f.line);
            if (mt_capture_writer_frame(cw, &f))
                mt_writer_fail_sqlite("cannot write frames");
        }
    }
}

static void write_mapping(const mt_mapping* m, void* ud) {
    mt_capture_writer* cw = ud;
    mt_mapping_rec r = {.id = m->id,
                        .path = m->path,
                        .start = m->start,
                        .end = m->end,
                        .load_bias = m->bias,
                        .build_id = m->build_id,
                        .ts_loaded = m->ts_loaded,
                        .ts_unloaded = m->ts_unloaded};
    if (mt_capture_writer_mapping(cw, &r))
        mt_writer_fail_sqlite("cannot write mappings");
}

void mt_writer_rows_mappings(mt_capture_writer* cw) {
    mt_maps_drain(write_mapping, cw);
}

void mt_writer_rows_threads(mt_capture_writer* cw) {
    for (mt_thread* t = mt_core_threads(); t; t = t->next) {
        if (atomic_load_explicit(&t->reusable, memory_order_acquire))
            continue;
        // A gone thread's row is written again, with the name it had at exit.
        bool gone = atomic_load_explicit(&t->ending, memory_order_acquire) == MT_THREAD_GONE;
        if (atomic_load(&t->written) && !gone)
            continue;
        char path[64], name[64] = "";
        snprintf(path, sizeof path, "/proc/self/task/%u/comm", t->tid);
        bool alive = !gone && atomic_load(&t->alive);
        int fd = alive ? open(path, O_RDONLY | O_CLOEXEC) : -1;
        if (!alive)
            snprintf(name, sizeof name, "%.15s", t->name);
        if (fd >= 0) {
            ssize_t r = read(fd, name, sizeof name - 1);
            close(fd);
            name[r > 0 ? r : 0] = 0;
            name[strcspn(name, "\n")] = 0;
        }
        if (mt_capture_writer_thread(cw, t->tid, name))
            mt_writer_fail_sqlite("cannot write threads");
        atomic_store(&t->written, 1);
    }
}

void mt_writer_rows_retire_gone(void) {
    for (mt_thread* t = mt_core_threads(); t; t = t->next)
        if (!atomic_load_explicit(&t->reusable, memory_order_acquire) &&
            atomic_load_explicit(&t->ending, memory_order_acquire) == MT_THREAD_GONE &&
            atomic_load(&t->written))
            mt_core_retire(t);
}

void mt_writer_rows_rewrite_all(void) {
    for (mt_thread* t = mt_core_threads(); t; t = t->next)
        if (!atomic_load(&t->reusable))
            atomic_store(&t->written, 0);
    mt_trie_rewrite_all();
    mt_maps_rewrite_all();
    python_said = NULL;
    failed_said = 0;
}

void mt_writer_rows_call_counts(mt_capture_writer* cw) {
    uint64_t total[MT_CALL_COUNT_], lost;
    mt_core_call_totals(total, &lost);
    // Heap calls of signal handlers nested deeper than the side queue holds (core.h).
    if (lost)
        mt_capture_writer_meta_int(cw, "events_lost", (int64_t)lost);
    for (int k = 0; k < MT_CALL_COUNT_; k++)
        if (mt_capture_writer_call_count(cw, mt_call_names[k], (int64_t)total[k]))
            mt_writer_fail_sqlite("cannot write call counts");
}
