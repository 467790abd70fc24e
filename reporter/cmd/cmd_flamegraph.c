// SPDX-License-Identifier: MIT
// memreport flamegraph: one self-contained HTML page (flamegraph_template.html, compiled
// in) with the callsite tree of the blocks live at the peak, at a time, or at the end, as
// JSON. Callsites narrower than a threshold are merged into their caller so the page stays
// small; hiding non-relevant frames and the thread filter happen in the page itself.
#include "commands.h"
#include "escape.h"
#include "flamegraph_page.h"
#include "options.h"
#include "output.h"
#include "replay.h"
#include "sites.h"
#include "u64map.h"

#include "memtrace/schema.h"
#include "memtrace/units.h"
#include "memtrace/vec.h"

#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char flamegraph_help[] =
    "usage: memreport flamegraph CAPTURE [-o FILE] [-f] [--peak | --at TIME | --leaks]\n"
    "                            [--split-threads] [--min-width FRACTION] [--all-frames]\n"
    "A flame graph of the libc heap as one self-contained HTML page (no network needed):\n"
    "the allocation stacks of the blocks live at a moment, width = bytes. The page opens as\n"
    "an icicle (root on top); a button flips it to a flame graph (root at the bottom).\n"
    "  --peak              blocks live at the peak of live bytes (default)\n"
    "  --at TIME           blocks live at TIME since the start, with its unit (ns, us,\n"
    "                      ms, s), e.g. 1.5s or 20ms; step N for an imported NPU log\n"
    "  --leaks             blocks still live at the end of the run\n"
    "  --split-threads     add a thread filter to the page\n"
    "  --all-frames        open the page with noise frames (allocator internals, start-up\n"
    "                      code) shown; by default they are hidden, their bytes in their callers\n"
    "  --min-width F       merge call sites smaller than F of the total into their caller\n"
    "                      (default 0.0001; at most 20000 frames are kept in any case)\n"
    "  -o, --output FILE   default: memreport-flamegraph-NAME.html in the current directory,\n"
    "                      NAME being the capture's file name without .db\n"
    "  -f, --force         overwrite FILE if it exists\n";

// Kept frames at most, whatever --min-width says: the page stays a few MB.
#define MAX_NODES 20000

enum mode { MODE_PEAK, MODE_AT, MODE_LEAKS };

// ---- the merged tree: one node per (caller node, function name, relevance)

typedef struct fg_node {
    uint32_t parent;
    uint32_t name, module, loc; // string ids; UINT32_MAX = none
    bool relevant;
    uint64_t self_bytes, self_count, incl;
} fg_node;

typedef struct fg {
    const mr_symbols* sym;
    fg_node* nodes;
    size_t n, cap;
    mr_u64map children; // parent << 32 | name << 1 | relevant -> node index
    json_t* strings;    // array of strings
    json_t* string_ids; // object: string -> id
    uint32_t* node_of;  // callsite id -> leaf-most node of its frame; 0 = not yet resolved
    uint32_t ncallsites;
    uint64_t blocks; // live blocks collected
} fg;

// The id of a string in the page's string table. Strings are made valid UTF-8 first: JSON
// (and so the table and its index) holds nothing else.
static uint32_t intern(fg* g, const char* str) {
    char* s = str ? mr_escape(str, strlen(str), MR_ESCAPE_UTF8) : NULL;
    if (!s)
        return UINT32_MAX;
    json_t* id = json_object_get(g->string_ids, s);
    uint32_t n = id ? (uint32_t)json_integer_value(id) : (uint32_t)json_array_size(g->strings);
    if (!id) {
        json_array_append_new(g->strings, json_string(s));
        json_object_set_new(g->string_ids, s, json_integer(n));
    }
    free(s);
    return n;
}

static int child(fg* g, uint32_t parent, uint32_t name, bool relevant, uint32_t* out) {
    uint64_t key = (uint64_t)parent << 32 | (uint64_t)name << 1 | relevant;
    const uint64_t* known = mr_u64map_get(&g->children, key);
    if (known) {
        *out = (uint32_t)*known;
        return 0;
    }
    if (MT_VEC_RESERVE(&g->nodes, &g->cap, g->n + 1))
        return -ENOMEM;
    uint32_t id = (uint32_t)g->n++;
    g->nodes[id] = (fg_node){.parent = parent,
                             .name = name,
                             .module = UINT32_MAX,
                             .loc = UINT32_MAX,
                             .relevant = relevant};
    if (mr_u64map_put(&g->children, key, id))
        return -ENOMEM;
    *out = id;
    return 0;
}

// Appends the nodes of one physical frame under `parent`: the function, then the functions
// inlined into it, innermost last (the flame graph grows from caller to callee).
static int add_frame(fg* g, uint32_t parent, uint32_t frame, uint32_t* out) {
    const mr_symloc* locs;
    size_t nl = mr_symbols_frame_locs(g->sym, frame, &locs);
    bool relevant = mr_symbols_frame_relevant(g->sym, frame);
    uint32_t module = intern(g, mr_symbols_frame_module(g->sym, frame));
    for (size_t k = nl; k-- > 0;) {
        uint32_t id;
        if (child(g, parent, intern(g, locs[k].function), relevant, &id))
            return -ENOMEM;
        fg_node* n = &g->nodes[id];
        if (n->loc == UINT32_MAX && locs[k].file) {
            char buf[1024];
            if (locs[k].line > 0)
                snprintf(buf, sizeof buf, "%s:%d", locs[k].file, locs[k].line);
            else
                snprintf(buf, sizeof buf, "%s", locs[k].file);
            n->loc = intern(g, buf);
        }
        if (n->module == UINT32_MAX)
            n->module = module;
        parent = id;
    }
    *out = parent;
    return 0;
}

// The node of a leaf callsite, creating the path from the root as needed.
static int resolve(fg* g, uint32_t callsite, uint32_t* out) {
    if (callsite == 0 || callsite >= g->ncallsites) {
        *out = 0;
        return 0;
    }
    if (g->node_of[callsite]) {
        *out = g->node_of[callsite];
        return 0;
    }
    uint32_t path[MR_SITES_MAX_DEPTH];
    size_t n = 0;
    uint32_t cs = callsite;
    // Walk up to a resolved ancestor (or the root); bounded against parent cycles.
    while (cs && cs < g->ncallsites && !g->node_of[cs] && n < MR_SITES_MAX_DEPTH) {
        path[n++] = cs;
        cs = mr_symbols_parent(g->sym, cs);
    }
    uint32_t node = (cs && cs < g->ncallsites) ? g->node_of[cs] : 0;
    while (n-- > 0) {
        if (add_frame(g, node, mr_symbols_frame_of(g->sym, path[n]), &node))
            return -ENOMEM;
        g->node_of[path[n]] = node;
    }
    *out = node;
    return 0;
}

static void fg_free(fg* g) {
    free(g->nodes);
    free(g->node_of);
    mr_u64map_free(&g->children);
    json_decref(g->strings);
    json_decref(g->string_ids);
}

// ---- collecting live blocks

// Self bytes and blocks per (node, thread): rows, and an index from node << 32 | thread.
typedef struct thread_self {
    uint32_t node, thread;
    uint64_t bytes, count;
} thread_self;

typedef struct self_table {
    mr_u64map index; // node << 32 | thread -> row
    thread_self* rows;
    size_t n, cap;
} self_table;

static void self_table_free(self_table* t) {
    mr_u64map_free(&t->index);
    free(t->rows);
}

static int self_table_add(self_table* t, uint32_t node, uint32_t thread, uint64_t bytes,
                          uint64_t count) {
    uint64_t key = (uint64_t)node << 32 | thread;
    const uint64_t* row = mr_u64map_get(&t->index, key);
    if (!row) {
        if (MT_VEC_RESERVE(&t->rows, &t->cap, t->n + 1) || mr_u64map_put(&t->index, key, t->n))
            return -ENOMEM;
        t->rows[t->n] = (thread_self){.node = node, .thread = thread};
        row = mr_u64map_get(&t->index, key);
        t->n++;
    }
    t->rows[*row].bytes += bytes;
    t->rows[*row].count += count;
    return 0;
}

typedef struct thread_acc {
    mr_u64map index; // tid -> thread slot
    uint32_t* tids;
    uint64_t* bytes;
    size_t n, cap;
    self_table self; // (node, slot)
} thread_acc;

static int thread_slot(thread_acc* t, uint32_t tid, uint32_t* slot) {
    const uint64_t* known = mr_u64map_get(&t->index, tid);
    if (known) {
        *slot = (uint32_t)*known;
        return 0;
    }
    // Two arrays, one capacity: it grows once both have.
    size_t tids_cap = t->cap, bytes_cap = t->cap;
    if (MT_VEC_RESERVE(&t->tids, &tids_cap, t->n + 1) ||
        MT_VEC_RESERVE(&t->bytes, &bytes_cap, t->n + 1))
        return -ENOMEM;
    t->cap = tids_cap;
    *slot = (uint32_t)t->n;
    t->tids[t->n] = tid;
    t->bytes[t->n++] = 0;
    return mr_u64map_put(&t->index, tid, *slot);
}

// Resolves the live blocks' callsites in id order, not in the order of the live map (keyed
// at random), so nodes and strings come out in the same order on every run.
static int resolve_live(fg* g, const mr_heapmap* live) {
    bool* used = calloc((size_t)g->ncallsites + 1, sizeof *used);
    if (!used)
        return -ENOMEM;
    const mr_block* b;
    for (size_t i = 0; mr_heapmap_next(live, &i, &b);)
        if (b->callsite < g->ncallsites)
            used[b->callsite] = true;
    int e = 0;
    uint32_t node;
    for (uint32_t cs = 1; cs < g->ncallsites && e == 0; cs++)
        if (used[cs])
            e = resolve(g, cs, &node);
    free(used);
    return e;
}

static int collect(fg* g, const mr_heapmap* live, thread_acc* threads) {
    if (resolve_live(g, live))
        return -ENOMEM;
    const mr_block* b;
    for (size_t i = 0; mr_heapmap_next(live, &i, &b);) {
        uint32_t node;
        if (resolve(g, b->callsite, &node)) // resolved above: a lookup
            return -ENOMEM;
        g->nodes[node].self_bytes += b->size;
        g->nodes[node].self_count++;
        g->blocks++;
        if (threads) {
            uint32_t slot;
            if (thread_slot(threads, b->tid, &slot) ||
                self_table_add(&threads->self, node, slot, b->size, 1))
                return -ENOMEM;
            threads->bytes[slot] += b->size;
        }
    }
    return 0;
}

// ---- pruning and JSON

static int cmp_u64_desc(const void* a, const void* b) {
    uint64_t x = *(const uint64_t*)a, y = *(const uint64_t*)b;
    return x < y ? 1 : x > y ? -1 : 0;
}

// Nodes below the threshold fold into their nearest kept ancestor. Children always come
// after their parent in g->nodes, so one forward pass decides and one backward pass sums.
static uint32_t* prune(fg* g, double min_width, uint64_t* threshold_out, size_t* nmerged) {
    for (size_t i = g->n; i-- > 1;)
        g->nodes[g->nodes[i].parent].incl += g->nodes[i].incl;
    uint64_t total = g->nodes[0].incl;
    uint64_t threshold = (uint64_t)ceil(min_width * (double)total);
    if (g->n > MAX_NODES) {
        uint64_t* v = malloc(g->n * sizeof *v);
        if (!v)
            return NULL;
        for (size_t i = 0; i < g->n; i++)
            v[i] = g->nodes[i].incl;
        qsort(v, g->n, sizeof *v, cmp_u64_desc);
        if (v[MAX_NODES - 1] + 1 > threshold)
            threshold = v[MAX_NODES - 1] + 1;
        free(v);
    }
    if (threshold == 0)
        threshold = 1; // empty subtrees (threads filtered out elsewhere) are dropped
    uint32_t* target = malloc(g->n * sizeof *target); // kept node each node folds into
    if (!target)
        return NULL;
    size_t kept = 1;
    target[0] = 0;
    for (size_t i = 1; i < g->n; i++) {
        fg_node* n = &g->nodes[i];
        bool keep = n->incl >= threshold && target[n->parent] == n->parent;
        target[i] = keep ? (uint32_t)i : target[n->parent];
        if (keep)
            kept++;
        else if (n->self_count) {
            g->nodes[target[i]].self_bytes += n->self_bytes;
            g->nodes[target[i]].self_count += n->self_count;
        }
    }
    *threshold_out = threshold;
    *nmerged = g->n - kept;
    return target;
}

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
    return json_integer(id == UINT32_MAX ? -1 : (json_int_t)id);
}

// The kept nodes as rows [parent, name, module, loc, relevant, self bytes, self count];
// newid[i] becomes kept node i's row.
static json_t* node_rows(const fg* g, const uint32_t* target, uint32_t* newid) {
    json_t* nodes = json_array();
    for (size_t i = 0; i < g->n; i++) {
        if (target[i] != i)
            continue;
        const fg_node* n = &g->nodes[i];
        newid[i] = (uint32_t)json_array_size(nodes);
        json_t* a = json_array();
        json_array_append_new(a, json_integer(i ? (json_int_t)newid[n->parent] : -1));
        json_array_append_new(a, string_ref(n->name));
        json_array_append_new(a, string_ref(n->module));
        json_array_append_new(a, string_ref(n->loc));
        json_array_append_new(a, json_integer(n->relevant));
        json_array_append_new(a, json_integer((json_int_t)n->self_bytes));
        json_array_append_new(a, json_integer((json_int_t)n->self_count));
        json_array_append_new(nodes, a);
    }
    return nodes;
}

// The moment the page shows: "mode", "what", the time `t` (or step) and "subtitle".
static void describe_moment(json_t* o, const fg* g, enum mode mode, int64_t t, bool steps) {
    char bytes[32], when[32], sub[256];
    mt_format_bytes(g->nodes[0].incl, bytes, sizeof bytes);
    static const char* const modes[] = {"peak", "at", "leaks"};
    json_object_set_new(o, "mode", json_string(modes[mode]));
    if (mode == MODE_LEAKS) {
        snprintf(sub, sizeof sub, "Leaks: %s in %llu blocks still live at the end", bytes,
                 (unsigned long long)g->blocks);
        json_object_set_new(o, "what", json_string("the leaked bytes"));
    } else {
        mr_format_time(t, steps, when, sizeof when);
        snprintf(sub, sizeof sub, "%s: %s live at %s", mode == MODE_PEAK ? "Peak" : "Live heap",
                 bytes, when);
        json_object_set_new(
            o, "what",
            json_string(mode == MODE_PEAK ? "the bytes live at the peak" : "the bytes live then"));
        // An imported NPU heap counts time in allocation steps.
        json_object_set_new(o, steps ? "step" : "time_ns", json_integer(t));
    }
    json_object_set_new(o, "subtitle", json_string(sub));
}

// Threads are listed by tid; rank[slot] is a thread's place in that list.
static uint32_t* thread_ranks(const thread_acc* threads) {
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
    const thread_self *x = a, *y = b;
    if (x->node != y->node)
        return x->node < y->node ? -1 : 1;
    return x->thread < y->thread ? -1 : x->thread > y->thread;
}

// Rows [node row, thread rank, self bytes, self count], sorted. Per-thread self values
// follow their node into the kept ancestor, as the node's own self values do.
static json_t* thread_self_rows(const thread_acc* threads, const uint32_t* target,
                                const uint32_t* newid, const uint32_t* rank) {
    self_table folded = {0};
    int e = mr_u64map_init(&folded.index);
    for (size_t i = 0; i < threads->self.n && e == 0; i++) {
        const thread_self* r = &threads->self.rows[i];
        e = self_table_add(&folded, newid[target[r->node]], rank[r->thread], r->bytes, r->count);
    }
    if (e) {
        self_table_free(&folded);
        return NULL;
    }
    if (folded.n)
        qsort(folded.rows, folded.n, sizeof *folded.rows, cmp_thread_self);
    json_t* ts = json_array();
    for (size_t i = 0; i < folded.n; i++) {
        const thread_self* r = &folded.rows[i];
        json_t* a = json_array();
        json_array_append_new(a, json_integer(r->node));
        json_array_append_new(a, json_integer(r->thread));
        json_array_append_new(a, json_integer((json_int_t)r->bytes));
        json_array_append_new(a, json_integer((json_int_t)r->count));
        json_array_append_new(ts, a);
    }
    self_table_free(&folded);
    return ts;
}

// The thread filter's list, in tid order: {tid, name, bytes}.
static json_t* thread_list(mt_capture* cap, const thread_acc* threads, const uint32_t* rank) {
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
static int add_threads(json_t* o, mt_capture* cap, const thread_acc* threads,
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

// The page's data. `t` is the moment shown (unused for MODE_LEAKS).
static json_t* build_json(fg* g, mt_capture* cap, const uint32_t* target, size_t nmerged,
                          uint64_t threshold, thread_acc* threads, enum mode mode, int64_t t,
                          bool steps) {
    uint32_t* newid = malloc(g->n * sizeof *newid);
    if (!newid)
        return NULL;
    json_t* nodes = node_rows(g, target, newid);
    json_t* o = json_object();
    json_object_set_new(o, "version", json_integer(1));
    json_object_set_new(o, "title", program_title(cap));
    const char* path = mt_capture_path(cap);
    const char* base = strrchr(path, '/');
    json_object_set_new(o, "capture", mr_json_bytes(base ? base + 1 : path));
    describe_moment(o, g, mode, t, steps);
    json_object_set_new(o, "total_bytes", json_integer((json_int_t)g->nodes[0].incl));
    json_object_set_new(o, "total_blocks", json_integer((json_int_t)g->blocks));
    json_object_set_new(o, "merged_below", json_integer((json_int_t)threshold));
    json_object_set_new(o, "merged_frames", json_integer((json_int_t)nmerged));
    json_object_set_new(o, "strings", json_incref(g->strings));
    json_object_set_new(o, "nodes", nodes);
    if (threads && add_threads(o, cap, threads, target, newid)) {
        json_decref(o);
        o = NULL;
    }
    free(newid);
    return o;
}

// ---- options and the replays

// The seq of the last event applied at time `at`: events run in seq order and stop at
// the first one stamped after `at` (0: nothing happened by then).
static int seq_at_time(mt_capture* cap, int64_t at, uint64_t* seq, char* err, size_t errlen) {
    mt_event_iter* it = NULL;
    int rc = mt_event_iter_open(cap, mr_capture_default_heap(cap), &it);
    *seq = 0;
    mt_event ev;
    if (rc == 0) {
        while ((rc = mt_event_iter_next(it, &ev)) == 1 && ev.ts <= at)
            *seq = ev.seq;
    }
    if (rc < 0)
        snprintf(err, errlen, "%s", it ? mt_event_iter_error(it) : "corrupt capture");
    mt_event_iter_close(it);
    return rc < 0 ? rc : 0;
}

typedef struct progress_ctx {
    const char* label;
    uint64_t total;
} progress_ctx;

static int progress(mr_replay* r, const mt_event* ev, const mr_block* freed, void* ud) {
    (void)ev;
    (void)freed;
    const progress_ctx* p = ud;
    if ((r->events & 0xfffff) == 0 && p->total)
        mr_progress(p->label, (double)r->events / (double)p->total);
    return 0;
}

static char* default_output(const char* capture) {
    const char* base = strrchr(capture, '/');
    base = base ? base + 1 : capture;
    size_t n = strlen(base);
    if (n > 3 && !strcmp(base + n - 3, ".db"))
        n -= 3;
    char* out;
    if (asprintf(&out, "memreport-flamegraph-%.*s.html", (int)n, base) < 0)
        return NULL;
    return out;
}

// ---- the command

typedef struct fg_args {
    const char* output; // NULL until the default is made
    bool force, split, all_frames;
    enum mode mode;
    mr_time at;
    const char* at_arg;
    double min_width;
} fg_args;

// Returns MR_OPT_NEXT to go on, else the exit code.
static int parse_args(int argc, char** argv, fg_args* a) {
    static const struct option opts[] = {{"output", required_argument, NULL, 'o'},
                                         {"force", no_argument, NULL, 'f'},
                                         {"peak", no_argument, NULL, 'p'},
                                         {"at", required_argument, NULL, 'a'},
                                         {"leaks", no_argument, NULL, 'l'},
                                         {"split-threads", no_argument, NULL, 's'},
                                         {"min-width", required_argument, NULL, 'm'},
                                         {"all-frames", no_argument, NULL, 'A'},
                                         {"help", no_argument, NULL, 'h'},
                                         {NULL, 0, NULL, 0}};
    *a = (fg_args){.mode = MODE_PEAK, .min_width = 0.0001};
    int modes = 0;
    int c, rc;
    while ((c = getopt_long(argc, argv, "o:fh", opts, NULL)) != -1) {
        switch (c) {
        case 'o':
            a->output = optarg;
            break;
        case 'f':
            a->force = true;
            break;
        case 'p':
            a->mode = MODE_PEAK;
            modes++;
            break;
        case 'a':
            if ((rc = mr_parse_time("--at", optarg, &a->at)))
                return rc;
            a->at_arg = optarg;
            a->mode = MODE_AT;
            modes++;
            break;
        case 'l':
            a->mode = MODE_LEAKS;
            modes++;
            break;
        case 's':
            a->split = true;
            break;
        case 'A':
            a->all_frames = true;
            break;
        case 'm': {
            char* end;
            a->min_width = strtod(optarg, &end);
            if (*end || end == optarg || !(a->min_width >= 0 && a->min_width < 1)) {
                mr_error(NULL, "--min-width: not a fraction in [0, 1): '%s'", optarg);
                return MR_EXIT_USAGE;
            }
            break;
        }
        case 'h':
            fputs(flamegraph_help, stdout);
            return MR_EXIT_OK;
        default: // getopt said what is wrong
            mr_usage_hint(flamegraph_help);
            return MR_EXIT_USAGE;
        }
    }
    if (modes > 1)
        return mr_usage_error(flamegraph_help, "--peak, --at and --leaks exclude each other");
    return MR_OPT_NEXT;
}

// What the steps of one run share.
typedef struct fg_run {
    fg_args args;
    const char* path; // the capture
    mt_capture* cap;
    mr_symbols* sym;
    mr_extent extent;
    int64_t at_ns; // or the step, for an NPU capture
    progress_ctx pc;
    char err[256]; // what is wrong with the capture, when a replay says
} fg_run;

// Opens the capture and its symbols and places --at in it. Returns an exit code.
static int open_input(fg_run* run) {
    int rc = mr_open_capture_symbols(run->path, &run->cap, &run->sym);
    if (rc)
        return rc;
    run->extent = mr_capture_extent(run->cap, mr_capture_default_heap(run->cap));
    if (run->args.mode == MODE_AT)
        rc = mr_time_in_capture("--at", run->args.at_arg, run->args.at, run->path, run->extent,
                                &run->at_ns);
    return rc;
}

// The seq whose live set the page shows: the peak (a first replay finds it), the last
// event at --at, or the end (--leaks).
static int find_stop(fg_run* run, uint64_t* stop) {
    mt_capture* cap = run->cap;
    *stop = UINT64_MAX;
    int e = 0;
    if (run->args.mode == MODE_PEAK) {
        mr_replay r;
        run->pc.label = "flamegraph (finding the peak)";
        if (mr_replay_init(&r, cap, mr_capture_default_heap(cap)))
            e = -ENOMEM;
        else if ((e = mr_replay_run(&r, UINT64_MAX, progress, &run->pc)))
            snprintf(run->err, sizeof run->err, "%s", r.err);
        else
            *stop = r.peak_seq;
        mr_replay_free(&r);
        run->pc.label = "flamegraph (replaying to the peak)";
    } else if (run->args.mode == MODE_AT) {
        e = seq_at_time(cap, run->at_ns, stop, run->err, sizeof run->err);
    }
    return e;
}

// An empty graph: its root "all", the callsite -> node table and the string table.
static int fg_init(fg* g, thread_acc* threads) {
    g->ncallsites = mr_symbols_callsite_count(g->sym);
    g->cap = 1024;
    g->nodes = calloc(g->cap, sizeof *g->nodes);
    g->node_of = calloc((size_t)g->ncallsites + 1, sizeof *g->node_of);
    g->strings = json_array();
    g->string_ids = json_object();
    if (!g->nodes || !g->node_of || mr_u64map_init(&g->children) ||
        mr_u64map_init(&threads->index) || mr_u64map_init(&threads->self.index))
        return -ENOMEM;
    g->n = 1;
    g->nodes[0] = (fg_node){
        .name = intern(g, "all"), .module = UINT32_MAX, .loc = UINT32_MAX, .relevant = true};
    return 0;
}

// Replays up to `stop` and turns the blocks live there into the page's data.
static int replay_to_graph(fg_run* run, fg* g, thread_acc* threads, uint64_t stop, json_t** data) {
    mr_replay r;
    if (mr_replay_init(&r, run->cap, mr_capture_default_heap(run->cap)))
        return -ENOMEM;
    thread_acc* split = run->args.split ? threads : NULL;
    int e;
    if ((e = mr_replay_run(&r, stop, progress, &run->pc)))
        snprintf(run->err, sizeof run->err, "%s", r.err);
    else if ((e = collect(g, &r.live, split)) == 0) {
        for (size_t i = 0; i < g->n; i++)
            g->nodes[i].incl = g->nodes[i].self_bytes;
        uint64_t threshold;
        size_t nmerged;
        uint32_t* target = prune(g, run->args.min_width, &threshold, &nmerged);
        int64_t t = run->args.mode == MODE_PEAK ? r.peak_ts : run->at_ns;
        *data = target ? build_json(g, run->cap, target, nmerged, threshold, split, run->args.mode,
                                    t, run->extent.steps)
                       : NULL;
        free(target);
        if (!*data)
            e = -ENOMEM;
        else // the page's "hide non-relevant frames" starts unchecked
            json_object_set_new(*data, "all_frames", json_boolean(run->args.all_frames));
    }
    mr_replay_free(&r);
    return e;
}

// The page's data for the moment asked: the live set's callsite tree, pruned.
static int live_graph(fg_run* run, uint64_t stop, json_t** data) {
    fg g = {.sym = run->sym};
    thread_acc threads = {0};
    int e = fg_init(&g, &threads);
    if (e == 0)
        e = replay_to_graph(run, &g, &threads, stop, data);
    fg_free(&g);
    mr_u64map_free(&threads.index);
    self_table_free(&threads.self);
    free(threads.tids);
    free(threads.bytes);
    return e;
}

// Writes the page to `output` whole, or leaves nothing. Returns an exit code.
static int write_output(const fg_args* a, json_t* data) {
    mr_output out;
    int rc = mr_output_open(&out, a->output, a->force);
    if (rc)
        return rc;
    if (mr_flamegraph_page_write(out.fp, data)) {
        mr_error(a->output, "cannot write the page");
        mr_output_abort(&out);
        return MR_EXIT_IO;
    }
    return mr_output_commit(&out);
}

int mr_cmd_flamegraph(int argc, char** argv) {
    fg_run run = {.pc = {"flamegraph", 0}};
    int rc = parse_args(argc, argv, &run.args);
    if (rc != MR_OPT_NEXT)
        return rc;
    run.path = mr_opts_input(argc, argv, flamegraph_help);
    if (!run.path)
        return MR_EXIT_USAGE;
    char* def = run.args.output ? NULL : default_output(run.path);
    if (!run.args.output && !(run.args.output = def)) {
        mr_error(run.path, "out of memory");
        return MR_EXIT_IO;
    }
    if ((rc = open_input(&run)) == 0) {
        run.pc.total = (uint64_t)mt_capture_meta_int(run.cap, "events_written", 0);
        uint64_t stop;
        json_t* data = NULL;
        int e = find_stop(&run, &stop);
        if (e == 0)
            e = live_graph(&run, stop, &data);
        mr_progress(run.pc.label, -1);
        if (e) {
            const char* err = run.err;
            mr_error(run.path, "%s",
                     e == -ENOMEM ? "out of memory"
                     : err[0]     ? err
                                  : "corrupt capture");
            rc = e == -ENOMEM ? MR_EXIT_IO : MR_EXIT_BAD_INPUT;
        } else {
            rc = write_output(&run.args, data);
        }
        json_decref(data);
    }
    mr_symbols_free(run.sym);
    mt_capture_close(run.cap);
    free(def);
    return rc;
}
