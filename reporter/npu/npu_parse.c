// SPDX-License-Identifier: MIT
// The parser state: the function table, the points and events collected per line, and the
// synthetic addresses that pair a free with its allocation.
#include "messages.h"
#include "npu_internal.h"
#include "output_file.h"
#include "siphash.h"

#include "memtrace/event.h"
#include "memtrace/vec.h"

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

static uint64_t hash_bytes(const parser* p, const char* s, size_t n) {
    uint64_t h = n;
    for (size_t i = 0; i < n; i += 8) {
        uint64_t w = 0;
        memcpy(&w, s + i, n - i < 8 ? n - i : 8);
        h = mr_siphash_u64(p->k0, p->k1 ^ h, w);
    }
    return h;
}

int mr_npu_table_grow(parser* p) {
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

func* mr_npu_func_get(parser* p, const char* name, size_t len) {
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
    if (MT_VEC_RESERVE(&p->funcs, &p->capfuncs, p->nfuncs + 1)) {
        free(f->name);
        free(f);
        return NULL;
    }
    p->funcs[p->nfuncs++] = f;
    p->table[h] = f;
    if (p->nfuncs * 2 > p->tmask + 1 && mr_npu_table_grow(p))
        return NULL;
    return p->last = f;
}

static void func_free(func* f) {
    free(f->name);
    free(f->pending);
}

void mr_npu_store_free(store* st) {
    mr_series_points_free(&st->max);
    mr_series_points_free(&st->frag);
    mr_series_points_free(&st->used);
    mr_series_points_free(&st->free);
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
    if (MR_BIG_RESERVE(&p->next_live, &p->capnext, *id + 1, 1024))
        return -ENOMEM;
    p->next_live[*id] = 0;
    return 0;
}

static int add_event(parser* p, store* st, func* f, uint64_t size, bool is_free) {
    if (MR_BIG_RESERVE(&st->ev, &st->capev, st->nev + 1, 65536))
        return -ENOMEM;
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
int mr_npu_flush_pending(parser* p, store* st, func* f) {
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
int mr_npu_choose(const scan* sc, const bool* ok, bool legacy) {
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
int mr_npu_act(parser* p, store* st, func* f, int l, uint64_t v, bool before_ddr, bool legacy) {
    if (l == L_COUNT)
        return 0;
    if (!p->events && (l == L_ALLOC || l == L_HFREE || l == L_BEFORE))
        return 0;
    if (v == NUM_OVERFLOW)
        return bad_number(p);
    if (l == L_ALLOC) {
        // Readers refuse a heap whose allocations sum to over 2^63-1 bytes (every report's
        // sums stay below: docs/capture-format.md); say it here, at the line.
        if (v > MT_EVENT_SIZE_MAX - st->alloc_bytes) {
            snprintf(p->err, p->errlen,
                     "line %llu: the buffers allocated so far sum to over 2^63-1 bytes",
                     (unsigned long long)p->lineno);
            return -EPROTO;
        }
        st->alloc_bytes += v;
        if (MT_VEC_RESERVE(&f->pending, &f->cappending, f->npending + 1))
            return -ENOMEM;
        f->pending[f->npending++] = v;
        return 0;
    }
    if (l == L_BEFORE) {
        f->cmx = !before_ddr;
        return mr_npu_flush_pending(p, st, f);
    }
    int rc = mr_npu_flush_pending(p, st, f);
    if (rc)
        return rc;
    switch (l) {
    case L_MAX:
        f->nmax++;
        rc = mr_series_points_push(&st->max, at(f), v);
        if (!rc && legacy && f->frag_flag) {
            f->frag_flag = false;
            rc = mr_series_points_push(&st->frag, at(f), v);
        }
        return rc;
    case L_FRAG:
        return mr_series_points_push(&st->frag, at(f), v);
    case L_LFRAG:
        f->frag_flag = true;
        return 0;
    case L_USED:
        return mr_series_points_push(&st->used, at(f), v);
    case L_FREE:
        if (f->steps + 1 >= (int64_t)1 << LOCAL_BITS) {
            snprintf(p->err, p->errlen, "line %llu: more than 2^%d steps in %s",
                     (unsigned long long)p->lineno, LOCAL_BITS, f->name);
            return -EPROTO;
        }
        f->nfree++;
        rc = mr_series_points_push(&st->free, at(f), v);
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
bool mr_npu_legacy_prefix(const unsigned char* s, size_t at) {
    while (at > 0 && s[at - 1] == ' ')
        at--;
    return at == 0 || s[at - 1] == ']';
}

void mr_npu_parser_free(parser* p) {
    for (size_t i = 0; i < p->nfuncs; i++) {
        func_free(p->funcs[i]);
        free(p->funcs[i]);
    }
    free(p->funcs);
    free(p->table);
    func_free(&p->legacy);
    mr_npu_store_free(&p->cur);
    mr_npu_store_free(&p->leg);
    free(p->live);
    free(p->next_live);
}
