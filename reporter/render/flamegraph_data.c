// SPDX-License-Identifier: MIT
// The flame graph page's data (flamegraph_data.h) from a pruned tree.
#include "flamegraph_data.h"

#include "cxx_names.h"
#include "extent.h"
#include "json.h"
#include "sampled.h"
#include "sites.h"
#include "view_data.h"

#include "memtrace/units.h"
#include "memtrace/vec.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static json_t* program_title(mt_capture* cap) {
    char* cmd = mt_capture_meta_text(cap, "cmdline");
    json_t* argv = mr_json_loads_bytes(cmd);
    free(cmd);
    char title[512] = "";
    size_t len = 0;
    size_t i;
    json_t* a;
    if (json_is_array(argv))
        json_array_foreach(argv, i, a) {
            const char* s = json_string_value(a);
            if (s && len < sizeof title - 1)
                len += (size_t)snprintf(title + len, sizeof title - len, "%s%s", i ? " " : "", s);
        }
    json_decref(argv);
    if (!title[0]) {
        char* exe = mt_capture_meta_text(cap, "exe");
        snprintf(title, sizeof title, "%s", exe ? exe : mt_capture_path(cap));
        free(exe);
    }
    return mr_json_bytes(title); // snprintf may have cut a character in two
}

static json_t* string_ref(uint32_t id) {
    return json_integer(id == MR_FLAME_NO_STRING ? -1 : (json_int_t)id);
}

// The kept nodes as rows [parent, name, module, loc, relevant, self bytes, self count],
// a differential tree's with [base self bytes, base self count] after them; newid[i]
// becomes kept node i's row.
static json_t* node_rows(const mr_flame_tree* g, const uint32_t* target, uint32_t* newid) {
    json_t* nodes = json_array();
    for (size_t i = 0; i < g->n; i++) {
        if (target[i] != i)
            continue;
        const mr_flame_node* n = &g->nodes[i];
        newid[i] = (uint32_t)json_array_size(nodes);
        json_t* a = json_array();
        json_array_append_new(a, json_integer(i ? (json_int_t)newid[n->parent] : -1));
        json_array_append_new(a, string_ref(n->name));
        json_array_append_new(a, string_ref(n->module));
        json_array_append_new(a, string_ref(n->loc));
        json_array_append_new(a, json_integer(n->relevant));
        json_array_append_new(a, json_integer((json_int_t)n->self_bytes));
        json_array_append_new(a, json_integer((json_int_t)n->self_count));
        if (g->diff) {
            json_array_append_new(a, json_integer((json_int_t)n->base_self_bytes));
            json_array_append_new(a, json_integer((json_int_t)n->base_self_count));
        }
        json_array_append_new(nodes, a);
    }
    return nodes;
}

// Threads are listed by tid; rank[slot] is a thread's place in that list.
static uint32_t* thread_ranks(const mr_flame_threads* threads) {
    uint32_t* rank = calloc(threads->n + 1, sizeof *rank);
    if (!rank)
        return NULL;
    for (size_t i = 0; i < threads->n; i++)
        for (size_t k = 0; k < threads->n; k++)
            if (threads->tids[k] < threads->tids[i])
                rank[i]++;
    return rank;
}

static int cmp_thread_self(const void* a, const void* b) {
    const mr_flame_self *x = a, *y = b;
    if (x->node != y->node)
        return x->node < y->node ? -1 : 1;
    return x->thread < y->thread ? -1 : x->thread > y->thread;
}

// Rows [node row, thread rank, self bytes, self count], sorted. Per-thread self values
// follow their node into the kept ancestor, as the node's own self values do.
static json_t* thread_self_rows(const mr_flame_threads* threads, const uint32_t* target,
                                const uint32_t* newid, const uint32_t* rank) {
    mr_flame_self_table folded = {0};
    int e = mr_u64map_init(&folded.index);
    for (size_t i = 0; i < threads->self.n && e == 0; i++) {
        const mr_flame_self* r = &threads->self.rows[i];
        e = mr_flame_tree_self_add(&folded, newid[target[r->node]], rank[r->thread], r->bytes,
                                   r->count);
    }
    if (e) {
        mr_flame_tree_self_free(&folded);
        return NULL;
    }
    if (folded.n)
        qsort(folded.rows, folded.n, sizeof *folded.rows, cmp_thread_self);
    json_t* ts = json_array();
    for (size_t i = 0; i < folded.n; i++) {
        const mr_flame_self* r = &folded.rows[i];
        json_t* a = json_array();
        json_array_append_new(a, json_integer(r->node));
        json_array_append_new(a, json_integer(r->thread));
        json_array_append_new(a, json_integer((json_int_t)r->bytes));
        json_array_append_new(a, json_integer((json_int_t)r->count));
        json_array_append_new(ts, a);
    }
    mr_flame_tree_self_free(&folded);
    return ts;
}

// The thread filter's list, in tid order: {tid, name, bytes}.
static json_t* thread_list(mt_capture* cap, const mr_flame_threads* threads, const uint32_t* rank) {
    json_t* names = json_object();
    mt_capture_threads(cap, mr_json_add_thread, names); // tid -> name
    json_t* tl = json_array();
    for (size_t pos = 0; pos < threads->n; pos++) {
        size_t i = 0;
        while (rank[i] != pos)
            i++;
        char key[16];
        snprintf(key, sizeof key, "%u", threads->tids[i]);
        json_t* t = json_object();
        json_object_set_new(t, "tid", json_integer(threads->tids[i]));
        json_t* name = json_object_get(names, key);
        json_object_set_new(t, "name", name ? json_incref(name) : json_null());
        json_object_set_new(t, "bytes", json_integer((json_int_t)threads->bytes[i]));
        json_array_append_new(tl, t);
    }
    json_decref(names);
    return tl;
}

// --split-threads: "thread_self" and "threads".
static int add_threads(json_t* o, mt_capture* cap, const mr_flame_threads* threads,
                       const uint32_t* target, const uint32_t* newid) {
    uint32_t* rank = thread_ranks(threads);
    json_t* ts = rank ? thread_self_rows(threads, target, newid, rank) : NULL;
    if (!ts) {
        free(rank);
        return -ENOMEM;
    }
    json_object_set_new(o, "thread_self", ts);
    json_object_set_new(o, "threads", thread_list(cap, threads, rank));
    free(rank);
    return 0;
}

// The tree's strings, valid UTF-8 already (flame_tree.c), as a JSON array indexed by id.
static json_t* string_table(const mr_strtab* t) {
    json_t* a = json_array();
    for (size_t i = 0; a && i < t->n; i++)
        if (json_array_append_new(a, json_string(mr_strtab_get(t, (uint32_t)i)))) {
            json_decref(a);
            return NULL;
        }
    return a;
}

// ---- the temporal lists, packed
//
// A node's list of [moment or bucket, bytes, blocks] triples is most of a temporal page:
// as JSON numbers, 17 MB for a 100 M-event capture. Packed into one string per node, each
// number a varint of 5 bits per character (the 32 characters after the first 32 of the
// alphabet say "more follows"), each triple's numbers the change from the previous
// triple's (zigzag: small either way), the page is a third of that. The alphabet needs no
// escaping in JSON or HTML. The page unpacks it (flamegraph_template.html, unpack()).

static const char PACK_DIGITS[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

typedef struct packed {
    char* s;
    size_t n, cap;
    uint64_t last[3]; // the previous triple
} packed;

static int pack_number(packed* p, uint64_t v) {
    if (mt_vec_grow(&p->s, &p->cap, p->n + 14, 1)) // 64 bits: 13 characters and a NUL
        return -ENOMEM;
    for (; v >= 32; v >>= 5)
        p->s[p->n++] = PACK_DIGITS[32 + (v & 31)];
    p->s[p->n++] = PACK_DIGITS[v];
    p->s[p->n] = '\0';
    return 0;
}

static uint64_t zigzag(uint64_t now, uint64_t before) {
    uint64_t d = now - before; // two's complement: the sign is its top bit
    return d >> 63 ? ~d << 1 | 1 : d << 1;
}

static int pack_triple(packed* p, uint64_t k, uint64_t bytes, uint64_t blocks) {
    int e = pack_number(p, k - p->last[0]) || pack_number(p, zigzag(bytes, p->last[1])) ||
            pack_number(p, zigzag(blocks, p->last[2]));
    p->last[0] = k;
    p->last[1] = bytes;
    p->last[2] = blocks;
    return e ? -ENOMEM : 0;
}

// The packed lists of nrows nodes as a JSON array of strings; frees them. NULL when out of
// memory.
static json_t* packed_rows(packed* rows, size_t nrows, int e) {
    json_t* a = e ? NULL : json_array();
    for (size_t r = 0; r < nrows; r++) {
        if (a && json_array_append_new(a, json_string(rows[r].s ? rows[r].s : ""))) {
            json_decref(a);
            a = NULL;
        }
        free(rows[r].s);
    }
    free(rows);
    return a;
}

// Each kept node's self values at the candidates: per node row its changes [moment, bytes,
// blocks, ...], packed; a node's values at moment k are its last change at or before k.
// Callsites fold into their kept node as in the tree.
static json_t* temporal_self(const mr_flame_tree* g, const uint32_t* newid, size_t nrows,
                             const mr_moments* m) {
    uint64_t* cs_now = calloc(2 * ((size_t)g->ncallsites + 1), sizeof *cs_now);
    uint64_t* now = calloc(2 * nrows, sizeof *now);
    uint32_t* dirty = malloc(nrows * sizeof *dirty);
    bool* is_dirty = calloc(nrows, sizeof *is_dirty);
    packed* rows = calloc(nrows, sizeof *rows);
    mr_moments_cursor c;
    mr_moment_value v;
    int e = cs_now && now && dirty && is_dirty && rows ? mr_moments_cursor_open(m, false, &c) : -1;
    bool opened = e == 0;
    int more = opened ? mr_moments_cursor_next(&c, &v) : 0;
    while (e == 0 && more == 1) {
        uint32_t k = v.moment;
        size_t ndirty = 0;
        for (; more == 1 && v.moment == k; more = mr_moments_cursor_next(&c, &v)) {
            uint32_t cs = v.callsite < g->ncallsites ? v.callsite : 0;
            uint32_t row = newid[g->target[cs ? g->node_of[cs] : 0]];
            now[2 * row] += v.bytes - cs_now[2 * cs];
            now[2 * row + 1] += v.blocks - cs_now[2 * cs + 1];
            cs_now[2 * cs] = v.bytes;
            cs_now[2 * cs + 1] = v.blocks;
            if (!is_dirty[row]) {
                is_dirty[row] = true;
                dirty[ndirty++] = row;
            }
        }
        for (size_t d = 0; d < ndirty && e == 0; d++) {
            packed* p = &rows[dirty[d]];
            is_dirty[dirty[d]] = false;
            if (now[2 * dirty[d]] != p->last[1] || now[2 * dirty[d] + 1] != p->last[2])
                e = pack_triple(p, k, now[2 * dirty[d]], now[2 * dirty[d] + 1]);
        }
    }
    if (opened)
        mr_moments_cursor_close(&c);
    e = e ? e : more < 0 ? -1 : 0;
    free(cs_now);
    free(now);
    free(dirty);
    free(is_dirty);
    return rows ? packed_rows(rows, nrows, e) : NULL;
}

// Each kept node's allocations per bucket, from the moments' (mr_moments.allocs, in
// bucket order): per node row [bucket, bytes, count, ...], packed, callsites folded into
// their kept node as in the tree.
static json_t* temporal_allocs(const mr_flame_tree* g, const uint32_t* newid, size_t nrows,
                               const mr_moments* m) {
    uint64_t* sum = calloc(2 * nrows, sizeof *sum);
    uint32_t* touched = malloc(nrows * sizeof *touched);
    packed* rows = calloc(nrows, sizeof *rows);
    mr_moments_cursor c;
    mr_moment_value v;
    int e = sum && touched && rows ? mr_moments_cursor_open(m, true, &c) : -1;
    bool opened = e == 0;
    int more = opened ? mr_moments_cursor_next(&c, &v) : 0;
    while (e == 0 && more == 1) {
        uint32_t k = v.moment;
        size_t ntouched = 0;
        for (; more == 1 && v.moment == k; more = mr_moments_cursor_next(&c, &v)) {
            uint32_t cs = v.callsite < g->ncallsites ? v.callsite : 0;
            uint32_t row = newid[g->target[cs ? g->node_of[cs] : 0]];
            if (sum[2 * row + 1] == 0)
                touched[ntouched++] = row;
            sum[2 * row] += v.bytes;
            sum[2 * row + 1] += v.blocks;
        }
        for (size_t t = 0; t < ntouched && e == 0; t++) {
            uint64_t* s = &sum[2 * touched[t]];
            e = pack_triple(&rows[touched[t]], k, s[0], s[1]);
            s[0] = s[1] = 0;
        }
    }
    if (opened)
        mr_moments_cursor_close(&c);
    e = e ? e : more < 0 ? -1 : 0;
    free(sum);
    free(touched);
    return rows ? packed_rows(rows, nrows, e) : NULL;
}

static int by_cell(const void* a, const void* b) {
    uint32_t x = *(const uint32_t*)a, y = *(const uint32_t*)b;
    return (x > y) - (x < y);
}

// Each kept node's blocks live at the end, per bucket of their allocation and class
// (view_data.h), from the moments' ends: per node row [bucket * 8 + class, bytes, blocks,
// ...], packed, callsites folded into their kept node as in the tree.
static json_t* temporal_leaks(const mr_flame_tree* g, const uint32_t* newid, size_t nrows,
                              const mr_moments* m) {
    enum { C = MR_VIEW_LEAK_CLASSES };
    uint64_t* sum = calloc(2 * C * nrows, sizeof *sum);
    uint32_t* touched = malloc(C * nrows * sizeof *touched); // cells: row * C + class
    packed* rows = calloc(nrows, sizeof *rows);
    int e = sum && touched && rows ? 0 : -1;
    for (size_t i = 0; e == 0 && i < m->nends;) {
        uint32_t k = m->ends[i].bucket;
        size_t ntouched = 0;
        for (; i < m->nends && m->ends[i].bucket == k; i++) {
            const mr_moment_end* v = &m->ends[i];
            uint32_t cs = v->callsite < g->ncallsites ? v->callsite : 0;
            uint32_t cell = newid[g->target[cs ? g->node_of[cs] : 0]] * C +
                            (uint32_t)mr_view_data_leak_class(g->sym, v);
            if (sum[2 * cell + 1] == 0)
                touched[ntouched++] = cell;
            sum[2 * cell] += v->bytes;
            sum[2 * cell + 1] += v->blocks;
        }
        qsort(touched, ntouched, sizeof *touched, by_cell); // a row's classes in order
        for (size_t t = 0; t < ntouched && e == 0; t++) {
            uint64_t* c = &sum[2 * touched[t]];
            e = pack_triple(&rows[touched[t] / C], (uint64_t)k * 8 + touched[t] % C, c[0], c[1]);
            c[0] = c[1] = 0;
        }
    }
    free(sum);
    free(touched);
    return rows ? packed_rows(rows, nrows, e) : NULL;
}

// memreport view: the moments of the buckets' edges, and the nodes' allocations and leaks.
static int temporal_edges(json_t* o, const mr_flame_tree* g, const uint32_t* newid, size_t nrows,
                          const mr_moments* m) {
    json_t* edges = json_array();
    json_t* allocs = temporal_allocs(g, newid, nrows, m);
    json_t* leaks = temporal_leaks(g, newid, nrows, m);
    int e = edges && allocs && leaks ? 0 : -1;
    for (size_t k = 0; e == 0 && k <= m->nbuckets; k++)
        e = json_array_append_new(edges, json_integer(m->edge_moment[k]));
    if (e == 0)
        return json_object_set_new(o, "edges", edges) || json_object_set_new(o, "alloc", allocs) ||
               json_object_set_new(o, "leaks", leaks);
    json_decref(edges);
    json_decref(allocs);
    json_decref(leaks);
    return -1;
}

// --temporal: the buckets (t0, width, each one's candidate), the candidates' times and
// live bytes, and the nodes' changes between them.
static json_t* temporal_data(const mr_flame_tree* g, const uint32_t* newid, size_t nrows,
                             const mr_moments* m) {
    json_t* self = temporal_self(g, newid, nrows, m);
    json_t* o = json_object();
    json_t* buckets = json_array();
    json_t* ts = json_array();
    json_t* bytes = json_array();
    int e = self && o && buckets && ts && bytes ? 0 : -1;
    for (size_t k = 0; e == 0 && k < m->nbuckets; k++)
        e = json_array_append_new(buckets, json_integer(m->bucket_moment[k]));
    for (size_t k = 0; e == 0 && k < m->n; k++)
        e = json_array_append_new(ts, json_integer(m->ts[k])) ||
            json_array_append_new(bytes, json_integer((json_int_t)m->bytes[k]));
    if (e == 0)
        e = json_object_set_new(o, "t0", json_integer(m->t0)) ||
            json_object_set_new(o, "width", json_integer(m->width)) ||
            json_object_set_new(o, "buckets", buckets) || json_object_set_new(o, "moment_ts", ts) ||
            json_object_set_new(o, "moment_bytes", bytes) || json_object_set_new(o, "self", self) ||
            (m->edge_moment && temporal_edges(o, g, newid, nrows, m));
    else {
        json_decref(buckets);
        json_decref(ts);
        json_decref(bytes);
        json_decref(self);
    }
    if (e) {
        json_decref(o);
        return NULL;
    }
    return o;
}

// A differential page's runs: the base capture's name, its bytes and blocks at its peak,
// and the subtitle comparing both peaks.
static void describe_diff(json_t* o, const mr_flame_tree* g, const mr_flamegraph_view* v) {
    char base[32], next[32], delta[32], pct[32] = "", sub[256];
    uint64_t b = g->nodes[0].base_incl, n = g->nodes[0].incl;
    mt_units_format_bytes(b, base, sizeof base);
    mt_units_format_bytes(n, next, sizeof next);
    mt_units_format_bytes(n >= b ? n - b : b - n, delta, sizeof delta);
    if (b)
        snprintf(pct, sizeof pct, ", %+.1f%%", 100.0 * ((double)n - (double)b) / (double)b);
    snprintf(sub, sizeof sub, "Peak of each run: base %s, new %s (%s%s%s)", base, next,
             n == b  ? ""
             : n > b ? "+"
                     : "-",
             n == b ? "no change" : delta, pct);
    json_object_set_new(o, "subtitle", json_string(sub));
    json_object_set_new(o, "what", json_string("the bytes live at the new run's peak"));
    const char* path = mt_capture_path(v->base);
    const char* slash = strrchr(path, '/');
    json_object_set_new(o, "base_capture", mr_json_bytes(slash ? slash + 1 : path));
    json_object_set_new(o, "base_total_bytes", json_integer((json_int_t)b));
    json_object_set_new(o, "base_total_blocks", json_integer((json_int_t)g->base_blocks));
}

// The moment the page shows: "mode", "what", the time (or step) and "subtitle".
static json_t* describe_moment(const mr_flame_tree* g, const mr_flamegraph_view* v) {
    json_t* o = json_object();
    char bytes[32], when[32], sub[256];
    mt_units_format_bytes(g->nodes[0].incl, bytes, sizeof bytes);
    static const char* const modes[] = {"peak", "at", "leaks", "diff"};
    json_object_set_new(o, "mode", json_string(modes[v->mode]));
    if (v->mode == MR_FLAMEGRAPH_DIFF) {
        describe_diff(o, g, v);
        return o;
    }
    if (v->mode == MR_FLAMEGRAPH_LEAKS) {
        snprintf(sub, sizeof sub, "Leaks: %s in %llu blocks still live at the end", bytes,
                 (unsigned long long)g->blocks);
        json_object_set_new(o, "what", json_string("the leaked bytes"));
    } else if (v->processes) {
        mr_extent_format_time(v->t, false, when, sizeof when);
        snprintf(sub, sizeof sub, "Peak: %s live at %s, the most the processes held at one moment",
                 bytes, when);
        json_object_set_new(
            o, "what", json_string("the bytes live when the processes together held the most"));
        json_object_set_new(o, "time_ns", json_integer(v->t));
    } else {
        bool peak = v->mode == MR_FLAMEGRAPH_PEAK;
        mr_extent_format_time(v->t, v->steps, when, sizeof when);
        snprintf(sub, sizeof sub, "%s: %s live at %s", peak ? "Peak" : "Live heap", bytes, when);
        json_object_set_new(
            o, "what", json_string(peak ? "the bytes live at the peak" : "the bytes live then"));
        // An imported NPU heap counts time in allocation steps.
        json_object_set_new(o, v->steps ? "step" : "time_ns", json_integer(v->t));
    }
    json_object_set_new(o, "subtitle", json_string(sub));
    return o;
}

// A sampled capture's page says so where it is seen first: after the subtitle. The note
// is also kept apart ("sampled_note"), for the page to keep it when a time range replaces
// the subtitle.
static void say_sampled(json_t* o) {
    json_t* sampled = mr_json_sampled();
    if (!sampled)
        return;
    char note[8192] = "", sub[8192 + 4096], line[4400];
    for (size_t i = 0; i < mr_sampled_lines(); i++) {
        size_t n = strlen(note);
        mr_sampled_line(i, line, sizeof line);
        snprintf(note + n, sizeof note - n, "%s%s", i ? " | " : "", line);
    }
    snprintf(sub, sizeof sub, "%s | %s", json_string_value(json_object_get(o, "subtitle")), note);
    json_object_set_new(o, "subtitle", json_string(sub));
    json_object_set_new(o, "sampled_note", json_string(note));
    json_object_set_new(o, "sampled", sampled);
}

// The short form of the kept nodes' names that have one (cxx_names.h), by string id: the
// page draws them and keeps the full name, from the string table, for hovers and tables'
// tooltips. Empty with --full-names.
static json_t* short_names(const mr_flame_tree* g, const uint32_t* target) {
    json_t* o = json_object();
    for (size_t i = 0; i < g->n; i++) {
        uint32_t id = g->nodes[i].name;
        char key[16];
        snprintf(key, sizeof key, "%u", id);
        if (target[i] != i || id == MR_FLAME_NO_STRING || json_object_get(o, key))
            continue;
        const char* name = mr_strtab_get(&g->strings, id);
        char* s = mr_cxx_names_display_dup(name); // whole: the page cuts what it draws
        if (s && strcmp(s, name) != 0)
            json_object_set_new(o, key, mr_json_bytes(s));
        free(s);
    }
    return o;
}

// The string ids of the kept nodes' names that are allocation plumbing (sites.h: the C++
// standard library's), which the Functions tab passes as memreport top does. NULL when
// none is, so a page without C++ keeps its data as it was.
static json_t* plumbing(const mr_flame_tree* g, const uint32_t* target) {
    json_t* a = NULL;
    uint8_t* seen = calloc(g->strings.n + 1, 1);
    for (size_t i = 0; seen && i < g->n; i++) {
        uint32_t id = g->nodes[i].name;
        if (target[i] != i || id == MR_FLAME_NO_STRING || id >= g->strings.n || seen[id])
            continue;
        seen[id] = 1;
        if (mr_sites_is_plumbing(mr_strtab_get(&g->strings, id)) &&
            ((!a && !(a = json_array())) || json_array_append_new(a, json_integer(id))))
            break;
    }
    free(seen);
    return a;
}

json_t* mr_flamegraph_data_build(const mr_flame_tree* g, mt_capture* cap,
                                 const mr_flamegraph_view* view) {
    uint32_t* newid = malloc(g->n * sizeof *newid);
    if (!newid)
        return NULL;
    json_t* nodes = node_rows(g, g->target, newid);
    json_t* o = json_object();
    json_object_set_new(o, "version", json_integer(1));
    json_object_set_new(o, "title", program_title(cap));
    const char* path = mt_capture_path(cap);
    const char* base = strrchr(path, '/');
    json_object_set_new(o, "capture", mr_json_bytes(base ? base + 1 : path));
    json_t* moment = describe_moment(g, view);
    json_object_update(o, moment);
    json_decref(moment);
    say_sampled(o);
    json_object_set_new(o, "total_bytes", json_integer((json_int_t)g->nodes[0].incl));
    json_object_set_new(o, "total_blocks", json_integer((json_int_t)g->blocks));
    json_object_set_new(o, "merged_below", json_integer((json_int_t)g->threshold));
    json_object_set_new(o, "merged_frames", json_integer((json_int_t)g->nmerged));
    json_object_set_new(o, "strings", string_table(&g->strings));
    json_object_set_new(o, "short_names", short_names(g, g->target));
    json_t* plumb = plumbing(g, g->target);
    if (plumb)
        json_object_set_new(o, "plumbing", plumb);
    json_object_set_new(o, "nodes", nodes);
    if (g->split && add_threads(o, cap, &g->threads, g->target, newid)) {
        json_decref(o);
        o = NULL;
    }
    if (o && view->temporal) {
        json_t* t = temporal_data(g, newid, json_array_size(nodes), view->temporal);
        if (!t || json_object_set_new(o, "temporal", t)) {
            json_decref(o);
            o = NULL;
        }
    }
    free(newid);
    if (o && view->timeline && view->temporal &&
        mr_view_data_add(o, cap, g->sym, view->timeline, view->temporal)) {
        json_decref(o);
        o = NULL;
    }
    // The page's "hide non-relevant frames" starts unchecked with --all-frames.
    if (o && (json_object_set_new(o, "all_frames", json_boolean(view->all_frames)) ||
              (view->inverted && json_object_set_new(o, "inverted", json_true())) ||
              (view->orientation &&
               json_object_set_new(o, "orientation", json_string(view->orientation))))) {
        json_decref(o);
        o = NULL;
    }
    return o;
}
