// SPDX-License-Identifier: MIT
// Sampling by bytes (sampling.h): the per-thread Poisson countdown and the process-wide set
// of sampled blocks. The set is STRIPES small open-addressing tables (linear probing,
// tombstones), each behind a spinlock held for a few probes and rehashed in place (new
// mapping, old one unmapped) when its load passes 3/4. A counting filter in front of it
// answers "not sampled" for most frees without taking any lock. Never allocates from the
// traced heap: tables are raw mmap system calls, so MEMTRACE_MMAP's hook never sees them.
// A signal handler of a thread that holds a stripe only tries the lock once (no deadlock).
#include "sampling.h"

#include "config.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

bool mt_sampling;
_Atomic uint64_t mt_sampling_set_full;
__thread int64_t mt_sample_countdown __attribute__((tls_model("initial-exec")));
__thread uint32_t mt_sample_drawn_in __attribute__((tls_model("initial-exec")));
_Atomic uint32_t mt_sample_epoch = 1; // a thread's first allocation: drawn_in 0

// ---- the countdown: xorshift64* per thread, seeded by splitmix64

static __thread uint64_t rng __attribute__((tls_model("initial-exec")));
static _Atomic uint64_t threads_seeded; // MEMTRACE_SAMPLE_SEED: thread k gets seed + k

static uint64_t splitmix64(uint64_t x) {
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

static void seed_thread(void) {
    uint64_t k = atomic_fetch_add(&threads_seeded, 1);
    uint64_t s;
    if (mt_cfg.sample_seeded) {
        s = mt_cfg.sample_seed + k;
    } else {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        s = (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 32) ^ ((uint64_t)gettid() << 16) ^ k;
    }
    rng = splitmix64(s) | 1; // xorshift's state must not be 0
}

// An exponential interval of mean N bytes, rounded up: an allocation of s bytes crosses it
// (countdown <= s) exactly when the real-valued interval is below s, so with 1-exp(-s/N).
static int64_t draw(void) {
    rng ^= rng >> 12;
    rng ^= rng << 25;
    rng ^= rng >> 27;
    uint64_t x = rng * 0x2545f4914f6cdd1dull;
    double u = (double)((x >> 11) + 1) * 0x1.0p-53; // (0, 1]
    double v = -log(u) * (double)mt_cfg.sample_bytes;
    return v > 4e18 ? (int64_t)4e18 : (int64_t)v + 1;
}

bool mt_sampling_cross(size_t size) {
    int64_t s = (int64_t)(size > INT64_MAX / 2 ? INT64_MAX / 2 : size);
    uint32_t epoch = atomic_load_explicit(&mt_sample_epoch, memory_order_relaxed);
    if (mt_sample_drawn_in != epoch) { // its first allocation, or first since a forget
        mt_sample_drawn_in = epoch;
        seed_thread();
        mt_sample_countdown = draw();
        if (mt_sample_countdown - s > 0) {
            mt_sample_countdown -= s;
            return false;
        }
    }
    // The process restarts at the end of the sampled block: memoryless, so a fresh draw.
    mt_sample_countdown = draw();
    return true;
}

// ---- the set

#define STRIPES 64
#define MIN_SLOTS 512 // one page
#define EMPTY 0
#define TOMB 1

typedef struct stripe {
    _Atomic int lock;
    uint32_t cap, used, live; // used counts tombstones too
    uintptr_t* slot;
} __attribute__((aligned(64))) stripe;

static stripe stripes[STRIPES];
// Per filter slot (sampling.h): the blocks in the set with that slot, saturating at 255
// (then never lowered). A slot's stripe is slot % STRIPES, so each counter changes only
// under its stripe's lock.
_Atomic uint8_t mt_sample_filter[1u << MT_SAMPLE_FILTER_BITS];
uint64_t mt_sample_filter_key = 0x9e3779b97f4a7c15ull; // odd; drawn at init
static _Atomic uint64_t set_size;
static uint64_t hash_key; // the position in a stripe's table: independent of the slot
static __thread int held __attribute__((tls_model("initial-exec"))); // stripes this thread holds

static uint64_t hash_of(uintptr_t a) {
    uint64_t x = (uint64_t)a ^ hash_key; // murmur3's finalizer
    x = (x ^ (x >> 33)) * 0xff51afd7ed558ccdull;
    x = (x ^ (x >> 33)) * 0xc4ceb9fe1a85ec53ull;
    return x ^ (x >> 33);
}

// `held` counts a stripe from before it is taken until after it is released: a signal
// handler of this thread that runs in between sees it, and only tries once.
static void spin_lock(stripe* s) {
    held++;
    atomic_signal_fence(memory_order_seq_cst);
    for (int spins = 0;; spins++) {
        if (!atomic_load_explicit(&s->lock, memory_order_relaxed) &&
            !atomic_exchange_explicit(&s->lock, 1, memory_order_acquire))
            break;
        if (spins > 100)
            sched_yield(); // the holder was descheduled
    }
}

static bool lock(stripe* s) {
    if (!held) {
        spin_lock(s);
        return true;
    }
    // A signal handler interrupted this thread inside the set: try once, never wait.
    if (atomic_exchange_explicit(&s->lock, 1, memory_order_acquire))
        return false;
    held++;
    return true;
}

static void unlock(stripe* s) {
    atomic_store_explicit(&s->lock, 0, memory_order_release);
    atomic_signal_fence(memory_order_seq_cst);
    held--;
}

static void* map_slots(size_t n) {
    long p = syscall(SYS_mmap, NULL, n * sizeof(uintptr_t), PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return p < 0 && p > -4096 ? NULL : (void*)p;
}

static uint32_t home(uint64_t h, uint32_t cap) {
    return (uint32_t)h & (cap - 1);
}

// Makes room for one more entry: a table twice as big when the live entries fill half of
// it, else the same size without its tombstones. -ENOMEM leaves the stripe as it was.
static int rehash(stripe* s) {
    uint32_t cap = s->cap ? s->cap : MIN_SLOTS;
    if (s->slot && (uint64_t)s->live * 2 >= cap)
        cap *= 2;
    uintptr_t* t = map_slots(cap);
    if (!t)
        return -ENOMEM;
    for (uint32_t i = 0; i < s->cap; i++) {
        uintptr_t a = s->slot[i];
        if (a == EMPTY || a == TOMB)
            continue;
        uint32_t j = home(hash_of(a), cap);
        while (t[j] != EMPTY)
            j = (j + 1) & (cap - 1);
        t[j] = a;
    }
    if (s->slot)
        syscall(SYS_munmap, s->slot, s->cap * sizeof(uintptr_t));
    s->slot = t;
    s->cap = cap;
    s->used = s->live;
    return 0;
}

int mt_sampling_set_insert(uintptr_t addr) {
    uint64_t h = hash_of(addr);
    uint32_t slot = mt_sample_filter_slot(addr);
    stripe* s = &stripes[slot % STRIPES];
    if (addr <= TOMB || !lock(s))
        return -EBUSY;
    int rc = 0;
    if ((uint64_t)(s->used + 1) * 4 > (uint64_t)s->cap * 3 && (rc = rehash(s))) {
        unlock(s);
        atomic_fetch_add(&mt_sampling_set_full, 1);
        return rc;
    }
    uint32_t i = home(h, s->cap), tomb = UINT32_MAX;
    for (;; i = (i + 1) & (s->cap - 1)) {
        uintptr_t a = s->slot[i];
        if (a == addr) // a missed free left it: it stands for the new block
            goto out;
        if (a == TOMB && tomb == UINT32_MAX)
            tomb = i;
        if (a == EMPTY)
            break;
    }
    if (tomb != UINT32_MAX)
        i = tomb;
    else
        s->used++;
    s->slot[i] = addr;
    s->live++;
    atomic_fetch_add_explicit(&set_size, 1, memory_order_relaxed);
    _Atomic uint8_t* f = &mt_sample_filter[slot];
    uint8_t n = atomic_load_explicit(f, memory_order_relaxed);
    if (n < 255)
        atomic_store_explicit(f, (uint8_t)(n + 1), memory_order_relaxed);
out:
    unlock(s);
    return 0;
}

int mt_sampling_set_remove(uintptr_t addr) {
    uint32_t slot = mt_sample_filter_slot(addr);
    _Atomic uint8_t* f = &mt_sample_filter[slot];
    if (!atomic_load_explicit(f, memory_order_relaxed)) // sampling.h: mt_sampling_keep_free
        return 0;
    uint64_t h = hash_of(addr);
    stripe* s = &stripes[slot % STRIPES];
    if (!lock(s))
        return -EBUSY;
    int found = 0;
    for (uint32_t i = home(h, s->cap); s->slot; i = (i + 1) & (s->cap - 1)) {
        uintptr_t a = s->slot[i];
        if (a == EMPTY)
            break;
        if (a == addr) {
            s->slot[i] = TOMB;
            s->live--;
            atomic_fetch_sub_explicit(&set_size, 1, memory_order_relaxed);
            uint8_t n = atomic_load_explicit(f, memory_order_relaxed);
            if (n < 255)
                atomic_store_explicit(f, (uint8_t)(n - 1), memory_order_relaxed);
            found = 1;
            break;
        }
    }
    unlock(s);
    return found;
}

uint64_t mt_sampling_set_size(void) {
    return atomic_load_explicit(&set_size, memory_order_relaxed);
}

// A new capture after a detach: the blocks sampled before may have been freed while no hook
// looked, and their addresses handed to blocks this capture never sampled. No hook records
// now, but one that started before the stop may still be finishing (a realloc puts its old
// block back): each stripe and its filter slots are cleared under its lock. A stripe this
// thread holds already (the attach interrupted it inside the set) is left as it is.
void mt_sampling_forget(void) {
    for (uint32_t i = 0; i < STRIPES; i++) {
        stripe* s = &stripes[i];
        if (!lock(s))
            continue;
        if (s->slot)
            memset(s->slot, 0, s->cap * sizeof(uintptr_t));
        atomic_fetch_sub_explicit(&set_size, s->live, memory_order_relaxed);
        s->used = s->live = 0;
        for (uint32_t f = i; f < (1u << MT_SAMPLE_FILTER_BITS); f += STRIPES)
            atomic_store_explicit(&mt_sample_filter[f], 0, memory_order_relaxed);
        unlock(s);
    }
    atomic_store(&mt_sampling_set_full, 0); // counted per capture (meta sample_set_full)
    atomic_store(&threads_seeded, 0);
    atomic_fetch_add(&mt_sample_epoch, 1);
}

// fork: no stripe may be held by a thread that will not exist in the child.
static void fork_prepare(void) {
    for (int i = 0; i < STRIPES; i++)
        spin_lock(&stripes[i]);
}

static void fork_done(void) {
    for (int i = STRIPES - 1; i >= 0; i--)
        unlock(&stripes[i]);
}

void mt_sampling_init(void) {
    static bool keyed; // an attach after a detach reads the settings again: key the set once
    mt_sampling = mt_cfg.sample_bytes > 0;
    if (!mt_sampling || keyed)
        return;
    keyed = true;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    hash_key = splitmix64((uint64_t)ts.tv_nsec ^ ((uint64_t)getpid() << 32));
    mt_sample_filter_key = splitmix64(hash_key) | 1;
    pthread_atfork(fork_prepare, fork_done, fork_done);
}
