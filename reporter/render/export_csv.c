// SPDX-License-Identifier: MIT
// The event table as CSV, in msMemScope's memscope_dump layout, for spreadsheets, pandas and
// `sqlite3 .import --csv`: one MALLOC or FREE row per heap event and one MSTX row per mark,
// range start and range end, in time order. Unlike the other formats it streams the events
// (mt_event_iter), not the profile's rows: --range and --thread filter the rows. Memory is
// bounded by the live blocks (to give a FREE its allocation's id and size) and one cached
// stack text per callsite.
#include "export.h"
#include "siphash.h"

#include "memtrace/schema.h"
#include "memtrace/vec.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

static const char csv_header[] = "ID,Event,Event Type,Name,Timestamp(ns),Process Id,Thread ID,"
                                 "Device ID,Ptr,Attr,Call Stack(C)\n";

// One MSTX row: a mark, or one end of a range.
typedef struct mstx_row {
    int64_t ts;
    int64_t tid; // 0: the mark has no thread
    const char* type;
    char* name;
} mstx_row;

typedef struct csv_writer {
    FILE* out;
    const mr_export_input* in;
    const char* event_type; // HOST, or the NPU heap's name
    const char* device;     // host, or N/A for an imported log
    int64_t pid;
    uint64_t next_id;
    char** stacks; // per callsite: the quoted "Call Stack(C)" field, built on first use
    uint32_t nstacks;
    mstx_row* marks;
    size_t nmarks, marks_cap;
} csv_writer;

// The live allocations: address -> (allocation id, size), so a FREE row names its allocation.
// Open addressing with linear probing and backward-shift deletion, keyed SipHash because the
// addresses come from the traced program (see siphash.h).
typedef struct live_alloc {
    uint64_t addr; // 0 marks an empty slot (0 is never a live block's address)
    uint64_t id;
    uint64_t size;
} live_alloc;

typedef struct live_table {
    live_alloc* slots;
    size_t mask; // capacity - 1 (a power of two)
    size_t count;
    uint64_t k0, k1;
} live_table;

static size_t home_of(const live_table* t, uint64_t addr) {
    return (size_t)mr_siphash_u64(t->k0, t->k1, addr) & t->mask;
}

static int live_init(live_table* t) {
    uint64_t key[2];
    mr_siphash_random_key(key, t);
    *t = (live_table){.mask = 1023, .k0 = key[0], .k1 = key[1]};
    t->slots = calloc(t->mask + 1, sizeof *t->slots);
    return t->slots ? 0 : -ENOMEM;
}

static int live_grow(live_table* t) {
    live_table bigger = *t;
    bigger.mask = t->mask * 2 + 1;
    bigger.slots = calloc(bigger.mask + 1, sizeof *bigger.slots);
    if (!bigger.slots)
        return -ENOMEM;
    for (size_t i = 0; i <= t->mask; i++) {
        if (!t->slots[i].addr)
            continue;
        size_t j = home_of(&bigger, t->slots[i].addr);
        while (bigger.slots[j].addr)
            j = (j + 1) & bigger.mask;
        bigger.slots[j] = t->slots[i];
    }
    free(t->slots);
    *t = bigger;
    return 0;
}

// Inserts or replaces (an allocation at an address whose free was missed replaces it).
static int live_put(live_table* t, uint64_t addr, uint64_t id, uint64_t size) {
    if ((t->count + 1) * 2 > t->mask + 1 && live_grow(t)) // at most half full
        return -ENOMEM;
    size_t i = home_of(t, addr);
    while (t->slots[i].addr && t->slots[i].addr != addr)
        i = (i + 1) & t->mask;
    if (!t->slots[i].addr)
        t->count++;
    t->slots[i] = (live_alloc){addr, id, size};
    return 0;
}

// Removes addr; returns true and fills *out if it was live.
static bool live_take(live_table* t, uint64_t addr, live_alloc* out) {
    size_t i = home_of(t, addr);
    while (t->slots[i].addr != addr) {
        if (!t->slots[i].addr)
            return false;
        i = (i + 1) & t->mask;
    }
    *out = t->slots[i];
    // Backward shift: pull later entries of the probe run into the hole, so lookups never
    // need tombstones.
    for (size_t j = (i + 1) & t->mask; t->slots[j].addr; j = (j + 1) & t->mask) {
        size_t home = home_of(t, t->slots[j].addr);
        if (((j - home) & t->mask) >= ((j - i) & t->mask)) {
            t->slots[i] = t->slots[j];
            i = j;
        }
    }
    t->slots[i].addr = 0;
    t->count--;
    return true;
}

// Appends `s` as one RFC 4180 field: quoted (and its quotes doubled) when it holds a comma,
// a quote or a line break, or always when `force`.
static void put_field(FILE* out, const char* s, bool force) {
    bool quote = force || s[strcspn(s, ",\"\r\n")];
    if (!quote) {
        fputs(s, out);
        return;
    }
    putc('"', out);
    for (; *s; s++) {
        if (*s == '"')
            putc('"', out);
        putc(*s, out);
    }
    putc('"', out);
}

// The quoted stack of `leaf` as msMemScope writes it: innermost frame first, each frame
// ("function file:line") followed by a newline.
static char* stack_field(const mr_export_input* in, uint32_t leaf) {
    static const mr_symloc* locs[MR_EXPORT_MAX_LOCS];
    size_t n = leaf ? mr_export_stack_locs(in, leaf, locs, MR_EXPORT_MAX_LOCS) : 0;
    char* text = NULL;
    size_t size = 0;
    FILE* mem = open_memstream(&text, &size);
    if (!mem)
        return NULL;
    char line[32];
    for (size_t i = n; i-- > 0;) {
        fputs(locs[i]->function, mem);
        if (locs[i]->file) {
            putc(' ', mem);
            fputs(locs[i]->file, mem);
            snprintf(line, sizeof line, ":%d", locs[i]->line);
            fputs(line, mem);
        }
        putc('\n', mem);
    }
    if (fclose(mem))
        return NULL;
    // Quote once here, so each row only copies the cached field.
    char* field = NULL;
    size = 0;
    mem = open_memstream(&field, &size);
    if (mem) {
        put_field(mem, text, true);
        if (fclose(mem)) {
            free(field);
            field = NULL;
        }
    }
    free(text);
    return field;
}

static const char* cached_stack(csv_writer* w, uint32_t callsite) {
    if (callsite >= w->nstacks)
        callsite = 0; // an id outside the tree reads as no stack
    if (!w->stacks[callsite])
        w->stacks[callsite] = stack_field(w->in, callsite);
    return w->stacks[callsite];
}

static void put_mstx(csv_writer* w, const mstx_row* m) {
    fprintf(w->out, "%" PRIu64 ",MSTX,%s,", ++w->next_id, m->type);
    put_field(w->out, m->name, false);
    fprintf(w->out, ",%" PRId64 ",%" PRId64 ",", m->ts, w->pid);
    if (m->tid)
        fprintf(w->out, "%" PRId64, m->tid);
    fprintf(w->out, ",%s,N/A,\"{}\",\"\"\n", w->device);
}

static bool wanted(const mr_query* q, int64_t ts, int64_t tid) {
    return ts >= q->from && ts <= q->to && (!q->tid || (int64_t)q->tid == tid);
}

static int add_mstx(csv_writer* w, int64_t ts, int64_t tid, const char* type, const char* name) {
    if (!wanted(w->in->query, ts, tid))
        return 0;
    if (mt_vec_grow(&w->marks, &w->marks_cap, w->nmarks + 1, sizeof *w->marks))
        return -ENOMEM;
    char* copy = strdup(name ? name : "");
    if (!copy)
        return -ENOMEM;
    w->marks[w->nmarks++] = (mstx_row){ts, tid, type, copy};
    return 0;
}

// Marks become "Mark" rows, ranges a "Range_start" and (when closed) a "Range_end" row.
static int collect_mark(void* ud, const mt_mark_rec* m) {
    csv_writer* w = ud;
    int64_t tid = m->has_tid ? m->tid : 0;
    bool range = m->has_end || !strcmp(m->kind, "range");
    int rc = add_mstx(w, m->ts_begin, tid, range ? "Range_start" : "Mark", m->name);
    if (!rc && range && m->has_end)
        rc = add_mstx(w, m->ts_end, tid, "Range_end", m->name);
    return rc;
}

static int by_time(const void* a, const void* b) {
    const mstx_row *x = a, *y = b;
    return (x->ts > y->ts) - (x->ts < y->ts);
}

static int heap_names(void* ud, const mt_heap_rec* h) {
    csv_writer* w = ud;
    if (h->id == w->in->query->heap && h->kind && !strcmp(h->kind, "npu")) {
        w->event_type = strdup(h->name ? h->name : "NPU");
        w->device = "N/A";
        return w->event_type ? 0 : -ENOMEM;
    }
    return 0;
}

static int put_event(csv_writer* w, const mt_event* ev, uint64_t alloc_id, uint64_t size) {
    const char* stack = cached_stack(w, ev->callsite);
    if (!stack)
        return -ENOMEM;
    bool alloc = mt_kind_is_alloc(ev->kind);
    fprintf(w->out,
            "%" PRIu64 ",%s,%s,N/A,%" PRId64 ",%" PRId64 ",%" PRIu32 ",%s,0x%" PRIx64
            ",\"{allocation_id:%" PRIu64 ",addr:0x%" PRIx64 ",size:%" PRIu64 "}\",",
            ++w->next_id, alloc ? "MALLOC" : "FREE", w->event_type, ev->ts, w->pid, ev->tid,
            w->device, ev->addr, alloc_id, ev->addr, size);
    fputs(stack, w->out);
    putc('\n', w->out);
    return 0;
}

// Replays every event (the live blocks must see all of them) and writes the wanted ones, the
// MSTX rows merged in before the first event later than them.
static int write_rows(csv_writer* w, mt_event_iter* it, live_table* live, char* err,
                      size_t errlen) {
    size_t next_mark = 0;
    mt_event ev;
    int rc;
    while ((rc = mt_event_iter_next(it, &ev)) == 1) {
        // allocation_id is the seq of the allocating event; a free of a block allocated
        // before tracing started has id 0 and size 0.
        uint64_t alloc_id = 0, size = ev.size;
        if (mt_kind_is_alloc(ev.kind)) {
            alloc_id = ev.seq;
            if (ev.addr && live_put(live, ev.addr, ev.seq, ev.size))
                return -ENOMEM;
        } else if (mt_kind_is_free(ev.kind)) {
            live_alloc a;
            if (ev.addr && live_take(live, ev.addr, &a)) {
                alloc_id = a.id;
                size = a.size;
            }
        } else {
            continue;
        }
        if (!wanted(w->in->query, ev.ts, ev.tid))
            continue;
        while (next_mark < w->nmarks && w->marks[next_mark].ts <= ev.ts)
            put_mstx(w, &w->marks[next_mark++]);
        if (put_event(w, &ev, alloc_id, size))
            return -ENOMEM;
    }
    if (rc < 0) {
        snprintf(err, errlen, "%s", mt_event_iter_error(it));
        return rc;
    }
    while (next_mark < w->nmarks)
        put_mstx(w, &w->marks[next_mark++]);
    return 0;
}

static int write_csv(csv_writer* w, char* err, size_t errlen) {
    const mr_export_input* in = w->in;
    int rc = mt_capture_heaps(in->cap, heap_names, w);
    mt_mark_query mq = {.heap = in->query->heap, .by_time = true};
    if (!rc)
        rc = mt_capture_marks(in->cap, &mq, collect_mark, w);
    if (rc == -EPROTO) {
        snprintf(err, errlen, "%s", mt_capture_error(in->cap));
        return rc;
    }
    if (rc)
        return rc;
    // Range ends come after their starts: sort again, keeping equal times as written.
    if (w->nmarks > 1) // qsort must never see the NULL of an empty vector
        qsort(w->marks, w->nmarks, sizeof *w->marks, by_time);
    live_table live;
    if (live_init(&live))
        return -ENOMEM;
    mt_event_iter* it;
    rc = mt_event_iter_open(in->cap, in->query->heap, &it);
    if (rc)
        snprintf(err, errlen, "%s", it ? mt_event_iter_error(it) : "cannot read the events");
    else {
        fputs(csv_header, w->out);
        rc = write_rows(w, it, &live, err, errlen);
    }
    mt_event_iter_close(it);
    free(live.slots);
    return rc;
}

int mr_export_csv(FILE* out, const mr_export_input* in, char* err, size_t errlen) {
    csv_writer w = {.out = out,
                    .in = in,
                    .event_type = "HOST",
                    .device = "host",
                    .pid = mt_capture_meta_int(in->cap, "pid", 0),
                    .nstacks = mr_symbols_callsite_count(in->sym)};
    w.stacks = calloc(w.nstacks ? w.nstacks : 1, sizeof *w.stacks);
    int rc = w.stacks ? write_csv(&w, err, errlen) : -ENOMEM;
    if (rc == -ENOMEM)
        snprintf(err, errlen, "out of memory");
    for (uint32_t i = 0; i < w.nstacks; i++)
        free(w.stacks[i]);
    free(w.stacks);
    for (size_t i = 0; i < w.nmarks; i++)
        free(w.marks[i].name);
    free(w.marks);
    if (w.event_type && strcmp(w.event_type, "HOST"))
        free((char*)w.event_type);
    return rc;
}
