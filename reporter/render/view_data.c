// SPDX-License-Identifier: MIT
// The view page's header and timeline as JSON (view_data.h).
#include "view_data.h"

#include "json.h"
#include "plot_time.h"
#include "runtime_held.h"

#include <errno.h>
#include <stdlib.h>

static json_t* series(const char* name, const char* kind, const mr_points* p) {
    return json_pack("{s:s,s:s,s:o}", "name", name, "kind", kind, "points",
                     mr_plot_time_points_json(p));
}

static int add_heap(void* ud, const mt_heap_rec* h) {
    json_array_append_new(ud, json_pack("{s:i,s:o,s:o}", "id", h->id, "name",
                                        mr_json_bytes(h->name), "kind", mr_json_bytes(h->kind)));
    return 0;
}

int mr_view_data_leak_class(const mr_symbols* s, const mr_moment_end* e) {
    bool known = e->callsite < mr_symbols_callsite_count(s);
    return known && mr_runtime_held(s, e->callsite) ? MR_VIEW_RUNTIME_HELD : e->kind;
}

// The blocks live at the end per class: {"scanned", "why" (when not), "classes": [{name,
// bytes, blocks}...]}, in the classes' order.
static json_t* leaks(const mr_symbols* s, const mr_moments* m) {
    uint64_t bytes[MR_VIEW_LEAK_CLASSES] = {0}, blocks[MR_VIEW_LEAK_CLASSES] = {0};
    for (size_t i = 0; i < m->nends; i++) {
        int c = mr_view_data_leak_class(s, &m->ends[i]);
        bytes[c] += m->ends[i].bytes;
        blocks[c] += m->ends[i].blocks;
    }
    json_t* classes = json_array();
    for (int c = 0; c < MR_VIEW_LEAK_CLASSES; c++)
        json_array_append_new(
            classes, json_pack("{s:s,s:I,s:I}", "name",
                               c == MR_VIEW_RUNTIME_HELD ? "runtime_held" : mt_leak_kind_name(c),
                               "bytes", (json_int_t)bytes[c], "blocks", (json_int_t)blocks[c]));
    json_t* o = json_pack("{s:b,s:o}", "scanned", m->scanned, "classes", classes);
    if (o && !m->scanned)
        json_object_set_new(o, "why", mr_json_bytes(m->why_unscanned));
    return o;
}

static json_t* header(mt_capture* cap, const mr_heap_timeline* t, const mr_moments* m) {
    size_t peak = 0;
    for (size_t k = 1; k < m->n; k++)
        peak = m->bytes[k] > m->bytes[peak] ? k : peak;
    uint64_t bytes = 0, count = 0;
    mr_moments_cursor c;
    mr_moment_value v;
    if (mr_moments_cursor_open(m, true, &c))
        return NULL;
    int more;
    while ((more = mr_moments_cursor_next(&c, &v)) == 1) {
        bytes += v.bytes;
        count += v.blocks;
    }
    mr_moments_cursor_close(&c);
    if (more < 0)
        return NULL;
    json_t* heaps = json_array();
    mt_capture_heaps(cap, add_heap, heaps);
    return json_pack("{s:I,s:I,s:I,s:I,s:I,s:I,s:o}", "duration_ns", (json_int_t)t->duration,
                     "peak_bytes", (json_int_t)(m->n ? m->bytes[peak] : 0), "peak_ns",
                     (json_int_t)(m->n ? m->ts[peak] : 0), "alloc_bytes", (json_int_t)bytes,
                     "allocations", (json_int_t)count, "threads", (json_int_t)m->threads, "heaps",
                     heaps);
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

int mr_view_data_add(json_t* o, mt_capture* cap, const mr_symbols* sym, const mr_heap_timeline* t,
                     const mr_moments* m) {
    json_t* s = json_array();
    if (!s)
        return -ENOMEM;
    json_array_append_new(s, series("live heap", "heap", &t->heap));
    if (t->rss.n)
        json_array_append_new(s, series("RSS", "rss", &t->rss));
    if (t->vsz.n)
        json_array_append_new(s, series("VSZ", "vsz", &t->vsz));
    json_t* v = json_pack("{s:o,s:o,s:o,s:o}", "header", header(cap, t, m), "leaks", leaks(sym, m),
                          "series", s, "marks", marks(t));
    return v && json_object_set_new(o, "view", v) == 0 ? 0 : -ENOMEM;
}
