// SPDX-License-Identifier: MIT
// Which heap a report shows, and how far a capture reaches in time.
#include "extent.h"

#include "memtrace/schema.h"
#include "memtrace/units.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// Counts the libc heaps, the heaps of id MT_HEAP_NPU that are NPU heaps, and the heaps
// read with libc's as the program's (python, pool).
typedef struct heap_census {
    int libc, npu, program;
} heap_census;

static int count_heap(void* ud, const mt_heap_rec* h) {
    heap_census* c = ud;
    c->libc += h->id == MT_HEAP_LIBC;
    c->npu += h->id == MT_HEAP_NPU && h->kind && !strcmp(h->kind, "npu");
    c->program += h->id == MT_HEAP_PYTHON || h->id == MT_HEAP_POOL;
    return 0;
}

typedef struct heap_lookup {
    const char* name;
    int id;
} heap_lookup;

static int match_heap(void* ud, const mt_heap_rec* h) {
    heap_lookup* l = ud;
    if (!l->id && h->name && !strcmp(h->name, l->name))
        l->id = h->id;
    return 0;
}

int mr_extent_heap_named(mt_capture* cap, const char* name) {
    heap_lookup l = {name, 0};
    return mt_capture_heaps(cap, match_heap, &l) == 0 ? l.id : 0;
}

typedef struct heap_by_id {
    int id;
    bool found;
    char* name;
} heap_by_id;

static int find_id(void* ud, const mt_heap_rec* h) {
    heap_by_id* l = ud;
    if (h->id == l->id && !l->found) {
        l->found = true;
        l->name = h->name ? strdup(h->name) : NULL;
    }
    return 0;
}

char* mr_extent_heap_name(mt_capture* cap, int id) {
    heap_by_id l = {id, false, NULL};
    if (mt_capture_heaps(cap, find_id, &l)) {
        free(l.name);
        return NULL;
    }
    return l.name;
}

bool mr_extent_has_heap(mt_capture* cap, int id) {
    heap_by_id l = {id, false, NULL};
    int rc = mt_capture_heaps(cap, find_id, &l);
    free(l.name);
    return rc == 0 && l.found;
}

static const char* wanted_heap; // --heap NAME

void mr_extent_want_heap(const char* name) {
    wanted_heap = name;
}

const char* mr_extent_wanted_heap(void) {
    return wanted_heap;
}

int mr_extent_default_heap(mt_capture* cap) {
    int wanted = wanted_heap ? mr_extent_heap_named(cap, wanted_heap) : 0;
    if (wanted)
        return wanted;
    // A python process: its objects are in heap python, the rest in libc's; a program's own
    // pool (memtrace.h) in heap pool. The program's heaps together.
    heap_census c = {0, 0, 0};
    int rc = mt_capture_heaps(cap, count_heap, &c);
    if (!wanted_heap && rc == 0 && c.libc && c.program)
        return MT_HEAP_PROGRAM;
    if (rc == 0 && c.libc == 0 && c.npu == 1)
        return MT_HEAP_NPU;
    return MT_HEAP_LIBC;
}

mr_extent mr_extent_of(mt_capture* cap, int heap) {
    mt_heap_span span;
    int64_t last_event = mt_capture_heap_span(cap, heap, &span) == 1 ? span.last_ts : -1;
    if (heap == MT_HEAP_NPU) {
        // Upstream's count (the plot's x axis): the last max-allocated step, plus one.
        int64_t last;
        if (mt_capture_counter_end(cap, MT_TRACK_NPU_MAX_ALLOCATED, &last) != 1 || last < 0)
            last = last_event;
        return (mr_extent){last + 1, true};
    }
    // The recorded duration; a capture cut short has none, its last event ends it.
    int64_t d = mt_capture_meta_int(cap, "duration_ns", -1);
    return (mr_extent){d > last_event ? d : last_event > 0 ? last_event : 0, false};
}

char* mr_extent_format_time(int64_t t, bool steps, char* buf, size_t len) {
    if (steps)
        snprintf(buf, len, "step %lld", (long long)t);
    else
        mt_units_format_duration(t, buf, len);
    return buf;
}
