// SPDX-License-Identifier: MIT
// MEMTRACE_MMAP=1: the program's anonymous mappings as heap MT_HEAP_MMAP. Owns the table of
// live anonymous mappings the program made (page-rounded ranges and the callsite that mapped
// each), so that a munmap or mremap of part of a mapping, or of several adjacent ones (the
// kernel merges them), becomes exact events: the free of each mapping touched, then the
// allocation of what is left of it, under its original callsite (docs/capture-format.md,
// heap mmap). File mappings are not a heap: they are counted (meta mmap_file_*).
// Runs inside the program's mmap calls: never allocates from the traced heap, no stdio; the
// table lives in memory mapped with the real mmap.
#include "mmap_track.h"

#include "bootstrap.h"
#include "core.h"

#include "memtrace/schema.h"

#include <errno.h>
#include <sched.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

typedef struct region {
    uintptr_t start, end;
    uint32_t callsite;
} region;

// 1 Mi mappings: a process's default vm.max_map_count is 65530, so the table never fills
// first. Mapped lazily (untouched pages cost nothing).
#define TABLE_MAX (1u << 20)
static region* table;
static size_t table_n;
static _Atomic int owner; // tid of the thread using the table, 0 when free

_Atomic uint64_t mt_mmap_file_count, mt_mmap_file_bytes;

static uintptr_t page_mask(void) {
    static uintptr_t mask;
    if (!mask)
        mask = (uintptr_t)sysconf(_SC_PAGESIZE) - 1;
    return mask;
}

static uintptr_t page_up(uintptr_t n) {
    return (n + page_mask()) & ~page_mask();
}

void* mt_mmap_track_real(void* addr, size_t len, int prot, int flags, int fd, off_t off) {
    if (MT_UNLIKELY(!mt_real.mmap))
        mt_bootstrap_resolve();
    if (MT_UNLIKELY(!mt_real.mmap)) // still resolving: the system call itself
        return (void*)syscall(SYS_mmap, addr, len, prot, flags, fd, off);
    return mt_real.mmap(addr, len, prot, flags, fd, off);
}

// The table is one thread's at a time. A signal handler whose mmap interrupts this thread's
// use of it (or the tracer's own mmap calls inside) passes through untraced: false.
static bool lock(void) {
    int me = (int)gettid(), free_ = 0;
    if (atomic_load_explicit(&owner, memory_order_relaxed) == me)
        return false;
    while (!atomic_compare_exchange_weak_explicit(&owner, &free_, me, memory_order_acquire,
                                                  memory_order_relaxed)) {
        free_ = 0;
        sched_yield();
    }
    if (!table) {
        void* p =
            mt_own_pages(mt_mmap_track_real(NULL, TABLE_MAX * sizeof *table, PROT_READ | PROT_WRITE,
                                            MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0),
                         TABLE_MAX * sizeof *table);
        if (p == MAP_FAILED) {
            atomic_store_explicit(&owner, 0, memory_order_release);
            return false;
        }
        table = p;
    }
    return true;
}

static void unlock(void) {
    atomic_store_explicit(&owner, 0, memory_order_release);
}

void mt_mmap_track_fork_child(void) {
    // The thread that held the table does not exist here: its lock would be waited on
    // forever, and the table may be half updated. The child's capture starts with no
    // mappings, as it starts with no blocks.
    table_n = 0;
    atomic_store_explicit(&owner, 0, memory_order_release);
}

// Index of the first region whose end is above addr.
static size_t first_after(uintptr_t addr) {
    size_t lo = 0, hi = table_n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (table[mid].end <= addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static void insert(uintptr_t start, uintptr_t end, uint32_t callsite) {
    if (table_n == TABLE_MAX)
        return;
    size_t i = first_after(start);
    memmove(&table[i + 1], &table[i], (table_n - i) * sizeof *table);
    table[i] = (region){start, end, callsite};
    table_n++;
}

// Records the removal of [lo, hi) from the table: per region touched, its free (kind
// free_kind), then the allocation of the parts left below and above the range.
static void remove_range(uintptr_t lo, uintptr_t hi, int free_kind) {
    size_t i = first_after(lo);
    while (i < table_n && table[i].start < hi) {
        region r = table[i];
        mt_heap_op ops[3];
        int n = 0;
        ops[n++] = (mt_heap_op){.kind = free_kind, .addr = r.start};
        region left = {r.start, lo, r.callsite}, right = {hi, r.end, r.callsite};
        bool has_left = r.start<lo, has_right = r.end> hi;
        if (has_left)
            ops[n++] = (mt_heap_op){.kind = MT_KIND_MMAP,
                                    .addr = left.start,
                                    .size = left.end - left.start,
                                    .callsite = r.callsite};
        if (has_right)
            ops[n++] = (mt_heap_op){.kind = MT_KIND_MMAP,
                                    .addr = right.start,
                                    .size = right.end - right.start,
                                    .callsite = r.callsite};
        mt_core_on_heap_ops(MT_HEAP_MMAP, ops, n);
        // Replace r by its left and right parts, in address order.
        memmove(&table[i], &table[i + 1], (table_n - i - 1) * sizeof *table);
        table_n--;
        if (has_right)
            insert(right.start, right.end, right.callsite);
        if (has_left)
            insert(left.start, left.end, left.callsite);
        i = first_after(hi > r.end ? r.end : hi);
    }
}

// After a refused MAP_FIXED mmap or MREMAP_FIXED mremap: the kernel may have unmapped the
// target before it failed (mremap does, first). The table's regions there that are no
// longer mapped (msync says ENOMEM) are removed; those still mapped stay, unrecorded.
static void remove_unmapped(uintptr_t lo, uintptr_t hi) {
    size_t i = first_after(lo);
    while (i < table_n && table[i].start < hi) {
        uintptr_t from = table[i].start > lo ? table[i].start : lo;
        uintptr_t to = table[i].end < hi ? table[i].end : hi;
        if (msync((void*)from, to - from, MS_ASYNC) == 0) {
            i++;
            continue;
        }
        remove_range(from, to, MT_KIND_MUNMAP);
        i = first_after(to);
    }
}

static void add(int kind, uintptr_t start, size_t len, uint32_t callsite) {
    mt_heap_op op = {.kind = kind, .addr = start, .size = len, .callsite = callsite};
    mt_core_on_heap_ops(MT_HEAP_MMAP, &op, 1);
    insert(start, start + len, op.callsite);
}

void* mt_mmap_track_traced(void* addr, size_t len, int prot, int flags, int fd, off_t off) {
    bool anon = flags & MAP_ANONYMOUS;
    if (!(flags & MAP_FIXED) && !anon) {
        void* p = mt_mmap_track_real(addr, len, prot, flags, fd, off);
        if (p != MAP_FAILED) {
            atomic_fetch_add(&mt_mmap_file_count, 1);
            atomic_fetch_add(&mt_mmap_file_bytes, page_up(len));
        }
        return p;
    }
    if (!lock())
        return mt_mmap_track_real(addr, len, prot, flags, fd, off);
    void* p = mt_mmap_track_real(addr, len, prot, flags, fd, off);
    int saved_errno = errno;
    // MAP_FIXED replaced whatever was mapped there; a refused call nothing, as a rule. The
    // table is ours until unlock: no other thread's mapping there can be recorded before.
    if ((flags & MAP_FIXED) && len && p != MAP_FAILED)
        remove_range((uintptr_t)addr, (uintptr_t)addr + page_up(len), MT_KIND_MUNMAP);
    else if ((flags & MAP_FIXED) && len)
        remove_unmapped((uintptr_t)addr, (uintptr_t)addr + page_up(len));
    if (p != MAP_FAILED && anon)
        add(MT_KIND_MMAP, (uintptr_t)p, page_up(len), MT_CALLSITE_HERE);
    else if (p != MAP_FAILED) {
        atomic_fetch_add(&mt_mmap_file_count, 1);
        atomic_fetch_add(&mt_mmap_file_bytes, page_up(len));
    }
    unlock();
    errno = saved_errno;
    return p;
}

int mt_mmap_track_munmap_traced(void* addr, size_t len) {
    // The kernel refuses these (EINVAL) and unmaps nothing: nothing to record.
    if (((uintptr_t)addr & page_mask()) || !len || !lock())
        return mt_real.munmap(addr, len);
    // Recorded once it succeeded (a refused munmap unmaps nothing), before unlock: another
    // thread's mmap of the same addresses waits for the table, so it is recorded after.
    int rc = mt_real.munmap(addr, len);
    int saved_errno = errno;
    if (rc == 0)
        remove_range((uintptr_t)addr, (uintptr_t)addr + page_up(len), MT_KIND_MUNMAP);
    unlock();
    errno = saved_errno;
    return rc;
}

void* mt_mmap_track_mremap_traced(void* old, size_t old_len, size_t new_len, int flags,
                                  void* new_addr) {
    if (((uintptr_t)old & page_mask()) || !lock())
        return mt_real.mremap(old, old_len, new_len, flags, new_addr);
    uintptr_t lo = (uintptr_t)old, hi = lo + page_up(old_len);
    size_t at = first_after(lo);
    // Not one of the program's anonymous mappings (a file mapping, or a copy: old_len 0).
    if (!old_len || at == table_n || table[at].start >= hi) {
        unlock();
        return mt_real.mremap(old, old_len, new_len, flags, new_addr);
    }
    void* p = mt_real.mremap(old, old_len, new_len, flags, new_addr);
    int saved_errno = errno;
    uintptr_t target = (uintptr_t)new_addr, target_end = target + page_up(new_len);
    if (p != MAP_FAILED) {
        if (flags & MREMAP_FIXED)
            remove_range(target, target_end, MT_KIND_MUNMAP);
        if (!(flags & MREMAP_DONTUNMAP))
            remove_range(lo, hi, MT_KIND_MREMAP_FREE);
        add(MT_KIND_MREMAP, (uintptr_t)p, page_up(new_len), MT_CALLSITE_HERE);
    } else if (flags & MREMAP_FIXED) {
        remove_unmapped(target, target_end);
    }
    unlock();
    errno = saved_errno;
    return p;
}
