// SPDX-License-Identifier: MIT
// The view page's header and timeline as JSON (view_data.h).
#include "view_data.h"

#include "json.h"
#include "plot_time.h"

#include <errno.h>
#include <stdlib.h>

static json_t* series(const char* name, const char* kind, const mr_points* p) {
    return json_pack("{s:s,s:s,s:o}", "name", name, "kind", kind, "points", mr_plot_points_json(p));
}

static int add_heap(void* ud, const mt_heap_rec* h) {
    json_array_append_new(ud, json_pack("{s:i,s:o,s:o}", "id", h->id, "name",
                                        mr_json_bytes(h->name), "kind", mr_json_bytes(h->kind)));
    return 0;
}

// The end's live blocks: each callsite's last values before the end edge, summed.
static uint64_t end_blocks(const mr_moments* m) {
    uint32_t top = 0;
    for (size_t i = 0; i < m->nvalues; i++)
        top = m->values[i].callsite > top ? m->values[i].callsite : top;
    uint64_t* last = calloc((size_t)top + 1, sizeof *last);
    if (!last)
        return 0;
    uint32_t end = m->edge_moment[m->nbuckets];
    for (size_t i = 0; i < m->nvalues && m->values[i].moment <= end; i++)
        last[m->values[i].callsite] = m->values[i].blocks;
    uint64_t n = 0;
    for (size_t cs = 0; cs <= top; cs++)
        n += last[cs];
    free(last);
    return n;
}

static json_t* header(mt_capture* cap, const mr_heap_timeline* t, const mr_moments* m) {
    size_t peak = 0;
    for (size_t k = 1; k < m->n; k++)
        peak = m->bytes[k] > m->bytes[peak] ? k : peak;
    uint64_t bytes = 0, count = 0;
    for (size_t i = 0; i < m->nallocs; i++) {
        bytes += m->allocs[i].bytes;
        count += m->allocs[i].blocks;
    }
    json_t* heaps = json_array();
    mt_capture_heaps(cap, add_heap, heaps);
    uint32_t end = m->edge_moment[m->nbuckets];
    return json_pack("{s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:o}", "duration_ns",
                     (json_int_t)t->duration, "peak_bytes", (json_int_t)(m->n ? m->bytes[peak] : 0),
                     "peak_ns", (json_int_t)(m->n ? m->ts[peak] : 0), "leaked_bytes",
                     (json_int_t)m->bytes[end], "leaked_blocks", (json_int_t)end_blocks(m),
                     "alloc_bytes", (json_int_t)bytes, "allocations", (json_int_t)count, "threads",
                     (json_int_t)m->threads, "heaps", heaps);
}

static json_t* marks(const mr_heap_timeline* t) {
    json_t* a = json_array();
    for (size_t i = 0; i < t->nmarks; i++) {
        const mr_timeline_mark* k = &t->marks[i];
        json_array_append_new(a, json_pack("{s:o,s:b,s:I,s:I}", "name", mr_json_bytes(k->name),
                                           "range", k->range, "begin", (json_int_t)k->begin, "end",
                                           (json_int_t)k->end));
    }
    return a;
}

int mr_view_data_add(json_t* o, mt_capture* cap, const mr_heap_timeline* t, const mr_moments* m) {
    json_t* s = json_array();
    if (!s)
        return -ENOMEM;
    json_array_append_new(s, series("live heap", "heap", &t->heap));
    if (t->rss.n)
        json_array_append_new(s, series("RSS", "rss", &t->rss));
    if (t->vsz.n)
        json_array_append_new(s, series("VSZ", "vsz", &t->vsz));
    json_t* v =
        json_pack("{s:o,s:o,s:o}", "header", header(cap, t, m), "series", s, "marks", marks(t));
    return v && json_object_set_new(o, "view", v) == 0 ? 0 : -ENOMEM;
}
