// SPDX-License-Identifier: MIT
// The NPU memory-usage log parser and series builder: upstream plot_memory_usage.py's rules
// (docs/npu-memory-usage-log.md §2; every § below is a section of that page) reproduced on
// bytes, in one streaming pass with memory bounded per line (a reader thread splits and
// scans lines, the caller's thread applies them in order), plus the 2025 legacy format
// (§5). It never writes files, talks to SQLite or draws: import (npu_import_cmd.c) and plot
// (plot_npu.c) consume what it builds.
#include "import_npu.h"

#include "heapmap.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define READ_CHUNK (1u << 20)
// A log with more distinct function names than this is not a compiler log; refuse it
// rather than let a hostile file grow the table without bound.
#define MAX_FUNCS (1u << 20)

// ---- line scanning: every literal upstream (and the importer) looks for, found in one pass

enum {
    L_MAX,    // "Max allocated size " digits                          rule 1
    L_FRAG,   // "Increased allocation size to " digits " B due to fragmentation!"  rule 2
    L_USED,   // "DDR used memory" \s+ digits                          rule 3
    L_FREE,   // "DDR free memory" \s+ digits                          rule 4 (advances step)
    L_ALLOC,  // "Buffer size to allocate" \s+ digits                  event A
    L_HFREE,  // "Free buffer of size " digits                         event H
    L_BEFORE, // "free memory before alloc": line B, tells DDR from CMX_NN
    L_LFRAG,  // "Increased allocation size due to fragmentation!"     legacy flag (§5)
    L_COUNT
};

static const struct {
    const char* text;
    size_t len;
} lits[L_COUNT] = {
#define LIT(s)                                                                                     \
    { s, sizeof s - 1 }
    [L_MAX] = LIT("Max allocated size "),
    [L_FRAG] = LIT("Increased allocation size to "),
    [L_USED] = LIT("DDR used memory"),
    [L_FREE] = LIT("DDR free memory"),
    [L_ALLOC] = LIT("Buffer size to allocate"),
    [L_HFREE] = LIT("Free buffer of size "),
    [L_BEFORE] = LIT("free memory before alloc"),
    [L_LFRAG] = LIT("Increased allocation size due to fragmentation!"),
#undef LIT
};
static const char frag_tail[] = " B due to fragmentation!";

#define NUM_OVERFLOW UINT64_MAX

typedef struct scan {
    const char* key; // function key ("part12", "main"), NULL if none
    size_t keylen;
    bool found[L_COUNT];
    size_t pos[L_COUNT];
    uint64_t val[L_COUNT]; // NUM_OVERFLOW when the digits exceed INT64_MAX
    bool before_ddr;       // the B line is "DDR free memory before alloc"
} scan;

// Python's \s on ASCII (str patterns also take \x1c-\x1f).
static bool is_space(unsigned char c) {
    return c == ' ' || (c >= '\t' && c <= '\r') || (c >= 0x1c && c <= 0x1f);
}

static bool is_digit(unsigned char c) {
    return c >= '0' && c <= '9';
}

// Leading digits at s[i..n): returns the index after them (i if none) and the value.
static size_t digits(const unsigned char* s, size_t i, size_t n, uint64_t* v) {
    uint64_t acc = 0;
    size_t j = i;
    for (; j < n && is_digit(s[j]); j++) {
        unsigned d = s[j] - '0';
        if (acc != NUM_OVERFLOW && acc > ((uint64_t)INT64_MAX - d) / 10)
            acc = NUM_OVERFLOW;
        else if (acc != NUM_OVERFLOW)
            acc = acc * 10 + d;
    }
    *v = acc;
    return j;
}

// Whether the character ending just before s[i] is a word character for Python's Unicode
// \b: ASCII alnum or '_', or a code point Python's re counts as \w (decoded from UTF-8).
static bool word_before(const unsigned char* s, size_t i) {
    if (i == 0)
        return false;
    unsigned char c = s[i - 1];
    if (c < 0x80)
        return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
               c == '_';
    size_t b = i - 1, k = 0;
    while (b > 0 && k < 3 && (s[b] & 0xc0) == 0x80) {
        b--;
        k++;
    }
    unsigned char lead = s[b];
    size_t need = lead >= 0xf0 ? 3 : lead >= 0xe0 ? 2 : lead >= 0xc0 ? 1 : 99;
    if (need != k)
        return false; // invalid UTF-8 (upstream would have crashed): not a word character
    uint32_t cp = lead & (0x3f >> need);
    for (size_t j = b + 1; j < i; j++)
        cp = cp << 6 | (s[j] & 0x3f);
    return mr_npu_is_word(cp);
}

static bool lit_at(const unsigned char* s, size_t i, size_t n, int l) {
    // The second byte first: most candidate bytes start ordinary words ("memory", "free").
    return n - i >= lits[l].len && s[i + 1] == (unsigned char)lits[l].text[1] &&
           memcmp(s + i, lits[l].text, lits[l].len) == 0;
}

// Checks literal l at i with its required continuation; on a match records it.
static void try_lit(scan* sc, const unsigned char* s, size_t i, size_t n, int l) {
    if (sc->found[l] || !lit_at(s, i, n, l))
        return;
    size_t j = i + lits[l].len, e;
    uint64_t v = 0;
    switch (l) {
    case L_USED:
    case L_FREE:
    case L_ALLOC:
        if (j >= n || !is_space(s[j]))
            return;
        while (j < n && is_space(s[j]))
            j++;
        /* fall through */
    case L_MAX:
    case L_HFREE:
        if ((e = digits(s, j, n, &v)) == j)
            return;
        break;
    case L_FRAG:
        if ((e = digits(s, j, n, &v)) == j || n - e < sizeof frag_tail - 1 ||
            memcmp(s + e, frag_tail, sizeof frag_tail - 1) != 0)
            return;
        break;
    default:
        break;
    }
    if (l == L_BEFORE)
        sc->before_ddr = i >= 4 && memcmp(s + i - 4, "DDR ", 4) == 0;
    sc->found[l] = true;
    sc->pos[l] = i;
    sc->val[l] = v;
}

// One pass over the line: the leftmost function key (\b(part\d+|main):) and, for every
// literal, its leftmost occurrence whose continuation matches (what re.search returns).
// s[n] must be '\0': strpbrk (SSE4.2 in glibc) skips the bytes that start nothing we look
// for; a NUL inside the line only ends one strpbrk run, not the scan.
static void scan_line(scan* sc, const unsigned char* s, size_t n) {
    memset(sc, 0, sizeof *sc);
    for (size_t i = 0; i < n; i++) {
        const char* hit = strpbrk((const char*)s + i, "MIDBFfpm");
        if (!hit) {
            i += strlen((const char*)s + i); // at a NUL: the loop steps over it
            continue;
        }
        i = (size_t)((const unsigned char*)hit - s);
        switch (s[i]) {
        case 'M':
            try_lit(sc, s, i, n, L_MAX);
            break;
        case 'I':
            try_lit(sc, s, i, n, L_FRAG);
            try_lit(sc, s, i, n, L_LFRAG);
            break;
        case 'D':
            try_lit(sc, s, i, n, L_USED);
            try_lit(sc, s, i, n, L_FREE);
            break;
        case 'B':
            try_lit(sc, s, i, n, L_ALLOC);
            break;
        case 'F':
            try_lit(sc, s, i, n, L_HFREE);
            break;
        case 'f':
            try_lit(sc, s, i, n, L_BEFORE);
            break;
        case 'p':
            if (!sc->key && n - i > 5 && memcmp(s + i, "part", 4) == 0 && is_digit(s[i + 4])) {
                size_t j = i + 4;
                while (j < n && is_digit(s[j]))
                    j++;
                if (j < n && s[j] == ':' && !word_before(s, i)) {
                    sc->key = (const char*)s + i;
                    sc->keylen = j - i;
                }
            }
            break;
        case 'm':
            if (!sc->key && n - i >= 5 && memcmp(s + i, "main:", 5) == 0 && !word_before(s, i)) {
                sc->key = (const char*)s + i;
                sc->keylen = 4;
            }
            break;
        default:
            break;
        }
    }
}

// ---- functions and the parser state

typedef struct func {
    char* name;
    size_t len;
    size_t seen;   // first-seen order (the stable sort's tie-break)
    int64_t steps; // "DDR free memory N" lines seen: the local step counter
    size_t nmax, nfree;
    uint64_t* pending; // sizes of A lines waiting for their step's B line
    size_t npending, cappending;
    bool cmx;       // the last B line was not DDR: its A/H lines are CMX_NN buffers
    bool frag_flag; // legacy: the next max point is a fragmentation one
} func;

// Points and events in file order, all functions in one array: point x holds
// (seen << LOCAL_BITS) | local step, event func the seen index and step the local step.
// Assembly turns them into timeline order in place when the file is already in that
// order (sequential logs), else with one stable counting sort: never per-function arrays
// copied into a global one.
#define LOCAL_BITS 40
typedef struct store {
    mr_points max, frag, used, free;
    mr_npu_event* ev;
    size_t nev, capev;
} store;

// (function, size) -> most recent live buffer id: the synthetic-address pairing.
typedef struct live_slot {
    uint64_t size;
    uint64_t head; // 0: no live buffer (slot unused when func == 0)
    uint32_t func; // seen index + 1
} live_slot;

typedef struct parser {
    const char* name;
    bool events; // collect allocation/free events
    bool gate;
    bool legacy_on; // the legacy reading is still possible (§5)
    func** funcs;   // seen order
    size_t nfuncs, capfuncs;
    func** table; // name hash -> func, open addressing
    size_t tmask;
    func* last;     // lines come in runs of one function: skip the hash
    func legacy;    // the single function of a legacy log
    store cur, leg; // what the current-format and the legacy reading collected
    uint64_t k0, k1;
    live_slot* live;
    size_t lmask, lcount;
    uint64_t* next_live; // buffer id -> the id below it in its stack
    size_t capnext;
    uint64_t ids;
    uint64_t lineno;
    uint64_t long_lines, cmx_events;
    uint64_t size; // bytes of the file (0: unknown), for progress
    char* err;
    size_t errlen;
} parser;

static uint64_t hash_bytes(const parser* p, const char* s, size_t n) {
    uint64_t h = n;
    for (size_t i = 0; i < n; i += 8) {
        uint64_t w = 0;
        memcpy(&w, s + i, n - i < 8 ? n - i : 8);
        h = mr_siphash_u64(p->k0, p->k1 ^ h, w);
    }
    return h;
}

static int table_grow(parser* p) {
    size_t cap = p->table ? (p->tmask + 1) * 2 : 64;
    func** t = calloc(cap, sizeof *t);
    if (!t)
        return -ENOMEM;
    for (size_t i = 0; i < p->nfuncs; i++) {
        size_t h = (size_t)hash_bytes(p, p->funcs[i]->name, p->funcs[i]->len) & (cap - 1);
        while (t[h])
            h = (h + 1) & (cap - 1);
        t[h] = p->funcs[i];
    }
    free(p->table);
    p->table = t;
    p->tmask = cap - 1;
    return 0;
}

static func* func_get(parser* p, const char* name, size_t len) {
    if (p->last && p->last->len == len && memcmp(p->last->name, name, len) == 0)
        return p->last;
    size_t h = (size_t)hash_bytes(p, name, len) & p->tmask;
    for (func* f; (f = p->table[h]); h = (h + 1) & p->tmask)
        if (f->len == len && memcmp(f->name, name, len) == 0)
            return p->last = f;
    if (p->nfuncs >= MAX_FUNCS) {
        snprintf(p->err, p->errlen, "line %llu: more than %u function names",
                 (unsigned long long)p->lineno, MAX_FUNCS);
        return NULL;
    }
    func* f = calloc(1, sizeof *f);
    if (!f || !(f->name = strndup(name, len))) {
        free(f);
        return NULL;
    }
    f->len = len;
    f->seen = p->nfuncs;
    if (p->nfuncs == p->capfuncs) {
        size_t nc = p->capfuncs ? p->capfuncs * 2 : 16;
        func** nf = realloc(p->funcs, nc * sizeof *nf);
        if (!nf) {
            free(f->name);
            free(f);
            return NULL;
        }
        p->funcs = nf;
        p->capfuncs = nc;
    }
    p->funcs[p->nfuncs++] = f;
    p->table[h] = f;
    if (p->nfuncs * 2 > p->tmask + 1 && table_grow(p))
        return NULL;
    return p->last = f;
}

static void func_free(func* f) {
    free(f->name);
    free(f->pending);
}

static void store_free(store* st) {
    mr_points_free(&st->max);
    mr_points_free(&st->frag);
    mr_points_free(&st->used);
    mr_points_free(&st->free);
    free(st->ev);
    memset(st, 0, sizeof *st);
}

static int64_t at(const func* f) {
    return (int64_t)((uint64_t)f->seen << LOCAL_BITS | (uint64_t)f->steps);
}

// ---- synthetic addresses

static int live_grow(parser* p) {
    size_t cap = p->live ? (p->lmask + 1) * 2 : 256;
    live_slot* t = calloc(cap, sizeof *t);
    if (!t)
        return -ENOMEM;
    for (size_t i = 0; p->live && i <= p->lmask; i++) {
        if (!p->live[i].func)
            continue;
        size_t h =
            (size_t)mr_siphash_u64(p->k0, p->k1 ^ p->live[i].func, p->live[i].size) & (cap - 1);
        while (t[h].func)
            h = (h + 1) & (cap - 1);
        t[h] = p->live[i];
    }
    free(p->live);
    p->live = t;
    p->lmask = cap - 1;
    return 0;
}

static live_slot* live_find(parser* p, uint32_t fid, uint64_t size, bool create) {
    if (!p->live || (create && (p->lcount + 1) * 2 > p->lmask + 1)) {
        if (live_grow(p))
            return NULL;
    }
    size_t h = (size_t)mr_siphash_u64(p->k0, p->k1 ^ fid, size) & p->lmask;
    for (;; h = (h + 1) & p->lmask) {
        live_slot* s = &p->live[h];
        if (s->func == fid && s->size == size)
            return s;
        if (!s->func) {
            if (!create)
                return NULL;
            *s = (live_slot){.size = size, .head = 0, .func = fid};
            p->lcount++;
            return s;
        }
    }
}

// Backward-shift deletion keeps the table as small as the set of sizes with live buffers
// (cache-resident), instead of every size ever seen.
static void live_remove(parser* p, live_slot* s) {
    size_t i = (size_t)(s - p->live), j = i;
    for (;;) {
        j = (j + 1) & p->lmask;
        if (!p->live[j].func)
            break;
        size_t h =
            (size_t)mr_siphash_u64(p->k0, p->k1 ^ p->live[j].func, p->live[j].size) & p->lmask;
        if (((j - h) & p->lmask) >= ((j - i) & p->lmask)) {
            p->live[i] = p->live[j];
            i = j;
        }
    }
    p->live[i] = (live_slot){0};
    p->lcount--;
}

static int new_id(parser* p, uint64_t* id) {
    *id = ++p->ids;
    if (*id >= p->capnext) {
        size_t nc = p->capnext ? p->capnext * 2 : 1024;
        uint64_t* nn = mr_big_realloc(p->next_live, nc * sizeof *nn);
        if (!nn)
            return -ENOMEM;
        p->next_live = nn;
        p->capnext = nc;
    }
    p->next_live[*id] = 0;
    return 0;
}

static int add_event(parser* p, store* st, func* f, uint64_t size, bool is_free) {
    if (st->nev == st->capev) {
        size_t nc = st->capev ? st->capev * 2 : 65536;
        mr_npu_event* ne = mr_big_realloc(st->ev, nc * sizeof *ne);
        if (!ne)
            return -ENOMEM;
        st->ev = ne;
        st->capev = nc;
    }
    uint32_t fid = (uint32_t)f->seen + 1;
    live_slot* s = live_find(p, fid, size, !is_free);
    uint64_t id;
    if (is_free && s && s->head) {
        id = s->head;
        s->head = p->next_live[id];
        if (!s->head)
            live_remove(p, s);
    } else {
        if (new_id(p, &id))
            return -ENOMEM;
        if (!is_free) {
            if (!s)
                return -ENOMEM;
            p->next_live[id] = s->head;
            s->head = id;
        }
    }
    st->ev[st->nev++] = (mr_npu_event){
        .step = f->steps, .size = size, .addr = id, .func = (uint32_t)f->seen, .is_free = is_free};
    return 0;
}

// A lines wait for their step's B line, which names the memory (DDR or CMX_NN); any other
// line of the function settles them with the last kind seen.
static int flush_pending(parser* p, store* st, func* f) {
    int rc = 0;
    for (size_t i = 0; i < f->npending && !rc; i++) {
        if (f->cmx)
            p->cmx_events++;
        else
            rc = add_event(p, st, f, f->pending[i], false);
    }
    f->npending = 0;
    return rc;
}

static int bad_number(parser* p) {
    snprintf(p->err, p->errlen, "line %llu: number larger than %lld", (unsigned long long)p->lineno,
             (long long)INT64_MAX);
    return -EPROTO;
}

// The data rules (§2.3: first match wins, in this order), then the event lines: the
// rule a line obeys, or L_COUNT. Legacy lines (§5) have a flag line instead of rule 2.
static int choose(const scan* sc, const bool* ok, bool legacy) {
    static const int order[] = {L_MAX, L_FRAG, L_USED, L_FREE, L_ALLOC, L_HFREE, L_BEFORE};
    for (size_t i = 0; i < sizeof order / sizeof *order; i++) {
        int c = order[i];
        if (legacy && c == L_FRAG)
            c = L_LFRAG;
        if (sc->found[c] && ok[c])
            return c;
    }
    return L_COUNT;
}

// Applies rule l with value v to function f. Legacy logs mark the next max point after a
// flag line as a fragmentation one.
static int act(parser* p, store* st, func* f, int l, uint64_t v, bool before_ddr, bool legacy) {
    if (l == L_COUNT)
        return 0;
    if (!p->events && (l == L_ALLOC || l == L_HFREE || l == L_BEFORE))
        return 0;
    if (v == NUM_OVERFLOW)
        return bad_number(p);
    if (l == L_ALLOC) {
        if (f->npending == f->cappending) {
            size_t nc = f->cappending ? f->cappending * 2 : 8;
            uint64_t* np = realloc(f->pending, nc * sizeof *np);
            if (!np)
                return -ENOMEM;
            f->pending = np;
            f->cappending = nc;
        }
        f->pending[f->npending++] = v;
        return 0;
    }
    if (l == L_BEFORE) {
        f->cmx = !before_ddr;
        return flush_pending(p, st, f);
    }
    int rc = flush_pending(p, st, f);
    if (rc)
        return rc;
    switch (l) {
    case L_MAX:
        f->nmax++;
        rc = mr_points_push(&st->max, at(f), v);
        if (!rc && legacy && f->frag_flag) {
            f->frag_flag = false;
            rc = mr_points_push(&st->frag, at(f), v);
        }
        return rc;
    case L_FRAG:
        return mr_points_push(&st->frag, at(f), v);
    case L_LFRAG:
        f->frag_flag = true;
        return 0;
    case L_USED:
        return mr_points_push(&st->used, at(f), v);
    case L_FREE:
        if (f->steps + 1 >= (int64_t)1 << LOCAL_BITS) {
            snprintf(p->err, p->errlen, "line %llu: more than 2^%d steps in %s",
                     (unsigned long long)p->lineno, LOCAL_BITS, f->name);
            return -EPROTO;
        }
        f->nfree++;
        rc = mr_points_push(&st->free, at(f), v);
        f->steps++;
        return rc;
    case L_HFREE:
        if (f->cmx) {
            p->cmx_events++;
            return 0;
        }
        return add_event(p, st, f, v, true);
    default:
        return 0;
    }
}

// Legacy lines carry no "{F}:" prefix: the literal follows the logger's "]" (and the
// indent) directly. Requiring that keeps a current-format log of ignored names (init:)
// from being read as legacy.
static bool legacy_prefix(const unsigned char* s, size_t at) {
    while (at > 0 && s[at - 1] == ' ')
        at--;
    return at == 0 || s[at - 1] == ']';
}

// ---- the line pipeline: a reader thread splits and scans lines (the costly, stateless
// part) while the parser thread applies them in order (the stateful part).

// What the parser needs of one line after the gate.
typedef struct scanned {
    uint64_t lineno;
    uint64_t cur_val, leg_val;
    uint32_t key_off, key_len; // the function key in the batch's arena (len 0: none)
    uint8_t cur, leg;          // rule for the current format / legacy reading (L_COUNT: none)
    bool before_ddr;
    bool end_pass; // "End Pass StaticAllocation": ends the legacy reading
} scanned;

#define BATCH_LINES 8192
#define NBATCHES 4

typedef struct batch {
    scanned* v;
    size_t n;
    char* arena;
    size_t alen, acap;
    bool full;
} batch;

typedef struct pipeline {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    batch b[NBATCHES];
    bool eof, stop;
    int rc;                 // the reader's error (read failure, out of memory)
    char err[256];          // its message
    atomic_bool legacy_off; // set by the parser: End Pass lines no longer matter
    // reader state
    int fd;
    const char* name;
    bool gate;
    uint64_t lineno, long_lines, size, done;
} pipeline;

// Scans one line; returns true when the parser must see it.
static bool examine(pipeline* q, const unsigned char* s, size_t n, scanned* out, batch* b) {
    if (!q->gate) {
        // The gate line itself is then examined like any other (§2.1).
        if (!memmem(s, n, "Start Pass StaticAllocation", 27))
            return false;
        q->gate = true;
    }
    scan sc;
    scan_line(&sc, s, n);
    static const bool all[L_COUNT] = {true, true, true, true, true, true, true, true};
    memset(out, 0, sizeof *out);
    out->lineno = q->lineno;
    out->before_ddr = sc.before_ddr;
    out->end_pass = !atomic_load_explicit(&q->legacy_off, memory_order_relaxed) &&
                    memmem(s, n, "End Pass StaticAllocation", 25) != NULL;
    out->cur = out->leg = L_COUNT;
    if (sc.key) {
        out->cur = (uint8_t)choose(&sc, all, false);
        out->cur_val = out->cur < L_COUNT ? sc.val[out->cur] : 0;
        if (b->alen + sc.keylen > b->acap) {
            size_t nc = (b->acap ? b->acap * 2 : 65536) + sc.keylen;
            char* na = realloc(b->arena, nc);
            if (!na) {
                q->rc = -ENOMEM; // reported when the reader is done
                return false;
            }
            b->arena = na;
            b->acap = nc;
        }
        memcpy(b->arena + b->alen, sc.key, sc.keylen);
        out->key_off = (uint32_t)b->alen;
        out->key_len = (uint32_t)sc.keylen;
        b->alen += sc.keylen;
    } else {
        bool ok[L_COUNT];
        for (int l = 0; l < L_COUNT; l++)
            ok[l] = sc.found[l] && (l == L_BEFORE || legacy_prefix(s, sc.pos[l]));
        out->leg = (uint8_t)choose(&sc, ok, true);
        out->leg_val = out->leg < L_COUNT ? sc.val[out->leg] : 0;
    }
    return out->key_len || out->leg < L_COUNT || out->end_pass;
}

static int consume(parser* p, pipeline* q, const scanned* sd, const char* arena) {
    p->lineno = sd->lineno;
    if (p->legacy_on) {
        // The 2025 script stopped at the first End Pass (§5).
        if (sd->end_pass) {
            p->legacy_on = false;
            atomic_store_explicit(&q->legacy_off, true, memory_order_relaxed);
        } else if (!sd->key_len) {
            int rc = act(p, &p->leg, &p->legacy, sd->leg, sd->leg_val, sd->before_ddr, true);
            if (rc)
                return rc;
        }
    }
    if (!sd->key_len)
        return 0;
    func* f = func_get(p, arena + sd->key_off, sd->key_len);
    if (!f)
        return p->err[0] ? -EPROTO : -ENOMEM;
    int rc = act(p, &p->cur, f, sd->cur, sd->cur_val, sd->before_ddr, false);
    if (!rc && p->legacy_on && p->cur.max.n > 0) {
        // A current-format max point settles the format: drop the legacy reading.
        p->legacy_on = false;
        atomic_store_explicit(&q->legacy_off, true, memory_order_relaxed);
        store_free(&p->leg);
    }
    return rc;
}

// ---- timeline assembly (§2.4)

// part<n> by the integer value of n (any length), then main.
static int key_cmp(const func* a, const func* b) {
    bool am = a->name[0] == 'm', bm = b->name[0] == 'm';
    if (am != bm)
        return am ? 1 : -1;
    if (!am) {
        const char *x = a->name + 4, *y = b->name + 4;
        while (*x == '0' && x[1])
            x++;
        while (*y == '0' && y[1])
            y++;
        size_t lx = strlen(x), ly = strlen(y);
        if (lx != ly)
            return lx < ly ? -1 : 1;
        int c = strcmp(x, y);
        if (c)
            return c;
    }
    return 0;
}

static int func_order(const void* pa, const void* pb) {
    const func* a = *(func* const*)pa;
    const func* b = *(func* const*)pb;
    int c = key_cmp(a, b);
    if (c)
        return c;
    return a->seen < b->seen ? -1 : a->seen > b->seen; // stable: first seen first
}

// log->ev is sized for all events up front (assemble).
// Where each function (by seen index) lands on the timeline.
typedef struct placing {
    size_t* rank;    // position in timeline order
    int64_t* offset; // its first global step
    bool* kept;      // has a region: its points are plotted
    size_t n;
    bool legacy;
} placing;

static size_t slot_of_seen(const placing* pl, uint64_t seen) {
    return pl->legacy ? 0 : (size_t)seen;
}

// Moves the points of kept functions into timeline order with global x.
static int place_points(mr_points* v, const placing* pl) {
    bool sorted = true;
    size_t prev = 0;
    for (size_t i = 0; i < v->n && sorted; i++) {
        size_t r = pl->rank[slot_of_seen(pl, (uint64_t)v->v[i].x >> LOCAL_BITS)];
        sorted = r >= prev;
        prev = r;
    }
    const int64_t mask = ((int64_t)1 << LOCAL_BITS) - 1;
    if (sorted) {
        size_t k = 0;
        for (size_t i = 0; i < v->n; i++) {
            size_t f = slot_of_seen(pl, (uint64_t)v->v[i].x >> LOCAL_BITS);
            if (pl->kept[f])
                v->v[k++] = (mr_point){(v->v[i].x & mask) + pl->offset[f], v->v[i].y};
        }
        v->n = k;
        return 0;
    }
    // Interleaved functions: a stable counting sort by timeline position.
    size_t* start = calloc(pl->n + 1, sizeof *start);
    if (!start)
        return -ENOMEM;
    size_t total = 0;
    for (size_t i = 0; i < v->n; i++) {
        size_t f = slot_of_seen(pl, (uint64_t)v->v[i].x >> LOCAL_BITS);
        if (pl->kept[f]) {
            start[pl->rank[f] + 1]++;
            total++;
        }
    }
    for (size_t r = 0; r < pl->n; r++)
        start[r + 1] += start[r];
    mr_point* out = mr_big_realloc(NULL, (total ? total : 1) * sizeof *out);
    if (!out) {
        free(start);
        return -ENOMEM;
    }
    for (size_t i = 0; i < v->n; i++) {
        size_t f = slot_of_seen(pl, (uint64_t)v->v[i].x >> LOCAL_BITS);
        if (pl->kept[f])
            out[start[pl->rank[f]]++] = (mr_point){(v->v[i].x & mask) + pl->offset[f], v->v[i].y};
    }
    free(start);
    free(v->v);
    v->v = out;
    v->n = v->cap = total;
    return 0;
}

// The same for events: every function's, ts = global step, func = timeline position.
static int place_events(store* st, const placing* pl) {
    bool sorted = true;
    size_t prev = 0;
    for (size_t i = 0; i < st->nev && sorted; i++) {
        size_t r = pl->rank[slot_of_seen(pl, st->ev[i].func)];
        sorted = r >= prev;
        prev = r;
    }
    mr_npu_event* out = st->ev;
    size_t* start = NULL;
    if (!sorted) {
        start = calloc(pl->n + 1, sizeof *start);
        out = mr_big_realloc(NULL, st->nev * sizeof *out);
        if (!start || !out) {
            free(start);
            free(out);
            return -ENOMEM;
        }
        for (size_t i = 0; i < st->nev; i++)
            start[pl->rank[slot_of_seen(pl, st->ev[i].func)] + 1]++;
        for (size_t r = 0; r < pl->n; r++)
            start[r + 1] += start[r];
    }
    for (size_t i = 0; i < st->nev; i++) {
        mr_npu_event e = st->ev[i];
        size_t f = slot_of_seen(pl, e.func);
        e.step += pl->offset[f];
        e.func = (uint32_t)pl->rank[f];
        out[sorted ? i : start[pl->rank[f]]++] = e;
    }
    if (!sorted) {
        free(st->ev);
        st->ev = out;
        st->capev = st->nev;
        free(start);
    }
    return 0;
}

static int assemble(parser* p, mr_npu_log* log) {
    func** order = p->funcs;
    size_t n = p->nfuncs;
    func* one[1] = {&p->legacy};
    store* st = log->legacy ? &p->leg : &p->cur;
    if (log->legacy) {
        order = one;
        n = 1;
        if (!(p->legacy.name = strdup("main")))
            return -ENOMEM;
        p->legacy.len = 4;
    } else {
        qsort(order, n, sizeof *order, func_order);
    }
    placing pl = {.n = n, .legacy = log->legacy};
    pl.rank = calloc(n, sizeof *pl.rank);
    pl.offset = calloc(n, sizeof *pl.offset);
    pl.kept = calloc(n, sizeof *pl.kept);
    log->funcs = calloc(n, sizeof *log->funcs);
    log->regions = calloc(n, sizeof *log->regions);
    int rc = pl.rank && pl.offset && pl.kept && log->funcs && log->regions ? 0 : -ENOMEM;
    int64_t offset = 0;
    for (size_t i = 0; i < n && !rc; i++) {
        func* f = order[i];
        size_t k = slot_of_seen(&pl, f->seen);
        if (!(log->funcs[i] = strdup(f->name))) {
            rc = -ENOMEM;
            break;
        }
        log->nfuncs++;
        pl.rank[k] = i;
        pl.offset[k] = offset;
        // Functions with neither a max nor a free point get no region (§2.4 step 2);
        // the old script drew none at all.
        pl.kept[k] = f->nmax > 0 || f->nfree > 0;
        if (!pl.kept[k])
            continue;
        if (!log->legacy) {
            mr_npu_region* r = &log->regions[log->nregions++];
            if (!(r->name = strdup(f->name))) {
                rc = -ENOMEM;
                break;
            }
            r->start = offset;
        }
        offset += f->steps;
    }
    if (!rc)
        rc = place_points(&st->max, &pl);
    if (!rc)
        rc = place_points(&st->frag, &pl);
    if (!rc)
        rc = place_points(&st->used, &pl);
    if (!rc)
        rc = place_points(&st->free, &pl);
    if (!rc)
        rc = place_events(st, &pl);
    if (!rc) {
        log->max_raw = st->max;
        log->frag = st->frag;
        log->used = st->used;
        log->free = st->free;
        log->ev = st->ev;
        log->nev = st->nev;
        memset(st, 0, sizeof *st);
    }
    free(pl.rank);
    free(pl.offset);
    free(pl.kept);
    return rc;
}

// ---- reading

static void parser_free(parser* p) {
    for (size_t i = 0; i < p->nfuncs; i++) {
        func_free(p->funcs[i]);
        free(p->funcs[i]);
    }
    free(p->funcs);
    free(p->table);
    func_free(&p->legacy);
    store_free(&p->cur);
    store_free(&p->leg);
    free(p->live);
    free(p->next_live);
}

static int finish(parser* p, int fd_rc, mr_npu_log* log) {
    if (fd_rc)
        return fd_rc;
    for (size_t i = 0; i < p->nfuncs; i++)
        if (flush_pending(p, &p->cur, p->funcs[i]))
            return -ENOMEM;
    if (p->legacy_on && flush_pending(p, &p->leg, &p->legacy))
        return -ENOMEM;
    if (!p->gate) {
        snprintf(p->err, p->errlen,
                 "no 'Start Pass StaticAllocation' line: not an NPU compiler memory-usage log "
                 "(run the compiler with OV_NPU_LOG_LEVEL=LOG_TRACE)");
        return -EPROTO;
    }
    bool current = p->cur.max.n > 0;
    if (!current && p->leg.max.n == 0) {
        snprintf(p->err, p->errlen,
                 "no memory-usage lines ('{F}: Max allocated size N B' for part<N> or main) "
                 "after 'Start Pass StaticAllocation'");
        return -EPROTO;
    }
    log->legacy = !current;
    log->long_lines = p->long_lines;
    log->cmx_events = p->cmx_events;
    return assemble(p, log);
}

// The terminator of the line at s: '\n', or '\r' (universal newlines: a lone CR ends a line
// too, and CRLF is one terminator).
static const unsigned char* find_eol(const unsigned char* s, size_t n) {
    const unsigned char* lf = memchr(s, '\n', n);
    const unsigned char* cr = memchr(s, '\r', lf ? (size_t)(lf - s) : n);
    return cr ? cr : lf;
}

// Hands the current batch to the parser and takes the next free one (NULL: stop).
static batch* hand_over(pipeline* q, batch* cur, size_t* slot) {
    pthread_mutex_lock(&q->mu);
    if (cur) {
        cur->full = true;
        *slot = (*slot + 1) % NBATCHES;
        pthread_cond_broadcast(&q->cv);
    }
    while (q->b[*slot].full && !q->stop)
        pthread_cond_wait(&q->cv, &q->mu);
    batch* b = q->stop ? NULL : &q->b[*slot];
    pthread_mutex_unlock(&q->mu);
    if (b)
        b->n = b->alen = 0;
    return b;
}

static void add_line(pipeline* q, batch** b, size_t* slot, const unsigned char* s, size_t n) {
    if (!*b)
        return;
    if (examine(q, s, n, &(*b)->v[(*b)->n], *b) && ++(*b)->n == BATCH_LINES)
        *b = hand_over(q, *b, slot);
}

static void* reader_main(void* arg) {
    pipeline* q = arg;
    size_t cap = MR_NPU_LINE_LIMIT + READ_CHUNK, slot = 0;
    unsigned char* buf = malloc(cap);
    batch* b = hand_over(q, NULL, &slot);
    if (!buf) {
        q->rc = -ENOMEM;
        b = NULL;
    }
    size_t len = 0;
    bool skipping = false, after_cr = false;
    while (b) {
        ssize_t got = read(q->fd, buf + len, cap - len);
        if (got < 0) {
            if (errno == EINTR)
                continue;
            q->rc = -errno;
            snprintf(q->err, sizeof q->err, "read failed: %s", strerror(errno));
            break;
        }
        size_t start = 0;
        len += (size_t)got;
        q->done += (uint64_t)got;
        if (q->size)
            mr_progress("reading log", (double)q->done / (double)q->size);
        if (after_cr && len > 0) {
            // The LF of a CRLF split across reads belongs to the line already ended.
            if (buf[0] == '\n')
                start = 1;
            after_cr = false;
        }
        const unsigned char* eol;
        while (b && (eol = find_eol(buf + start, len - start))) {
            size_t e = (size_t)(eol - buf);
            q->lineno++;
            if (skipping) {
                skipping = false;
            } else {
                unsigned char term = buf[e];
                buf[e] = '\0';
                add_line(q, &b, &slot, buf + start, e - start);
                buf[e] = term;
            }
            start = e + 1;
            if (*eol == '\r') {
                if (start < len && buf[start] == '\n')
                    start++;
                else if (start == len)
                    after_cr = true;
            }
        }
        if (!b)
            break;
        if (got == 0) { // EOF: the last line may lack a terminator
            if (start < len && !skipping) {
                q->lineno++;
                buf[len] = '\0'; // len < cap: the read before EOF asked for cap - len > 0
                add_line(q, &b, &slot, buf + start, len - start);
            }
            break;
        }
        if (len - start >= MR_NPU_LINE_LIMIT) {
            // Bounded memory per line: a line this long is not a memory-usage line, drop it.
            if (!skipping) {
                q->long_lines++;
                fprintf(stderr, "memreport: %s: line %llu is longer than %u bytes; skipped\n",
                        q->name, (unsigned long long)q->lineno + 1, MR_NPU_LINE_LIMIT);
            }
            skipping = true;
            start = len;
        }
        memmove(buf, buf + start, len - start);
        len -= start;
    }
    free(buf);
    if (q->size)
        mr_progress("reading log", -1);
    pthread_mutex_lock(&q->mu);
    if (b && b->n) {
        b->full = true;
    }
    q->eof = true;
    pthread_cond_broadcast(&q->cv);
    pthread_mutex_unlock(&q->mu);
    return NULL;
}

// The parser's side: applies the batches in order until the reader is done.
static int read_lines(parser* p, int fd, mr_npu_log* log) {
    pipeline q = {.fd = fd, .name = p->name, .size = p->size};
    atomic_init(&q.legacy_off, false);
    int rc = 0;
    for (int i = 0; i < NBATCHES; i++)
        if (!(q.b[i].v = malloc(BATCH_LINES * sizeof *q.b[i].v)))
            rc = -ENOMEM;
    pthread_t th;
    pthread_mutex_init(&q.mu, NULL);
    pthread_cond_init(&q.cv, NULL);
    if (!rc && pthread_create(&th, NULL, reader_main, &q) != 0)
        rc = -EAGAIN;
    bool started = rc == 0;
    for (size_t slot = 0; rc == 0;) {
        pthread_mutex_lock(&q.mu);
        while (!q.b[slot].full && !q.eof)
            pthread_cond_wait(&q.cv, &q.mu);
        bool have = q.b[slot].full;
        pthread_mutex_unlock(&q.mu);
        if (!have)
            break; // eof and nothing left
        batch* b = &q.b[slot];
        for (size_t i = 0; i < b->n && !rc; i++)
            rc = consume(p, &q, &b->v[i], b->arena);
        pthread_mutex_lock(&q.mu);
        b->full = false;
        pthread_cond_broadcast(&q.cv);
        pthread_mutex_unlock(&q.mu);
        slot = (slot + 1) % NBATCHES;
    }
    if (started) {
        pthread_mutex_lock(&q.mu);
        q.stop = true; // an error here: the reader stops at its next hand-over
        pthread_cond_broadcast(&q.cv);
        pthread_mutex_unlock(&q.mu);
        pthread_join(th, NULL);
    }
    if (!rc && q.rc) {
        rc = q.rc;
        if (q.err[0])
            snprintf(p->err, p->errlen, "%s", q.err);
    }
    p->gate = q.gate;
    p->long_lines = q.long_lines;
    log->lines = q.lineno;
    for (int i = 0; i < NBATCHES; i++) {
        free(q.b[i].v);
        free(q.b[i].arena);
    }
    pthread_mutex_destroy(&q.mu);
    pthread_cond_destroy(&q.cv);
    return rc;
}

int mr_npu_parse_fd(int fd, const char* name, bool events, mr_npu_log* out, char* err,
                    size_t errlen) {
    memset(out, 0, sizeof *out);
    parser p = {.name = name, .events = events, .legacy_on = true, .err = err, .errlen = errlen};
    p.legacy.seen = MAX_FUNCS + 1; // its own key space in the buffer pairing
    err[0] = '\0';
    uint64_t key[2];
    if (getrandom(key, sizeof key, GRND_NONBLOCK) != (ssize_t)sizeof key) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        key[0] = (uint64_t)ts.tv_nsec * 0x9e3779b97f4a7c15ull;
        key[1] = (uint64_t)ts.tv_sec ^ 0xd6e8feb86659fd93ull;
    }
    p.k0 = key[0];
    p.k1 = key[1];
    struct stat st;
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode))
        p.size = (uint64_t)st.st_size;
    int rc = table_grow(&p);
    if (!rc)
        rc = read_lines(&p, fd, out);
    rc = finish(&p, rc, out);
    parser_free(&p);
    if (rc) {
        if (rc == -ENOMEM && !err[0])
            snprintf(err, errlen, "out of memory");
        mr_npu_log_free(out);
    }
    return rc;
}

int mr_npu_parse_file(const char* path, bool events, mr_npu_log* out, char* err, size_t errlen) {
    memset(out, 0, sizeof *out);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        int e = errno;
        snprintf(err, errlen, "cannot open: %s", strerror(e));
        return -e;
    }
    posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
    int rc = mr_npu_parse_fd(fd, path, events, out, err, errlen);
    close(fd);
    return rc;
}

static void regions_free(mr_npu_region* r, size_t n) {
    for (size_t i = 0; i < n; i++)
        free(r[i].name);
    free(r);
}

void mr_npu_log_free(mr_npu_log* log) {
    for (size_t i = 0; i < log->nfuncs; i++)
        free(log->funcs[i]);
    free(log->funcs);
    regions_free(log->regions, log->nregions);
    mr_points_free(&log->max_raw);
    mr_points_free(&log->frag);
    mr_points_free(&log->used);
    mr_points_free(&log->free);
    free(log->ev);
    memset(log, 0, sizeof *log);
}

// ---- the five series (§2.5-2.7)

static int point_cmp(const mr_point* a, const mr_point* b) {
    if (a->x != b->x)
        return a->x < b->x ? -1 : 1;
    return a->y < b->y ? -1 : a->y > b->y;
}

// `increased` is sorted by (x, bytes): x never decreases along the timeline and each
// record is larger than the last. So membership is a binary search, where upstream scans
// the whole list per candidate (quadratic, §4).
static bool is_increase(const mr_points* inc, const mr_point* p) {
    size_t lo = 0, hi = inc->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = point_cmp(&inc->v[mid], p);
        if (c == 0)
            return true;
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return false;
}

// a - b, clamped to the int64 range: steps of a crafted capture can be anything.
static int64_t saturating_sub(int64_t a, int64_t b) {
    if (b < 0 && a > INT64_MAX + b)
        return INT64_MAX;
    if (b > 0 && a < INT64_MIN + b)
        return INT64_MIN;
    return a - b;
}

int mr_npu_series_build(mr_npu_series* s, bool legacy, mr_points* max_raw, mr_points* frag,
                        mr_points* used, mr_points* free_pts, mr_npu_region** regions,
                        size_t* nregions) {
    memset(s, 0, sizeof *s);
    s->legacy = legacy;
    s->max = *max_raw;
    s->frag = *frag;
    s->used = *used;
    s->free = *free_pts;
    s->regions = *regions;
    s->nregions = *nregions;
    memset(max_raw, 0, sizeof *max_raw);
    memset(frag, 0, sizeof *frag);
    memset(used, 0, sizeof *used);
    memset(free_pts, 0, sizeof *free_pts);
    *regions = NULL;
    *nregions = 0;
    // Legacy: "increased" against the previous raw value, no running max (§5).
    uint64_t run = 0;
    for (size_t i = 0; i < s->max.n; i++) {
        mr_point* p = &s->max.v[i];
        if (p->y > run && mr_points_push(&s->increased, p->x, p->y))
            return -ENOMEM;
        if (legacy) {
            run = p->y;
            if (p->y > s->peak)
                s->peak = p->y;
        } else {
            if (p->y > run)
                run = p->y;
            p->y = run;
        }
    }
    if (!legacy) {
        size_t k = 0;
        for (size_t i = 0; i < s->frag.n; i++)
            if (is_increase(&s->increased, &s->frag.v[i]))
                s->frag.v[k++] = s->frag.v[i];
        s->frag.n = k;
        s->peak = s->max.n ? s->max.v[s->max.n - 1].y : 0;
    }
    s->total_steps = s->max.n ? saturating_sub(s->max.v[s->max.n - 1].x, -1) : 0;
    s->unit = mt_npu_unit_for_bytes(s->peak); // upstream's labels (KB = 1024 B)
    for (size_t i = 0; i < s->nregions; i++) {
        mr_npu_region* r = &s->regions[i];
        int64_t end = i + 1 < s->nregions ? s->regions[i + 1].start : s->total_steps;
        r->span = saturating_sub(end, r->start);
        r->label_drawn = (double)r->span >= 0.0025 * (double)s->total_steps;
    }
    return 0;
}

void mr_npu_series_free(mr_npu_series* s) {
    mr_points_free(&s->max);
    mr_points_free(&s->increased);
    mr_points_free(&s->frag);
    mr_points_free(&s->used);
    mr_points_free(&s->free);
    regions_free(s->regions, s->nregions);
    memset(s, 0, sizeof *s);
}
