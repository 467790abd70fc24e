// SPDX-License-Identifier: MIT
// massif.out, valgrind massif's file format (ms_print, massif-visualizer): the heap's live
// bytes in 100 snapshots evenly spaced over the run, plus a detailed snapshot at the
// profile's moment (the peak unless --at/--leaks) holding the allocation tree, allocation
// functions at the root and callers below, as massif draws it. Times are milliseconds
// (fractional: the capture's clock is in ns), or allocation steps ("i") for an NPU log.
#include "escape.h"
#include "export.h"
#include "json.h"
#include "replay.h"
#include "segments.h"

#include "memtrace/schema.h"
#include "memtrace/vec.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#define SNAPSHOTS 100
// Children below 1% of the snapshot's bytes are merged into one "below threshold" line,
// massif's default --threshold.
#define THRESHOLD_PERMILLE 10

typedef struct sample {
    int64_t ts;
    uint64_t bytes;
} sample;

// The detailed tree: one node per location, children linked by index.
typedef struct node {
    const mr_symloc* loc;
    uint32_t frame;
    uint64_t bytes;
    uint32_t child, sibling; // 0: none (node 0 is the root)
} node;

typedef struct massif {
    FILE* out;
    const mr_export_input* in;
    mr_profile prof; // built here (the command builds none for massif)
    sample samples[SNAPSHOTS];
    size_t nsamples;
    node* nodes;
    size_t nnodes, nodes_cap;
    uint64_t* frame_pc; // per frame id, for the 0x<addr> of a node
    int64_t max_frame;
} massif;

// ---- the live bytes over time

// The selected thread(s)' live bytes along a run of consecutive events (the whole run, or
// a segment of it: segments.h), and the samples taken on the way: a sample is the value
// before the first event stamped after its time.
typedef struct track {
    const massif* m;
    uint64_t live; // since the run's first event (wrapping below zero in a segment)
    size_t next;   // samples [0, next) taken
    uint64_t at[SNAPSHOTS];
} track;

static int on_event(mr_replay* r, const mt_event* ev, const mr_block* freed, void* ud) {
    track* t = ud;
    uint32_t tid = t->m->in->query->tid;
    while (t->next < t->m->nsamples && t->m->samples[t->next].ts < ev->ts)
        t->at[t->next++] = t->live;
    if (mt_kind_is_alloc(ev->kind) && (!tid || ev->tid == tid))
        t->live += ev->size;
    else if (freed && (!tid || freed->tid == tid))
        t->live -= freed->size;
    (void)r;
    return 0;
}

// The samples from the tracks of consecutive runs, in order: each sample from the first
// track that took it, on top of the live bytes the runs before it added.
static void combine(massif* m, const track* t, size_t n) {
    uint64_t base = 0;
    size_t taken = 0;
    for (size_t k = 0; k < n; k++) {
        for (; taken < t[k].next; taken++)
            m->samples[taken].bytes = base + t[k].at[taken];
        base += t[k].live;
    }
    for (; taken < m->nsamples; taken++)
        m->samples[taken].bytes = base;
}

// The samples from the segments replayed at once. Returns as mr_segments_run.
static int sample_segments(massif* m, const mr_segments* s, char* err, size_t errlen) {
    track* t = calloc(s->n, sizeof *t);
    void** uds = calloc(s->n, sizeof *uds);
    int rc = t && uds ? 0 : -ENOMEM;
    for (size_t i = 0; !rc && i < s->n; i++) {
        t[i].m = m;
        uds[i] = &t[i];
    }
    mr_segments_job job = {.fn = on_event, .uds = uds, .progress = m->in->query->progress};
    if (!rc)
        rc = mr_segments_run(s, &job, err, errlen);
    if (!rc)
        combine(m, t, s->n);
    free(uds);
    free(t);
    return rc;
}

// Builds the model (the tree's moment) and samples the live bytes: in segments replayed
// at once where the checkpoints allow (the model then comes from them), else in the one
// replay that builds the model. The sample times come from the chunks' headers, known
// before any event is read.
static int build_and_sample(massif* m, char* err, size_t errlen) {
    mt_heap_span span;
    if (mt_capture_heap_span(m->in->cap, m->in->query->heap, &span) < 0) {
        snprintf(err, errlen, "%s", mt_capture_error(m->in->cap));
        return -EPROTO;
    }
    int64_t length = span.last_ts - span.first_ts;
    m->nsamples = length > 0 ? SNAPSHOTS : 1;
    // In integers: a length near 2^63 (times are within +-2^62) rounds up in a double.
    int64_t steps = m->nsamples > 1 ? (int64_t)m->nsamples - 1 : 1;
    for (size_t i = 0; i < m->nsamples; i++)
        m->samples[i].ts =
            span.first_ts + length / steps * (int64_t)i + length % steps * (int64_t)i / steps;
    mr_query q = *m->in->query;
    mr_segments s;
    int rc = mr_segments_plan(m->in->cap, q.heap, q.progress, &s, err, errlen);
    if (rc == 0) {
        rc = sample_segments(m, &s, err, errlen);
        mr_segments_free(&s);
        if (rc == 0)
            return mr_profile_build(m->in->cap, &q, &m->prof, err, errlen);
    }
    if (rc < 0)
        return rc;
    err[0] = '\0'; // why not: the replay below reads the events regardless
    track whole = {.m = m};
    q.observe = on_event;
    q.observe_ud = &whole;
    rc = mr_profile_build(m->in->cap, &q, &m->prof, err, errlen);
    combine(m, &whole, 1);
    return rc;
}

// ---- the detailed tree

static int frame_pc(void* ud, const mt_frame_info* f) {
    massif* m = ud;
    if (f->id > 0 && f->id <= m->max_frame)
        m->frame_pc[f->id] = f->pc;
    return 0;
}

static int child_of(massif* m, uint32_t parent, const mr_symloc* loc, uint32_t frame,
                    uint32_t* out) {
    for (uint32_t c = m->nodes[parent].child; c; c = m->nodes[c].sibling)
        if (m->nodes[c].loc == loc) {
            *out = c;
            return 0;
        }
    if (mt_vec_grow(&m->nodes, &m->nodes_cap, m->nnodes + 1, sizeof *m->nodes))
        return -ENOMEM;
    m->nodes[m->nnodes] = (node){loc, frame, 0, 0, m->nodes[parent].child};
    m->nodes[parent].child = (uint32_t)m->nnodes;
    *out = (uint32_t)m->nnodes++;
    return 0;
}

// Adds a callsite's bytes along its stack, leaf first: the function that called the
// allocator is a child of the root, its callers below it.
static int add_stack(massif* m, uint32_t leaf, uint64_t bytes) {
    static uint32_t frames[MR_EXPORT_MAX_LOCS];
    const mr_export_input* in = m->in;
    size_t depth = mr_symbols_stack(in->sym, leaf, in->all_frames, frames, MR_EXPORT_MAX_LOCS);
    if (depth > MR_EXPORT_MAX_LOCS)
        depth = MR_EXPORT_MAX_LOCS;
    uint32_t at = 0;
    m->nodes[0].bytes += bytes;
    for (size_t i = 0; i < depth; i++) {
        const mr_symloc* locs;
        size_t nl = mr_symbols_frame_locs(in->sym, frames[i], &locs);
        for (size_t k = 0; k < nl; k++) {
            if (child_of(m, at, &locs[k], frames[i], &at))
                return -ENOMEM;
            m->nodes[at].bytes += bytes;
        }
    }
    return 0;
}

static int build_tree(massif* m) {
    int64_t max_callsite;
    int rc = mt_capture_stack_ids(m->in->cap, &m->max_frame, &max_callsite);
    if (rc)
        return rc;
    m->frame_pc = calloc((size_t)m->max_frame + 1, sizeof *m->frame_pc);
    if (!m->frame_pc || mt_vec_grow(&m->nodes, &m->nodes_cap, 1, sizeof *m->nodes))
        return -ENOMEM;
    if ((rc = mt_capture_frames(m->in->cap, frame_pc, m)))
        return rc;
    m->nodes[0] = (node){0};
    m->nnodes = 1;
    const mr_profile* p = &m->prof;
    for (size_t i = 0; i < p->nrows && !rc; i++)
        if (p->rows[i].live_bytes)
            rc = add_stack(m, p->rows[i].callsite, p->rows[i].live_bytes);
    return rc;
}

// A name on one line of the file: ms_print reads line by line.
static void put_name(FILE* out, const char* s) {
    for (; *s; s++)
        putc(*s == '\n' || *s == '\r' ? ' ' : *s, out);
}

static const node* g_nodes; // for by_bytes: qsort has no user pointer

static int by_bytes(const void* a, const void* b) {
    uint64_t x = g_nodes[*(const uint32_t*)a].bytes, y = g_nodes[*(const uint32_t*)b].bytes;
    return (x < y) - (x > y);
}

static int put_node(massif* m, uint32_t n, int depth, uint64_t total) {
    // The children above the threshold, biggest first; the rest as one line.
    size_t nc = 0, cap = 0, big = 0;
    uint32_t* kids = NULL;
    uint64_t small_bytes = 0;
    for (uint32_t c = m->nodes[n].child; c; c = m->nodes[c].sibling) {
        if (mt_vec_grow(&kids, &cap, nc + 1, sizeof *kids)) {
            free(kids);
            return -ENOMEM;
        }
        kids[nc++] = c;
    }
    g_nodes = m->nodes;
    if (nc > 1) // a leaf has no children: kids is NULL, which qsort must never see
        qsort(kids, nc, sizeof *kids, by_bytes);
    // bytes * 1000 >= total * permille, without the products (bytes reach 2^63-1).
    uint64_t need =
        total / 1000 * THRESHOLD_PERMILLE + (total % 1000 * THRESHOLD_PERMILLE + 999) / 1000;
    while (big < nc && m->nodes[kids[big]].bytes >= need && m->nodes[kids[big]].bytes)
        big++;
    for (size_t i = big; i < nc; i++)
        small_bytes += m->nodes[kids[i]].bytes;
    fprintf(m->out, "%*sn%zu: %" PRIu64, depth, "", big + (big < nc), m->nodes[n].bytes);
    if (n == 0)
        fputs(" (heap allocation functions) malloc/new/new[], --alloc-fns, etc.\n", m->out);
    else {
        const node* x = &m->nodes[n];
        uint64_t pc = x->frame <= (uint64_t)m->max_frame ? m->frame_pc[x->frame] : 0;
        fprintf(m->out, " 0x%" PRIX64 ": ", pc);
        put_name(m->out, x->loc->function);
        if (x->loc->file) {
            fputs(" (", m->out);
            put_name(m->out, x->loc->file);
            fprintf(m->out, ":%d)\n", x->loc->line);
        } else {
            const char* module = mr_symbols_frame_module(m->in->sym, x->frame);
            fputs(" (in ", m->out);
            put_name(m->out, module ? module : "???");
            fputs(")\n", m->out);
        }
    }
    int rc = 0;
    for (size_t i = 0; i < big && !rc; i++)
        rc = put_node(m, kids[i], depth + 1, total);
    if (!rc && big < nc)
        fprintf(m->out, "%*sn0: %" PRIu64 " in %zu place%s, below massif's threshold (1.00%%)\n",
                depth + 1, "", small_bytes, nc - big, nc - big == 1 ? "" : "s");
    free(kids);
    return rc;
}

// ---- the file

static void put_time(massif* m, int64_t ts) {
    if (m->in->steps)
        fprintf(m->out, "time=%" PRId64 "\n", ts);
    else
        fprintf(m->out, "time=%s%" PRIu64 ".%06" PRIu64 "\n", ts < 0 ? "-" : "",
                (ts < 0 ? 0 - (uint64_t)ts : (uint64_t)ts) / 1000000,
                (ts < 0 ? 0 - (uint64_t)ts : (uint64_t)ts) % 1000000);
}

static int put_snapshot(massif* m, int index, int64_t ts, uint64_t bytes, const char* tree) {
    fprintf(m->out, "#-----------\nsnapshot=%d\n#-----------\n", index);
    put_time(m, ts);
    fprintf(m->out, "mem_heap_B=%" PRIu64 "\nmem_heap_extra_B=0\nmem_stacks_B=0\nheap_tree=%s\n",
            bytes, tree);
    return strcmp(tree, "empty") ? put_node(m, 0, 0, bytes) : 0;
}

// The command line from meta 'cmdline' (a JSON array), else the executable.
static void put_cmd(massif* m) {
    char* text = mt_capture_meta_text(m->in->cap, "cmdline");
    json_t* argv = text ? mr_json_loads_bytes(text) : NULL;
    fputs("cmd:", m->out);
    size_t i;
    json_t* arg;
    if (json_is_array(argv) && json_array_size(argv)) {
        json_array_foreach(argv, i, arg) {
            putc(' ', m->out);
            put_name(m->out, json_is_string(arg) ? json_string_value(arg) : "?");
        }
    } else {
        char* exe = mt_capture_meta_text(m->in->cap, "exe");
        putc(' ', m->out);
        put_name(m->out, exe ? exe : "(unknown)");
        free(exe);
    }
    putc('\n', m->out);
    json_decref(argv);
    free(text);
}

static int write_massif(massif* m, char* err, size_t errlen) {
    int rc = build_and_sample(m, err, errlen);
    if (rc)
        return rc;
    if ((rc = build_tree(m))) {
        if (rc == -EPROTO)
            snprintf(err, errlen, "%s", mt_capture_error(m->in->cap));
        return rc;
    }
    const mr_profile* p = &m->prof;
    const char* tree = m->in->query->moment == MR_AT_PEAK ? "peak" : "detailed";
    fputs("desc: memreport export --format massif\n", m->out);
    put_cmd(m);
    fprintf(m->out, "time_unit: %s\n", m->in->steps ? "i" : "ms");
    // The moment's snapshot goes before the first sample later than it.
    int index = 0;
    bool moment_done = false;
    for (size_t i = 0; i < m->nsamples && !rc; i++) {
        if (!moment_done && m->samples[i].ts > p->moment_ts) {
            rc = put_snapshot(m, index++, p->moment_ts, p->live_bytes, tree);
            moment_done = true;
        }
        if (!rc)
            rc = put_snapshot(m, index++, m->samples[i].ts, m->samples[i].bytes, "empty");
    }
    if (!rc && !moment_done)
        rc = put_snapshot(m, index, p->moment_ts, p->live_bytes, tree);
    if (rc == -ENOMEM)
        snprintf(err, errlen, "out of memory");
    return rc;
}

int mr_export_massif(FILE* out, const mr_export_input* in, char* err, size_t errlen) {
    massif* m = calloc(1, sizeof *m);
    if (!m) {
        snprintf(err, errlen, "out of memory");
        return -ENOMEM;
    }
    m->out = out;
    m->in = in;
    int rc = write_massif(m, err, errlen);
    if (rc == -ENOMEM)
        snprintf(err, errlen, "out of memory");
    mr_profile_free(&m->prof);
    free(m->nodes);
    free(m->frame_pc);
    free(m);
    return rc;
}
