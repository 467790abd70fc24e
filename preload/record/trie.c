// SPDX-License-Identifier: MIT
// Callsite and frame interning (see trie.h). The per-thread cache needs no lock; the
// shared tables are guarded by trie_lock and touched only on a cache miss. Memory comes
// from the real allocator (the guard is set by the caller) and is never freed.
#include "trie.h"

#include "bootstrap.h"
#include "maps.h"

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <time.h>

static pthread_mutex_t trie_lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t key0, key1;
uint64_t mt_stackhash_keys[3];

// ---- shared tables (under trie_lock)

typedef struct node_slot {
    uintptr_t pc;
    uint32_t parent, id; // id 0 = empty
} node_slot;

typedef struct frame_slot {
    uintptr_t pc;
    uint32_t id; // 0 = empty
} frame_slot;

static node_slot* node_tab;
static size_t node_mask, node_count;
static frame_slot* frame_tab;
static size_t frame_mask, frame_count;

static mt_callsite_row* callsites; // by id - 1
static size_t ncallsites, capcallsites, callsites_written;
static mt_frame_row* frames; // by id - 1
static size_t nframes, capframes, frames_written;
_Atomic uint32_t mt_trie_epoch = 1;

static inline uint64_t mix(uint64_t x) {
    x ^= x >> 32;
    x *= 0xd6e8feb86659fd93ull;
    x ^= x >> 32;
    x *= 0xd6e8feb86659fd93ull;
    x ^= x >> 32;
    return x;
}

static inline size_t node_hash(uint32_t parent, uintptr_t pc) {
    return (size_t)mix((uint64_t)pc ^ key0 ^
                       ((uint64_t)parent << 32 | parent) * 0x9e3779b97f4a7c15ull);
}

// The tables grow inside hooks, and the real allocator may take its arena lock: a signal
// handler of the program that allocates must not run meanwhile, or it would wait for that
// lock forever. Rare (the tables double), so the two system calls do not matter.
static sigset_t block_signals(void) {
    sigset_t all, old;
    sigfillset(&all);
    mt_real.sigprocmask(SIG_BLOCK, &all, &old);
    return old;
}

static void restore_signals(sigset_t old) {
    mt_real.sigprocmask(SIG_SETMASK, &old, NULL);
}

static void* grow_array(void* p, size_t* cap, size_t elem) {
    size_t nc = *cap ? *cap * 2 : 4096;
    sigset_t old = block_signals();
    void* np = mt_real.realloc(p, nc * elem);
    restore_signals(old);
    if (np)
        *cap = nc;
    return np;
}

static bool rehash_nodes(void) {
    // Small at first (a short program interns a few hundred): each page of a fresh table a
    // hashed insert touches is a page fault.
    size_t cap = node_mask ? (node_mask + 1) * 2 : 1 << 10;
    sigset_t old = block_signals();
    node_slot* t = mt_real.calloc(cap, sizeof *t);
    restore_signals(old);
    if (!t)
        return false;
    for (size_t i = 0; node_tab && i <= node_mask; i++) {
        if (!node_tab[i].id)
            continue;
        size_t j = node_hash(node_tab[i].parent, node_tab[i].pc) & (cap - 1);
        while (t[j].id)
            j = (j + 1) & (cap - 1);
        t[j] = node_tab[i];
    }
    old = block_signals();
    mt_real.free(node_tab);
    restore_signals(old);
    node_tab = t;
    node_mask = cap - 1;
    return true;
}

static bool rehash_frames(void) {
    size_t cap = frame_mask ? (frame_mask + 1) * 2 : 1 << 9;
    sigset_t old = block_signals();
    frame_slot* t = mt_real.calloc(cap, sizeof *t);
    restore_signals(old);
    if (!t)
        return false;
    for (size_t i = 0; frame_tab && i <= frame_mask; i++) {
        if (!frame_tab[i].id)
            continue;
        size_t j = mix(frame_tab[i].pc ^ key1) & (cap - 1);
        while (t[j].id)
            j = (j + 1) & (cap - 1);
        t[j] = frame_tab[i];
    }
    old = block_signals();
    mt_real.free(frame_tab);
    restore_signals(old);
    frame_tab = t;
    frame_mask = cap - 1;
    return true;
}

// A row is counted once it is whole: the exit watcher writes every counted row, even where
// the thread that made the last one died holding the lock (mt_trie_take_over).
static void counted(size_t* count, uint32_t id) {
    atomic_signal_fence(memory_order_release);
    *count = id;
}

static uint32_t intern_frame(uintptr_t pc) {
    if ((frame_count + 1) * 2 > frame_mask + 1 && !rehash_frames())
        return 0;
    size_t j = mix(pc ^ key1) & frame_mask;
    for (; frame_tab[j].id; j = (j + 1) & frame_mask)
        if (frame_tab[j].pc == pc)
            return frame_tab[j].id;
    if (nframes == capframes) {
        mt_frame_row* nf = grow_array(frames, &capframes, sizeof *frames);
        if (!nf)
            return 0;
        frames = nf;
    }
    uintptr_t bias = 0;
    uint32_t mapping = pc ? mt_maps_lookup(pc, &bias) : 0;
    uint32_t id = (uint32_t)nframes + 1;
    frames[id - 1] = (mt_frame_row){id, mapping, pc, pc - bias};
    counted(&nframes, id);
    frame_tab[j] = (frame_slot){pc, id};
    frame_count++;
    return id;
}

static uint32_t intern_node(uint32_t parent, uintptr_t pc, uint32_t depth) {
    if ((node_count + 1) * 2 > node_mask + 1 && !rehash_nodes())
        return 0;
    size_t j = node_hash(parent, pc) & node_mask;
    for (; node_tab[j].id; j = (j + 1) & node_mask)
        if (node_tab[j].pc == pc && node_tab[j].parent == parent)
            return node_tab[j].id;
    uint32_t frame = intern_frame(pc);
    if (!frame)
        return 0;
    if (ncallsites == capcallsites) {
        mt_callsite_row* nc = grow_array(callsites, &capcallsites, sizeof *callsites);
        if (!nc)
            return 0;
        callsites = nc;
    }
    uint32_t id = (uint32_t)ncallsites + 1;
    callsites[id - 1] = (mt_callsite_row){id, parent, frame, depth};
    counted(&ncallsites, id);
    node_tab[j] = (node_slot){pc, parent, id};
    node_count++;
    return id;
}

static uint32_t intern_locked(const uintptr_t* pcs, int n, bool truncated) {
    uint32_t parent = 0, depth = 0;
    if (truncated && !(parent = intern_node(0, 0, ++depth)))
        return 0;
    for (int i = 0; i < n; i++)
        if (!(parent = intern_node(parent, pcs[i], ++depth)))
            return 0;
    return parent;
}

// ---- per-thread cache

#define CACHE_SLOTS 8192 // 4096 sets of two

typedef struct cache_entry {
    uint64_t h1, h2;
    uint32_t leaf, epoch;
} cache_entry;

static cache_entry* thread_cache(void** slot) {
    if (!*slot) {
        // mmap, not malloc: keeps the cache out of the traced heap and zero-filled.
        void* p = mt_own_pages(mmap(NULL, CACHE_SLOTS * sizeof(cache_entry), PROT_READ | PROT_WRITE,
                                    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0),
                               CACHE_SLOTS * sizeof(cache_entry));
        *slot = p == MAP_FAILED ? NULL : p;
    }
    return *slot;
}

uint32_t mt_trie_intern_hashed(const mt_stack* st, void** cache_slot) {
    uint32_t ep = atomic_load_explicit(&mt_trie_epoch, memory_order_acquire);
    mt_callsite_memo* memo = st->memo;
    uint32_t leaf = 0;
    mt_stackhash hash = st->hash_later ? mt_stackhash_of(st->pcs, st->n) : st->hash;
    uint64_t h1 = mix(hash.h1 ^ (uint64_t)st->n ^ ((uint64_t)st->truncated << 63));
    uint64_t h2 = mix(hash.h2 + (uint64_t)st->n);
    cache_entry* cache = thread_cache(cache_slot);
    // Two-way set associative: a program's few thousand hot stacks rarely evict each other.
    cache_entry* e = cache ? &cache[h1 & (CACHE_SLOTS - 2)] : NULL;
    if (e && e[0].h1 == h1 && e[0].h2 == h2 && e[0].epoch == ep && e[0].leaf) {
        leaf = e[0].leaf;
    } else if (e && e[1].h1 == h1 && e[1].h2 == h2 && e[1].epoch == ep && e[1].leaf) {
        cache_entry hit = e[1]; // most recent first
        e[1] = e[0];
        e[0] = hit;
        leaf = hit.leaf;
    } else {
        pthread_mutex_lock(&trie_lock);
        leaf = intern_locked(st->pcs, st->n, st->truncated);
        ep = atomic_load_explicit(&mt_trie_epoch, memory_order_relaxed);
        pthread_mutex_unlock(&trie_lock);
        if (e && leaf) {
            e[1] = e[0];
            e[0] = (cache_entry){h1, h2, leaf, ep};
        }
    }
    if (memo)
        *memo = (mt_callsite_memo){leaf, ep};
    return leaf;
}

void mt_trie_init(void) {
    uint64_t k[3];
    if (getrandom(k, sizeof k, GRND_NONBLOCK) != (ssize_t)sizeof k) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        k[0] = mix((uint64_t)ts.tv_nsec ^ (uint64_t)(uintptr_t)&ts);
        k[1] = mix(k[0] + 1);
        k[2] = mix(k[1] + 2);
    }
    key0 = k[0];
    key1 = k[1];
    mt_stackhash_keys[0] = mix(k[0] + 3);
    mt_stackhash_keys[1] = mix(k[1] + 4);
    mt_stackhash_keys[2] = mix(k[2] + 5);
}

void mt_trie_reset(void) {
    pthread_mutex_lock(&trie_lock);
    if (node_tab)
        memset(node_tab, 0, (node_mask + 1) * sizeof *node_tab);
    if (frame_tab)
        memset(frame_tab, 0, (frame_mask + 1) * sizeof *frame_tab);
    node_count = frame_count = 0;
    atomic_fetch_add_explicit(&mt_trie_epoch, 1, memory_order_release);
    pthread_mutex_unlock(&trie_lock);
}

// ---- rows written on use (mt_trie_write_on_use): the writer's alone, but for the fork

size_t mt_trie_inherited;
static uint8_t* cs_unwritten; // by callsite id - 1, below mt_trie_inherited: 1 = not written
static uint8_t* fr_unwritten; // by frame id - 1, below fr_inherited
static size_t fr_inherited;
static mt_callsite_row* cs_queue; // named by an event, to write at the next drain
static size_t cs_queued, cs_queue_cap;
static mt_frame_row* fr_queue;
static size_t fr_queued, fr_queue_cap;

void mt_trie_write_on_use(void) {
    frames_written = nframes; // only what is made from now on is written as made
    callsites_written = ncallsites;
    cs_queued = fr_queued = 0;
    mt_trie_inherited = fr_inherited = 0;
    uint8_t* cs = ncallsites ? mt_real.realloc(cs_unwritten, ncallsites) : cs_unwritten;
    uint8_t* fr = nframes ? mt_real.realloc(fr_unwritten, nframes) : fr_unwritten;
    if (cs)
        cs_unwritten = cs;
    if (fr)
        fr_unwritten = fr;
    if ((ncallsites && !cs) || (nframes && !fr)) { // no memory: write them all, as before
        mt_trie_rewrite_all();
        return;
    }
    memset(cs_unwritten, 1, ncallsites);
    memset(fr_unwritten, 1, nframes);
    mt_trie_inherited = ncallsites;
    fr_inherited = nframes;
}

static bool queue_row(void** q, size_t* n, size_t* cap, const void* row, size_t elem) {
    if (*n == *cap && !(*q = grow_array(*q, cap, elem)))
        return false;
    memcpy((char*)*q + *n * elem, row, elem);
    (*n)++;
    return true;
}

// Queues callsite `id` and its callers and frames not yet written, under trie_lock.
static void use_locked(uint32_t id) {
    while (id && id <= mt_trie_inherited && cs_unwritten[id - 1]) {
        const mt_callsite_row* c = &callsites[id - 1];
        uint32_t f = c->frame;
        if (f && f <= fr_inherited && fr_unwritten[f - 1]) {
            if (!queue_row((void**)&fr_queue, &fr_queued, &fr_queue_cap, &frames[f - 1],
                           sizeof *frames))
                return;
            fr_unwritten[f - 1] = 0;
        }
        if (!queue_row((void**)&cs_queue, &cs_queued, &cs_queue_cap, c, sizeof *c))
            return;
        cs_unwritten[id - 1] = 0;
        id = c->parent;
    }
}

void mt_trie_use_slow(uint32_t callsite) {
    if (!cs_unwritten[callsite - 1])
        return;
    pthread_mutex_lock(&trie_lock);
    use_locked(callsite);
    pthread_mutex_unlock(&trie_lock);
}

// Copies out up to max rows: first those queued, then the table's from *written on. The
// table may be moved by a hook meanwhile: its address is read under the lock.
static size_t drain(void* out, size_t max, size_t elem, void* const* queue, size_t* queued,
                    void* const* table, const size_t* count, size_t* written) {
    pthread_mutex_lock(&trie_lock);
    size_t q = *queued < max ? *queued : max;
    if (q)
        memcpy(out, (char*)*queue + (*queued - q) * elem, q * elem);
    *queued -= q;
    size_t n = *count - *written;
    if (n > max - q)
        n = max - q;
    if (n)
        memcpy((char*)out + q * elem, (const char*)*table + *written * elem, n * elem);
    *written += n;
    // A callsite made since the fork may stand on the parent's callers, or at its frames:
    // queued for the next drain (callsites are drained before frames).
    if (mt_trie_inherited && table == (void* const*)&callsites)
        for (size_t i = q; i < q + n; i++) {
            const mt_callsite_row* c = (const mt_callsite_row*)out + i;
            use_locked(c->parent);
            if (c->frame && c->frame <= fr_inherited && fr_unwritten[c->frame - 1] &&
                queue_row((void**)&fr_queue, &fr_queued, &fr_queue_cap, &frames[c->frame - 1],
                          sizeof *frames))
                fr_unwritten[c->frame - 1] = 0;
        }
    pthread_mutex_unlock(&trie_lock);
    return q + n;
}

size_t mt_trie_drain_frames(mt_frame_row* out, size_t max) {
    return drain(out, max, sizeof *out, (void* const*)&fr_queue, &fr_queued, (void* const*)&frames,
                 &nframes, &frames_written);
}

size_t mt_trie_drain_callsites(mt_callsite_row* out, size_t max) {
    return drain(out, max, sizeof *out, (void* const*)&cs_queue, &cs_queued,
                 (void* const*)&callsites, &ncallsites, &callsites_written);
}

void mt_trie_rewrite_all(void) {
    frames_written = 0;
    callsites_written = 0;
    mt_trie_inherited = fr_inherited = 0;
    cs_queued = fr_queued = 0;
}

void mt_trie_lock(void) {
    pthread_mutex_lock(&trie_lock);
}

void mt_trie_unlock(void) {
    pthread_mutex_unlock(&trie_lock);
}

void mt_trie_take_over(void) {
    if (pthread_mutex_trylock(&trie_lock) == 0) {
        pthread_mutex_unlock(&trie_lock);
        return;
    }
    // Its holder died in one of the calls above. An intern leaves its rows whole up to the
    // count (its event was never stored); a use or a drain by the writer leaves rows queued
    // or counted as written: the watcher goes on from there (a row queued twice is written
    // twice, the same) or takes the capture back to its last commit and writes all again.
    trie_lock = (pthread_mutex_t)PTHREAD_MUTEX_INITIALIZER;
}
