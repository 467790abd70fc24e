// SPDX-License-Identifier: MIT
// The live set (see live_set.h): an open-addressing table keyed by address (linear probing,
// deletion by backward shift), grown at 3/4 full into a table twice as big.
//
// The writer gets each thread's events in that thread's order, but two threads' buffers in
// any order: a block's free on one thread may arrive before its allocation on another, and
// the next allocation at the address on a third before either. So a slot holds the newest
// event known at its address (by seq): a live block, or a "freed" slot when the newest is a
// free. An older event than the slot's changes nothing. A freed slot stays until the address
// is allocated again, or until the writer says no older event can still arrive
// (mt_live_set_settle), when the table is next rebuilt.
// Never calls malloc, never reports to the core.
#include "live_set.h"

#include "writer_heap.h"

#include "memtrace/schema.h"

#include <errno.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

enum { SLOT_EMPTY = 0, SLOT_LIVE = 1, SLOT_FREED = 2 };

typedef struct slot {
    uint64_t addr;
    uint64_t size;
    uint64_t seq;
    uint32_t callsite;
    uint8_t heap;
    uint8_t state;
} slot;

struct mt_live_set {
    slot* t;
    size_t cap;  // a power of two
    size_t used; // live and freed slots
    size_t live;
    uint64_t bytes;
    uint64_t key;
    uint64_t settled; // no event older than this can still arrive (mt_live_set_settle)
    bool incomplete;
};

// Small at first: each page of a fresh table a hashed insert touches is a page fault.
#define CAP_MIN 512

// A keyed murmur3 finalizer: addresses come from the allocator, but the program chooses
// what it allocates, so no fixed hash of them is trusted (docs/tracer.md).
static uint64_t hash_of(const mt_live_set* s, uint64_t a) {
    uint64_t x = a ^ s->key;
    x = (x ^ (x >> 33)) * 0xff51afd7ed558ccdull;
    x = (x ^ (x >> 33)) * 0xc4ceb9fe1a85ec53ull;
    return x ^ (x >> 33);
}

static uint64_t splitmix64(uint64_t x) {
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

mt_live_set* mt_live_set_new(void) {
    mt_live_set* s = mt_writer_heap_calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->t = mt_writer_heap_calloc(CAP_MIN, sizeof *s->t);
    if (!s->t) {
        mt_writer_heap_free(s);
        return NULL;
    }
    s->cap = CAP_MIN;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    s->key = splitmix64((uint64_t)ts.tv_nsec ^ ((uint64_t)getpid() << 32) ^ (uintptr_t)s);
    return s;
}

void mt_live_set_free(mt_live_set* s) {
    if (!s)
        return;
    mt_writer_heap_free(s->t);
    mt_writer_heap_free(s);
}

// The slot of addr, or the empty slot where it would go.
static size_t find(const mt_live_set* s, uint64_t addr) {
    size_t mask = s->cap - 1, i = hash_of(s, addr) & mask;
    while (s->t[i].state != SLOT_EMPTY && s->t[i].addr != addr)
        i = (i + 1) & mask;
    return i;
}

// Rebuilds the table without the freed slots older than s->settled, twice as big when
// what stays fills more than half of it.
static int grow(mt_live_set* s) {
    size_t keep = 0;
    for (size_t i = 0; i < s->cap; i++)
        keep += s->t[i].state == SLOT_LIVE ||
                (s->t[i].state == SLOT_FREED && s->t[i].seq >= s->settled);
    size_t cap = keep * 2 > s->cap ? s->cap * 2 : s->cap;
    slot* t = mt_writer_heap_calloc(cap, sizeof *t);
    if (!t)
        return -ENOMEM;
    slot* old = s->t;
    size_t old_cap = s->cap;
    s->t = t;
    s->cap = cap;
    for (size_t i = 0; i < old_cap; i++)
        if (old[i].state == SLOT_LIVE || (old[i].state == SLOT_FREED && old[i].seq >= s->settled))
            t[find(s, old[i].addr)] = old[i];
    s->used = keep;
    mt_writer_heap_free(old);
    return 0;
}

int mt_live_set_apply(mt_live_set* s, const mt_event* ev) {
    bool alloc = mt_kind_is_alloc(ev->kind);
    if (!ev->addr || (!alloc && !mt_kind_is_free(ev->kind)))
        return 0;
    size_t i = find(s, ev->addr);
    slot* e = &s->t[i];
    if (e->state != SLOT_EMPTY && e->seq > ev->seq)
        return 0; // older than what is known of the address
    if (e->state == SLOT_LIVE) {
        s->live--;
        s->bytes -= e->size;
    }
    if (e->state == SLOT_EMPTY) {
        if ((s->used + 1) * 4 > s->cap * 3) {
            if (grow(s)) {
                s->incomplete = true;
                return -ENOMEM;
            }
            i = find(s, ev->addr);
            e = &s->t[i];
        }
        s->used++;
    }
    *e = (slot){.addr = ev->addr,
                .size = alloc ? ev->size : 0,
                .seq = ev->seq,
                .callsite = ev->callsite,
                .heap = ev->heap,
                .state = alloc ? SLOT_LIVE : SLOT_FREED};
    if (alloc) {
        s->live++;
        s->bytes += ev->size;
    }
    return 0;
}

void mt_live_set_settle(mt_live_set* s, uint64_t seq) {
    if (seq > s->settled)
        s->settled = seq;
}

bool mt_live_set_complete(const mt_live_set* s) {
    return !s->incomplete;
}

size_t mt_live_set_count(const mt_live_set* s) {
    return s->live;
}

uint64_t mt_live_set_bytes(const mt_live_set* s) {
    return s->bytes;
}

int mt_live_set_each(const mt_live_set* s, int (*fn)(const mt_live_block* b, void* ud), void* ud) {
    for (size_t i = 0; i < s->cap; i++) {
        const slot* e = &s->t[i];
        if (e->state != SLOT_LIVE)
            continue;
        mt_live_block b = {e->addr, e->size, e->seq, e->callsite, e->heap};
        int rc = fn(&b, ud);
        if (rc)
            return rc;
    }
    return 0;
}

// A bottom-up merge sort by address through tmp, for a few blocks: the radix sort's table
// of counts is 512 KiB of fresh pages to clear for each pass, most of a short program's sort.
static void merge_by_addr(mt_live_block* a, mt_live_block* tmp, size_t n) {
    for (size_t width = 1; width < n; width *= 2) {
        for (size_t lo = 0; lo < n; lo += 2 * width) {
            size_t mid = lo + width < n ? lo + width : n;
            size_t hi = lo + 2 * width < n ? lo + 2 * width : n;
            size_t i = lo, j = mid, k = lo;
            while (i < mid && j < hi)
                tmp[k++] = a[j].addr < a[i].addr ? a[j++] : a[i++];
            while (i < mid)
                tmp[k++] = a[i++];
            while (j < hi)
                tmp[k++] = a[j++];
        }
        memcpy(a, tmp, n * sizeof *a);
    }
}

// Below this many blocks the merge sort is the faster.
#define MERGE_MAX 16384

// LSD radix sort by address, 16 bits a pass over the bits that differ: no qsort, which may
// call malloc (the program's heap, on a program's thread at exit).
static void sort_by_addr(mt_live_block* a, mt_live_block* tmp, size_t* count, size_t n) {
    uint64_t differ = 0;
    for (size_t i = 1; i < n; i++)
        differ |= a[i].addr ^ a[0].addr;
    for (unsigned shift = 0; shift < 64 && (differ >> shift); shift += 16) {
        memset(count, 0, (1 << 16) * sizeof *count);
        for (size_t i = 0; i < n; i++)
            count[(a[i].addr >> shift) & 0xffff]++;
        size_t sum = 0;
        for (size_t d = 0; d < (1 << 16); d++) {
            size_t c = count[d];
            count[d] = sum;
            sum += c;
        }
        for (size_t i = 0; i < n; i++)
            tmp[count[(a[i].addr >> shift) & 0xffff]++] = a[i];
        memcpy(a, tmp, n * sizeof *a);
    }
}

int mt_live_set_sorted(const mt_live_set* s, int heap, mt_live_block** out, size_t* n) {
    size_t k = 0;
    mt_live_block* a = mt_writer_heap_malloc((s->live + 1) * sizeof *a);
    mt_live_block* tmp = mt_writer_heap_malloc((s->live + 1) * sizeof *tmp);
    size_t* count = s->live < MERGE_MAX ? NULL : mt_writer_heap_malloc((1 << 16) * sizeof *count);
    if (!a || !tmp || (!count && s->live >= MERGE_MAX)) {
        mt_writer_heap_free(a);
        mt_writer_heap_free(tmp);
        mt_writer_heap_free(count);
        return -ENOMEM;
    }
    for (size_t i = 0; i < s->cap; i++) {
        const slot* e = &s->t[i];
        if (e->state == SLOT_LIVE && e->heap == heap)
            a[k++] = (mt_live_block){e->addr, e->size, e->seq, e->callsite, e->heap};
    }
    if (count)
        sort_by_addr(a, tmp, count, k);
    else
        merge_by_addr(a, tmp, k);
    mt_writer_heap_free(tmp);
    mt_writer_heap_free(count);
    *out = a;
    *n = k;
    return 0;
}
