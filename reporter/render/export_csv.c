// SPDX-License-Identifier: MIT
// The event table as CSV, in msMemScope's memscope_dump layout, for spreadsheets, pandas and
// `sqlite3 .import --csv`: one MALLOC or FREE row per heap event and one MSTX row per mark,
// range start and range end, in time order. Unlike the other formats it streams the events
// (mt_event_iter), not the profile's rows: --range and --thread filter the rows. Memory is
// bounded by the live blocks (to give a FREE its allocation's id and size) and one cached
// stack text per callsite. Several processes (export.h): each one's rows in turn, in tree
// order, under its pid, with times on one axis from the earliest start. A sampled capture's
// rows give each event's requested size as `size` (true of that event) and, in Attr, the
// bytes it stands for as `estimated_size` (what the other reports add up). A block live at
// the end of a capture whose leak scan ran has its kind in its MALLOC row's Attr
// (`leak_kind:definitely_lost`...; docs/leaks.md).
#include "export.h"
#include "extent.h"
#include "heapmap.h"
#include "leak_kinds.h"
#include "messages.h"
#include "replay.h"

#include "memtrace/sampling.h"
#include "memtrace/schema.h"
#include "memtrace/units.h"
#include "memtrace/vec.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

static const char csv_header[] = "ID,Event,Event Type,Name,Timestamp(ns),Process Id,Thread ID,"
                                 "Device ID,Ptr,Attr,Call Stack(C)\n";

// One MSTX row: a mark, or one end of a range.
typedef struct mstx_row {
    int64_t ts;
    int64_t tid; // 0: the mark has no thread
    const char* type;
    char* name; // as a CSV field, quoted if need be
} mstx_row;

// A callsite's "Call Stack(C)" field, quoted once: a row only copies it.
typedef struct quoted_stack {
    char* text;
    size_t len;
} quoted_stack;

// A 10M-event capture makes 3 GB of CSV. Rows are formatted by hand into one buffer
// (fprintf and fputs per field were most of the CPU time the kernel's copy does not take)
// and written by writev in batches: the formatted parts from the buffer, each stack field
// straight from its cache (copying 2 GB of stacks into the buffer first was the next third).
enum { OUT_CHUNK = 1 << 20, OUT_IOVS = 1024, SHARED_MIN = 64 };

typedef struct csv_writer {
    FILE* out;
    const mr_export_input* in;
    const char* event_type; // HOST, or the NPU heap's name
    const char* device;     // host, or N/A for an imported log
    int64_t pid;
    int64_t shift;         // ns added to every time: the process's start after the earliest one
    uint64_t sample_bytes; // a sampled capture's mean interval (0: not sampled)
    bool header;           // written (several processes: once)
    uint64_t next_id;
    int fd;    // out's descriptor, written directly (-1: out has none, fwrite)
    char* buf; // rows are formatted here
    size_t buf_len;
    size_t seg; // start of the bytes of buf not yet in iov
    struct iovec iov[OUT_IOVS];
    size_t niov;
    int write_err;        // errno of a failed write: nothing more is written
    mr_u64map verdicts;   // the leak scan's: allocation seq -> kind (empty without one)
    quoted_stack* stacks; // per callsite, built on first use
    uint32_t nstacks;
    mstx_row* marks;
    size_t nmarks, marks_cap;
    uint64_t written; // bytes handed to the output so far
    bool warned;      // the size of the whole was told
} csv_writer;

static void close_segment(csv_writer* w) {
    if (w->buf_len > w->seg)
        w->iov[w->niov++] = (struct iovec){w->buf + w->seg, w->buf_len - w->seg};
    w->seg = w->buf_len;
}

static void write_iovs(csv_writer* w, struct iovec* v, size_t n) {
    for (; w->fd < 0 && n > 0; v++, n--)
        if (fwrite(v->iov_base, 1, v->iov_len, w->out) != v->iov_len)
            w->write_err = errno ? errno : EIO;
    while (n > 0 && !w->write_err) {
        ssize_t done = writev(w->fd, v, n < IOV_MAX ? (int)n : IOV_MAX);
        if (done <= 0) {
            if (done == 0 || errno != EINTR)
                w->write_err = done ? errno : EIO;
            continue;
        }
        for (; n > 0 && (size_t)done >= v->iov_len; v++, n--)
            done -= (ssize_t)v->iov_len;
        if (n > 0) { // a short write: the rest of this part next time
            v->iov_base = (char*)v->iov_base + done;
            v->iov_len -= (size_t)done;
        }
    }
}

// Writes out everything formatted or queued so far.
static void flush_rows(csv_writer* w) {
    close_segment(w);
    for (size_t i = 0; i < w->niov; i++)
        w->written += w->iov[i].iov_len;
    if (!w->write_err)
        write_iovs(w, w->iov, w->niov);
    w->niov = w->buf_len = w->seg = 0;
}

// Makes room for n more bytes; false when n cannot fit even in an empty buffer.
static bool room_for(csv_writer* w, size_t n) {
    if (w->buf_len + n > OUT_CHUNK)
        flush_rows(w);
    return n <= OUT_CHUNK;
}

static void put_bytes(csv_writer* w, const char* s, size_t n) {
    if (room_for(w, n)) {
        memcpy(w->buf + w->buf_len, s, n);
        w->buf_len += n;
    } else {
        fwrite(s, 1, n, w->out); // the buffer is flushed: order is kept
    }
}

// Bytes that stay in place until the end (a cached stack): queued, not copied.
static void put_shared(csv_writer* w, const char* s, size_t n) {
    if (n < SHARED_MIN) {
        put_bytes(w, s, n);
        return;
    }
    close_segment(w);
    w->iov[w->niov++] = (struct iovec){(void*)s, n};
    if (w->niov + 2 > OUT_IOVS) // room for the next segment and shared part
        flush_rows(w);
}

static void put_str(csv_writer* w, const char* s) {
    put_bytes(w, s, strlen(s));
}

static void put_char(csv_writer* w, char c) {
    room_for(w, 1);
    w->buf[w->buf_len++] = c;
}

// Decimal, as printf's %llu, two digits per division (five numbers a row).
static void put_u64(csv_writer* w, uint64_t v) {
    static const char pairs[] = "00010203040506070809101112131415161718192021222324"
                                "25262728293031323334353637383940414243444546474849"
                                "50515253545556575859606162636465666768697071727374"
                                "75767778798081828384858687888990919293949596979899";
    char digits[20];
    size_t n = 0;
    while (v >= 100) {
        const char* p = &pairs[2 * (v % 100)];
        v /= 100;
        n += 2;
        memcpy(digits + sizeof digits - n, p, 2);
    }
    if (v >= 10) {
        n += 2;
        memcpy(digits + sizeof digits - n, &pairs[2 * v], 2);
    } else {
        digits[sizeof digits - ++n] = (char)('0' + v);
    }
    put_bytes(w, digits + sizeof digits - n, n);
}

static void put_i64(csv_writer* w, int64_t v) {
    if (v < 0) {
        put_char(w, '-');
        put_u64(w, -(uint64_t)v);
    } else {
        put_u64(w, (uint64_t)v);
    }
}

// Lowercase hex with 0x, as printf's 0x%llx.
static void put_hex(csv_writer* w, uint64_t v) {
    static const char hex[] = "0123456789abcdef";
    char digits[18];
    size_t n = 0;
    do {
        digits[sizeof digits - ++n] = hex[v & 15];
        v >>= 4;
    } while (v);
    digits[sizeof digits - ++n] = 'x';
    digits[sizeof digits - ++n] = '0';
    put_bytes(w, digits + sizeof digits - n, n);
}

#define PUT_LITERAL(w, s) put_bytes((w), (s), sizeof(s) - 1)

// `s` as one RFC 4180 field, in a new string: quoted (and its quotes doubled) when it holds
// a comma, a quote or a line break, or always when `force`. NULL when out of memory.
static char* csv_field(const char* s, bool force) {
    if (!force && !s[strcspn(s, ",\"\r\n")])
        return strdup(s);
    char* field = NULL;
    size_t size = 0;
    FILE* mem = open_memstream(&field, &size);
    if (!mem)
        return NULL;
    putc('"', mem);
    for (; *s; s++) {
        if (*s == '"')
            putc('"', mem);
        putc(*s, mem);
    }
    putc('"', mem);
    if (fclose(mem)) {
        free(field);
        return NULL;
    }
    return field;
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
    char* field = csv_field(text, true);
    free(text);
    return field;
}

static const quoted_stack* cached_stack(csv_writer* w, uint32_t callsite) {
    if (callsite >= w->nstacks)
        callsite = 0; // an id outside the tree reads as no stack
    quoted_stack* q = &w->stacks[callsite];
    if (!q->text) {
        q->text = stack_field(w->in, callsite);
        if (!q->text)
            return NULL;
        q->len = strlen(q->text);
    }
    return q;
}

static void put_mstx(csv_writer* w, const mstx_row* m) {
    put_u64(w, ++w->next_id);
    PUT_LITERAL(w, ",MSTX,");
    put_str(w, m->type);
    put_char(w, ',');
    put_str(w, m->name);
    put_char(w, ',');
    put_i64(w, m->ts + w->shift);
    put_char(w, ',');
    put_i64(w, w->pid);
    put_char(w, ',');
    if (m->tid)
        put_i64(w, m->tid);
    put_char(w, ',');
    put_str(w, w->device);
    PUT_LITERAL(w, ",N/A,\"{}\",\"\"\n");
}

static bool wanted(const mr_query* q, int64_t ts, int64_t tid) {
    return ts >= q->from && ts <= q->to && (!q->tid || (int64_t)q->tid == tid);
}

static int add_mstx(csv_writer* w, int64_t ts, int64_t tid, const char* type, const char* name) {
    if (!wanted(w->in->query, ts, tid))
        return 0;
    if (mt_vec_grow(&w->marks, &w->marks_cap, w->nmarks + 1, sizeof *w->marks))
        return -ENOMEM;
    char* copy = csv_field(name ? name : "", false);
    if (!copy)
        return -ENOMEM;
    w->marks[w->nmarks++] = (mstx_row){ts, tid, type, copy};
    return 0;
}

// Marks become "Mark" rows, ranges a "Range_start" and (when closed) a "Range_end" row. The
// kind decides: the tracer stores a point mark with its end equal to its start.
static int collect_mark(void* ud, const mt_mark_rec* m) {
    csv_writer* w = ud;
    int64_t tid = m->has_tid ? m->tid : 0;
    bool range = m->kind && !strcmp(m->kind, "range");
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

// The bytes an event of `size` requested bytes stands for in a sampled capture (a free: those
// of its allocation); `size` for what is never sampled (memtrace/sampling.h).
static uint64_t estimated_size(const csv_writer* w, const mt_event* ev, uint64_t size) {
    int kind = ev->kind;
    if (mt_kind_is_free(kind))
        kind = kind == MT_KIND_CUSTOM_FREE ? MT_KIND_CUSTOM_ALLOC : MT_KIND_MALLOC;
    return mt_sample_kind(ev->heap, kind) ? mt_sample_weight_bytes(size, w->sample_bytes) : size;
}

static int put_event(csv_writer* w, const mt_event* ev, uint64_t alloc_id, uint64_t size) {
    const quoted_stack* stack = cached_stack(w, ev->callsite);
    if (!stack)
        return -ENOMEM;
    put_u64(w, ++w->next_id);
    if (mt_kind_is_alloc(ev->kind))
        PUT_LITERAL(w, ",MALLOC,");
    else
        PUT_LITERAL(w, ",FREE,");
    put_str(w, w->event_type);
    PUT_LITERAL(w, ",N/A,");
    put_i64(w, ev->ts + w->shift);
    put_char(w, ',');
    put_i64(w, w->pid);
    put_char(w, ',');
    put_u64(w, ev->tid);
    put_char(w, ',');
    put_str(w, w->device);
    put_char(w, ',');
    put_hex(w, ev->addr);
    PUT_LITERAL(w, ",\"{allocation_id:");
    put_u64(w, alloc_id);
    PUT_LITERAL(w, ",addr:");
    put_hex(w, ev->addr);
    PUT_LITERAL(w, ",size:");
    put_u64(w, size);
    if (w->sample_bytes && (alloc_id || mt_kind_is_alloc(ev->kind))) {
        PUT_LITERAL(w, ",estimated_size:");
        put_u64(w, estimated_size(w, ev, size));
    }
    const uint64_t* kind = w->verdicts.count && mt_kind_is_alloc(ev->kind)
                               ? mr_u64map_get(&w->verdicts, ev->seq)
                               : NULL;
    if (kind) {
        PUT_LITERAL(w, ",leak_kind:");
        put_str(w, mt_leak_kind_name((int)*kind));
    }
    PUT_LITERAL(w, "}\",");
    put_shared(w, stack->text, stack->len);
    put_char(w, '\n');
    return 0;
}

// The events, read LOOKAHEAD ahead of the one being written so that the live table's slot of
// each is prefetched well before it is needed: random probes into a table of a million
// blocks were half of the CPU time of an export that stalled on each.
enum { LOOKAHEAD = 16 };

typedef struct event_window {
    mt_event_iter* it;
    const mr_heapmap* live;
    mt_event ring[LOOKAHEAD];
    uint64_t hash[LOOKAHEAD]; // of each ring[i].addr, so each address is hashed once
    size_t head, count;
    int rc; // the iterator's last answer: 1 more events, 0 the end, < 0 an error
} event_window;

// The next event (1) and its address's hash, or the end (0) or the iterator's error (< 0)
// once all read are taken.
static int window_next(event_window* win, mt_event* out, uint64_t* hash) {
    while (win->count < LOOKAHEAD && win->rc == 1) {
        size_t i = (win->head + win->count) % LOOKAHEAD;
        win->rc = mt_capture_iter_next(win->it, &win->ring[i]);
        if (win->rc != 1)
            break;
        win->hash[i] = mr_heapmap_prefetch(win->live, mr_replay_key(&win->ring[i]));
        win->count++;
    }
    if (!win->count)
        return win->rc;
    *out = win->ring[win->head];
    *hash = win->hash[win->head];
    win->head = (win->head + 1) % LOOKAHEAD;
    win->count--;
    return 1;
}

// A csv is about 300 bytes an event (29 GB for bench/scale's 100 M events): once this much is
// written, the whole is estimated from the events read so far and told if over WARN_OVER,
// before a GB is written.
#define WARN_AT ((uint64_t)128 << 20)
#define WARN_OVER ((uint64_t)1 << 30)

// Progress on a terminal, and the size the output will reach when it is large (once).
static void tell_progress(csv_writer* w, uint64_t seen, uint64_t total) {
    if (total)
        mr_messages_progress("export", (double)seen / (double)total);
    if (w->warned || w->written < WARN_AT || !seen || seen >= total)
        return;
    w->warned = true;
    double whole = (double)w->written * (double)total / (double)seen;
    if (whole < (double)WARN_OVER)
        return;
    char bytes[32];
    mt_units_format_bytes((uint64_t)whole, bytes, sizeof bytes);
    mr_messages_progress("export", -1); // the line it is on
    mr_messages_error(
        mt_capture_path(w->in->cap),
        "export --format csv: about %s for the %llu events; --range FROM..TO or --thread "
        "TID writes a part",
        bytes, (unsigned long long)total);
}

// Replays every event (the live blocks must see all of them) and writes the wanted ones, the
// MSTX rows merged in before the first event later than them.
static int write_rows(csv_writer* w, mt_event_iter* it, mr_heapmap* live, char* err,
                      size_t errlen) {
    size_t next_mark = 0;
    event_window win = {.it = it, .live = live, .rc = 1};
    mt_event ev;
    uint64_t h;
    int rc = 0;
    mt_heap_span span;
    uint64_t seen = 0, total = mt_capture_heap_span(w->in->cap, w->in->query->heap, &span) > 0
                                   ? span.events
                                   : 0;
    while (!w->write_err && (rc = window_next(&win, &ev, &h)) == 1) {
        if ((++seen & 0xffff) == 0)
            tell_progress(w, seen, total);
        // allocation_id is the seq of the allocating event; a free of a block allocated
        // before tracing started has id 0 and size 0.
        uint64_t alloc_id = 0, size = ev.size;
        if (mt_kind_is_alloc(ev.kind)) {
            alloc_id = ev.seq;
            mr_block b = {.addr = mr_replay_key(&ev), .size = ev.size, .id = ev.seq};
            if (ev.addr && mr_heapmap_put_hashed(live, &b, h, NULL, NULL))
                return -ENOMEM;
        } else if (mt_kind_is_free(ev.kind)) {
            mr_block b;
            if (mr_heapmap_take_hashed(live, mr_replay_key(&ev), h, &b)) {
                alloc_id = b.id;
                size = b.size;
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
        snprintf(err, errlen, "%s", mt_capture_iter_error(it));
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
    mr_heapmap live;
    if (mr_heapmap_init(&live))
        return -ENOMEM;
    mt_event_iter* it;
    rc = mt_capture_iter_open(in->cap, in->query->heap, &it);
    if (rc)
        snprintf(err, errlen, "%s", it ? mt_capture_iter_error(it) : "cannot read the events");
    else {
        int64_t n = mt_capture_meta_int(in->cap, "sample_bytes", 0); // the iterator checked it
        w->sample_bytes = n > 0 ? (uint64_t)n : 0;
        mt_capture_iter_requested_sizes(it); // sizes as asked; estimated_size says the weight
        if (!w->header)                      // several processes: once
            PUT_LITERAL(w, csv_header);
        w->header = true;
        rc = write_rows(w, it, &live, err, errlen);
        mr_messages_progress("export", -1);
        flush_rows(w);
        if (!rc && w->write_err) {
            snprintf(err, errlen, "cannot write the CSV: %s", strerror(w->write_err));
            rc = -EIO;
        }
    }
    mt_capture_iter_close(it);
    mr_heapmap_free(&live);
    return rc;
}

// What one capture's rows cached: its stack texts, marks and heap's name.
static void clear_capture(csv_writer* w) {
    for (uint32_t i = 0; w->stacks && i < w->nstacks; i++)
        free(w->stacks[i].text);
    free(w->stacks);
    w->stacks = NULL;
    for (size_t i = 0; i < w->nmarks; i++)
        free(w->marks[i].name);
    w->nmarks = 0;
    if (w->event_type && strcmp(w->event_type, "HOST"))
        free((char*)w->event_type);
    w->event_type = "HOST";
    w->device = "host";
}

// The rows of one capture (in: it alone). Returns 0 or a negative errno (err says why).
static int write_capture(csv_writer* w, const mr_export_input* in, char* err, size_t errlen) {
    w->in = in;
    w->pid = mt_capture_meta_int(in->cap, "pid", 0);
    w->nstacks = mr_symbols_callsite_count(in->sym);
    w->stacks = calloc(w->nstacks ? w->nstacks : 1, sizeof *w->stacks);
    int rc = w->stacks ? mr_u64map_init(&w->verdicts) : -ENOMEM;
    if (!rc && (rc = mr_leak_kinds_verdicts_load(in->cap, &w->verdicts)) == -EPROTO)
        snprintf(err, errlen, "the leak table is damaged");
    if (!rc)
        rc = write_csv(w, err, errlen);
    mr_u64map_free(&w->verdicts);
    clear_capture(w);
    return rc;
}

int mr_export_csv(FILE* out, const mr_export_input* in, char* err, size_t errlen) {
    csv_writer w = {.out = out, .event_type = "HOST", .device = "host"};
    w.buf = malloc(OUT_CHUNK);
    // Rows bypass stdio: whatever it holds goes first.
    w.fd = fflush(out) ? -1 : fileno(out);
    int rc = w.buf ? 0 : -ENOMEM;
    if (!rc && !in->nprocs)
        rc = write_capture(&w, in, err, errlen);
    for (size_t i = 0; !rc && !w.write_err && i < in->nprocs; i++) { // each process in turn
        mr_query q = *in->query;
        q.heap = mr_extent_default_heap(in->procs[i].cap);
        mr_export_input one = *in;
        one.cap = in->procs[i].cap;
        one.sym = in->procs[i].sym;
        one.query = &q;
        one.procs = NULL; // stacks as one capture's: the process is a column
        one.nprocs = 0;
        w.shift = in->procs[i].offset;
        rc = write_capture(&w, &one, err, errlen);
    }
    if (rc == -ENOMEM)
        snprintf(err, errlen, "out of memory");
    free(w.buf);
    free(w.marks);
    return rc;
}
