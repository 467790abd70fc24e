// SPDX-License-Identifier: MIT
// The flame graph page: the template (flamegraph_template.html, compiled in) with the
// graph's data put in place of its placeholder.
#include "flamegraph_page.h"

#include "flamegraph_data.h"
#include "flamegraph_html.h"
#include "json.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DATA_PLACEHOLDER "@MEMTRACE_FLAMEGRAPH_DATA@"

// Writes the template with data in place of its placeholder. Returns 0, -EPROTO or -EIO.
static int write_page(FILE* fp, const json_t* data) {
    const char* page = (const char*)mr_flamegraph_html;
    const char* at = strstr(page, DATA_PLACEHOLDER);
    if (!at)
        return -EPROTO;
    fwrite(page, 1, (size_t)(at - page), fp);
    // With < > & escaped no name can end the script element the data sits in, nor open
    // an HTML comment that would swallow the rest of the page ("<!--<script>").
    if (mr_json_dump_html(data, fp))
        return -EIO;
    const char* rest = at + strlen(DATA_PLACEHOLDER);
    fwrite(rest, 1, mr_flamegraph_html_len - (size_t)(rest - page), fp);
    return 0;
}

int mr_flamegraph_page_write(FILE* fp, const mr_flame_tree* g, mt_capture* cap,
                             const mr_flamegraph_view* view) {
    if (!strstr((const char*)mr_flamegraph_html, DATA_PLACEHOLDER))
        return -EPROTO;
    json_t* data = mr_flamegraph_data_build(g, cap, view);
    if (!data)
        return -ENOMEM;
    int rc = write_page(fp, data);
    json_decref(data);
    return rc;
}

struct mr_heap_pages {
    json_t* first; // the data the page opens with, holding "heap_pages" (the others)
    json_t* list;  // "heap_list": per heap, its name and totals
    bool procs;    // the pages are a process tree's
};

mr_heap_pages* mr_flamegraph_page_heaps_new(void) {
    mr_heap_pages* p = calloc(1, sizeof *p);
    if (p && !(p->list = json_array())) {
        free(p);
        p = NULL;
    }
    return p;
}

static json_int_t int_at(const json_t* o, const char* a, const char* b) {
    return json_integer_value(json_object_get(json_object_get(o, a), b));
}

// A heap's totals from its page data: the header's, and the blocks live at the end
// (every leak class, the C runtime's blocks included).
static json_t* heap_totals(const char* name, const json_t* data) {
    const json_t* view = json_object_get(data, "view");
    json_int_t bytes = 0, blocks = 0;
    size_t i;
    json_t* c;
    json_array_foreach(json_object_get(json_object_get(view, "leaks"), "classes"), i, c) {
        bytes += json_integer_value(json_object_get(c, "bytes"));
        blocks += json_integer_value(json_object_get(c, "blocks"));
    }
    return json_pack(
        "{s:o,s:I,s:I,s:I,s:I,s:I,s:I}", "name", mr_json_bytes(name), "peak_bytes",
        int_at(view, "header", "peak_bytes"), "peak_ns", int_at(view, "header", "peak_ns"),
        "allocations", int_at(view, "header", "allocations"), "alloc_bytes",
        int_at(view, "header", "alloc_bytes"), "live_bytes", bytes, "live_blocks", blocks);
}

int mr_flamegraph_page_heaps_add(mr_heap_pages* p, const char* name, const mr_flame_tree* g,
                                 mt_capture* cap, const mr_flamegraph_view* view) {
    json_t* data = mr_flamegraph_data_build(g, cap, view);
    json_t* totals = data ? heap_totals(name, data) : NULL;
    int e = totals && !json_array_append_new(p->list, totals) ? 0 : -ENOMEM;
    if (e == 0 && !p->first) {
        p->first = data;
        return json_object_set_new(data, "heap_pages", json_array()) ? -ENOMEM : 0;
    }
    if (e == 0)
        e = json_array_append_new(json_object_get(p->first, "heap_pages"),
                                  json_pack("{s:o,s:o}", "name", mr_json_bytes(name), "data", data))
                ? -ENOMEM
                : 0;
    else
        json_decref(data);
    return e;
}

// Each heap's page names its own live heap series after it and shows the other heaps' as
// lines beside it.
static int share_series(const mr_heap_pages* p) {
    const json_t* others = json_object_get(p->first, "heap_pages");
    size_t n = 1 + json_array_size(others);
    for (size_t i = 0; i < n; i++) {
        json_t* data = i ? json_object_get(json_array_get(others, i - 1), "data") : p->first;
        json_t* own = json_array_get(json_object_get(json_object_get(data, "view"), "series"), 0);
        const char* name = json_string_value(json_object_get(json_array_get(p->list, i), "name"));
        char label[128];
        snprintf(label, sizeof label, "%s heap", name ? name : "");
        if (json_object_set_new(own, "name", mr_json_bytes(label)))
            return -ENOMEM;
        for (size_t k = 0; k < n; k++) {
            json_t* to = k ? json_object_get(json_array_get(others, k - 1), "data") : p->first;
            if (k != i && json_array_append_new(
                              json_object_get(json_object_get(to, "view"), "series"),
                              json_pack("{s:o,s:s,s:O}", "name", mr_json_bytes(label), "kind",
                                        "other", "points", json_object_get(own, "points"))))
                return -ENOMEM;
        }
    }
    return 0;
}

typedef struct named {
    int64_t tid;
    const char* name;
} named;

static void thread_name(void* ud, int64_t tid, const char* name) {
    named* n = ud;
    if (tid == n->tid && !n->name)
        n->name = strdup(name);
}

int mr_flamegraph_page_heaps_add_thread(mr_heap_pages* p, uint32_t tid, const mr_flame_tree* g,
                                        mt_capture* cap, const mr_flamegraph_view* view) {
    json_t* data = p->first ? mr_flamegraph_data_build(g, cap, view) : NULL;
    if (!data)
        return -ENOMEM;
    named n = {tid, NULL};
    mt_capture_threads(cap, thread_name, &n); // a thread without a name is shown by its tid
    const json_t* header = json_object_get(json_object_get(data, "view"), "header");
    json_t* entry = json_pack("{s:I,s:o,s:O,s:O}", "tid", (json_int_t)tid, "name",
                              n.name ? mr_json_bytes(n.name) : json_null(), "allocations",
                              json_object_get(header, "allocations"), "alloc_bytes",
                              json_object_get(header, "alloc_bytes"));
    free((char*)n.name);
    // The page shows the heap's timeline and header with it: not kept twice.
    json_t* v = json_object_get(data, "view");
    json_object_del(v, "series");
    json_object_del(v, "marks");
    json_t* list = json_object_get(p->first, "thread_list");
    json_t* pages = json_object_get(p->first, "thread_pages");
    if (!list && (json_object_set_new(p->first, "thread_list", list = json_array()) ||
                  json_object_set_new(p->first, "thread_pages", pages = json_array()))) {
        json_decref(entry);
        json_decref(data);
        return -ENOMEM;
    }
    int e = entry && !json_array_append_new(list, entry) &&
                    !json_array_append_new(
                        pages, json_pack("{s:I,s:o}", "tid", (json_int_t)tid, "data", data))
                ? 0
                : -ENOMEM;
    return e;
}

int mr_flamegraph_page_heaps_procs(mr_heap_pages* p, uint64_t peak, int64_t ts) {
    p->procs = true;
    return p->first && !json_object_set_new(p->first, "proc_tree",
                                            json_pack("{s:I,s:I}", "peak_bytes", (json_int_t)peak,
                                                      "peak_ns", (json_int_t)ts))
               ? 0
               : -ENOMEM;
}

int mr_flamegraph_page_heaps_place(mr_heap_pages* p, size_t page, int64_t pid, int64_t ppid,
                                   unsigned depth, int64_t offset, const char* command,
                                   const char* tells) {
    json_t* e = json_array_get(p->list, page);
    return e && !json_object_set_new(e, "pid", json_integer(pid)) &&
                   !json_object_set_new(e, "command", mr_json_bytes(command)) &&
                   !json_object_set_new(e, "tells", mr_json_bytes(tells)) &&
                   !json_object_set_new(e, "offset_ns", json_integer(offset)) &&
                   !json_object_set_new(e, "ppid", json_integer(ppid)) &&
                   !json_object_set_new(e, "depth", json_integer(depth))
               ? 0
               : -ENOMEM;
}

int mr_flamegraph_page_heaps_note_threads(mr_heap_pages* p, const char* why) {
    return p->first && !json_object_set_new(p->first, "threads_note", mr_json_bytes(why)) ? 0
                                                                                          : -ENOMEM;
}

int mr_flamegraph_page_heaps_write(FILE* fp, const mr_heap_pages* p) {
    if (!p->first || json_object_set(p->first, "heap_list", p->list))
        return -ENOMEM;
    if (!p->procs && json_array_size(p->list) > 1 && share_series(p))
        return -ENOMEM;
    return write_page(fp, p->first);
}

void mr_flamegraph_page_heaps_free(mr_heap_pages* p) {
    if (!p)
        return;
    json_decref(p->first);
    json_decref(p->list);
    free(p);
}
