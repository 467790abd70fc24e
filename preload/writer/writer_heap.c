// SPDX-License-Identifier: MIT
// The writer thread's heap (see writer_heap.h). Each block has a 16-byte header before it:
// its size class, or for a block mapped on its own the mapping's length, or for an aligned
// block its distance from the block it was cut from. Free blocks of a class are a list.
// Never calls malloc, never reports to the core.
#include "writer_heap.h"

#include "bootstrap.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

__thread bool mt_writer_heap_thread __attribute__((tls_model("initial-exec")));

#define HEADER 16
#define SMALL_MAX (64 << 10) // the largest class's block, header included
#define NCLASSES 44          // 16 to 128 bytes by 16, then four per doubling to SMALL_MAX
#define CHUNK_MIN (1 << 20)
#define MAX_RANGES 1024

enum { CLASS_MAPPED = NCLASSES, CLASS_ALIGNED };

typedef struct header {
    uint32_t cls;
    uint32_t unused;
    size_t size; // CLASS_MAPPED: the mapping's length; CLASS_ALIGNED: the distance back
} header;
_Static_assert(sizeof(header) == HEADER, "a header keeps blocks 16-aligned");

typedef struct free_block {
    struct free_block* next;
} free_block;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static free_block* free_lists[NCLASSES];
static char *bump, *bump_end; // the rest of the newest chunk
static size_t chunks;

// Our mappings, for mt_writer_heap_owns without the lock: a slot is published hi first,
// then lo; lo 0 is an empty slot (a mapping unmapped).
static struct { _Atomic uintptr_t lo, hi; } ranges[MAX_RANGES];
static _Atomic size_t nranges;

static size_t class_of(size_t block) {
    if (block <= 128)
        return (block + 15) / 16 - 1;
    unsigned e = 63u - (unsigned)__builtin_clzll(block - 1); // 2^e < block <= 2^(e+1)
    return 8 + (e - 7) * 4 + ((block - 1 - ((size_t)1 << e)) >> (e - 2));
}

static size_t class_size(size_t cls) {
    if (cls < 8)
        return (cls + 1) * 16;
    size_t e = 7 + (cls - 8) / 4, k = (cls - 8) % 4;
    return ((size_t)1 << e) + (k + 1) * ((size_t)1 << (e - 2));
}

static header* header_of(const void* p) {
    return (header*)((char*)p - HEADER);
}

// Maps len bytes, registered as ours; NULL if no pages or no slot. With the lock held.
static void* map_range(size_t len) {
    size_t slot = atomic_load_explicit(&nranges, memory_order_relaxed);
    for (size_t i = 0; i < slot; i++)
        if (!atomic_load_explicit(&ranges[i].lo, memory_order_relaxed)) {
            slot = i;
            break;
        }
    if (slot == MAX_RANGES)
        return NULL;
    void* p = mt_own_pages(
        mt_real.mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0), len);
    if (p == MAP_FAILED)
        return NULL;
    atomic_store_explicit(&ranges[slot].hi, (uintptr_t)p + len, memory_order_relaxed);
    atomic_store_explicit(&ranges[slot].lo, (uintptr_t)p, memory_order_release);
    if (slot == atomic_load_explicit(&nranges, memory_order_relaxed))
        atomic_store_explicit(&nranges, slot + 1, memory_order_release);
    return p;
}

static void unmap_range(void* p, size_t len) {
    size_t n = atomic_load_explicit(&nranges, memory_order_relaxed);
    for (size_t i = 0; i < n; i++)
        if (atomic_load_explicit(&ranges[i].lo, memory_order_relaxed) == (uintptr_t)p) {
            atomic_store_explicit(&ranges[i].lo, 0, memory_order_release);
            break;
        }
    mt_real.munmap(p, len);
}

bool mt_writer_heap_owns(const void* p) {
    uintptr_t a = (uintptr_t)p;
    size_t n = atomic_load_explicit(&nranges, memory_order_acquire);
    for (size_t i = 0; i < n; i++) {
        uintptr_t lo = atomic_load_explicit(&ranges[i].lo, memory_order_acquire);
        if (lo && a >= lo && a < atomic_load_explicit(&ranges[i].hi, memory_order_relaxed))
            return true;
    }
    return false;
}

// A block of class cls from its list or cut from the newest chunk; with the lock held.
static void* take_small(size_t cls) {
    free_block* b = free_lists[cls];
    if (b) {
        free_lists[cls] = b->next;
        return b;
    }
    size_t size = class_size(cls);
    if ((size_t)(bump_end - bump) < size) {
        // Chunks grow with the heap (1 MiB, then 2, 4, ... 16) so the ranges stay few; the
        // rest of the old one (less than a block of the largest class) is left unused.
        size_t len = (size_t)CHUNK_MIN << (chunks / 4 < 4 ? chunks / 4 : 4);
        char* c = map_range(len);
        if (!c)
            return NULL;
        chunks++;
        bump = c;
        bump_end = c + len;
    }
    void* p = bump;
    bump += size;
    header* h = p;
    h->cls = (uint32_t)cls;
    return (char*)p + HEADER;
}

void mt_writer_heap_take_over(void) {
    if (pthread_mutex_trylock(&lock) == 0) {
        pthread_mutex_unlock(&lock);
        return;
    }
    // Its holder died in a call here: a list or the chunk being cut may be half updated.
    // Every block already handed out stays whole (a header is written before its block is
    // returned, and read only by the block's own free).
    lock = (pthread_mutex_t)PTHREAD_MUTEX_INITIALIZER;
    memset(free_lists, 0, sizeof free_lists);
    bump = bump_end = NULL;
}

void* mt_writer_heap_malloc(size_t size) {
    if (size > SIZE_MAX / 2) {
        errno = ENOMEM;
        return NULL;
    }
    size_t block = (size + HEADER + 15) & ~(size_t)15;
    void* p;
    if (block <= SMALL_MAX) {
        size_t cls = class_of(block);
        pthread_mutex_lock(&lock);
        p = take_small(cls);
        pthread_mutex_unlock(&lock);
    } else {
        size_t page = (size_t)sysconf(_SC_PAGESIZE);
        size_t len = (block + page - 1) & ~(page - 1);
        pthread_mutex_lock(&lock);
        header* h = map_range(len);
        pthread_mutex_unlock(&lock);
        if (h) {
            h->cls = CLASS_MAPPED;
            h->size = len;
        }
        p = h ? (char*)h + HEADER : NULL;
    }
    if (!p)
        errno = ENOMEM;
    return p;
}

void mt_writer_heap_free(void* p) {
    if (!p)
        return;
    header* h = header_of(p);
    if (h->cls == CLASS_ALIGNED) {
        p = (char*)p - h->size;
        h = header_of(p);
    }
    pthread_mutex_lock(&lock);
    if (h->cls == CLASS_MAPPED) {
        unmap_range(h, h->size);
    } else {
        free_block* b = p;
        b->next = free_lists[h->cls];
        free_lists[h->cls] = b;
    }
    pthread_mutex_unlock(&lock);
}

size_t mt_writer_heap_size(const void* p) {
    const header* h = header_of(p);
    size_t back = 0;
    if (h->cls == CLASS_ALIGNED) {
        back = h->size;
        h = header_of((const char*)p - back);
    }
    size_t block = h->cls == CLASS_MAPPED ? h->size : class_size(h->cls);
    return block - HEADER - back;
}

size_t mt_writer_heap_roundup(size_t size) {
    if (size > SIZE_MAX / 2)
        return size;
    size_t block = (size + HEADER + 15) & ~(size_t)15;
    if (block > SMALL_MAX) {
        size_t page = (size_t)sysconf(_SC_PAGESIZE);
        return ((block + page - 1) & ~(page - 1)) - HEADER;
    }
    return class_size(class_of(block)) - HEADER;
}

void* mt_writer_heap_calloc(size_t n, size_t size) {
    size_t total;
    if (__builtin_mul_overflow(n, size, &total)) {
        errno = ENOMEM;
        return NULL;
    }
    void* p = mt_writer_heap_malloc(total);
    // A block mapped on its own is fresh zero pages: left untouched (not made resident).
    if (p && header_of(p)->cls != CLASS_MAPPED)
        memset(p, 0, total);
    return p;
}

void* mt_writer_heap_realloc(void* p, size_t size) {
    if (!p)
        return mt_writer_heap_malloc(size);
    if (size == 0) { // as glibc's
        mt_writer_heap_free(p);
        return NULL;
    }
    size_t have = mt_writer_heap_size(p);
    // Kept in place if it fits and does not waste more than half of it.
    if (size <= have && size >= have / 2)
        return p;
    void* np = mt_writer_heap_malloc(size);
    if (np) {
        memcpy(np, p, have < size ? have : size);
        mt_writer_heap_free(p);
    }
    return np;
}

void* mt_writer_heap_memalign(size_t align, size_t size) {
    if (align <= HEADER)
        return mt_writer_heap_malloc(size);
    if (align & (align - 1) || size > SIZE_MAX / 2 - align) {
        errno = align & (align - 1) ? EINVAL : ENOMEM;
        return NULL;
    }
    char* p = mt_writer_heap_malloc(size + align);
    if (!p)
        return NULL;
    uintptr_t q = ((uintptr_t)p + align - 1) & ~(uintptr_t)(align - 1);
    if (q == (uintptr_t)p)
        return p;
    // q - p is a multiple of 16 (both are), so the header before q is inside the block.
    header* h = header_of((void*)q);
    h->cls = CLASS_ALIGNED;
    h->size = q - (uintptr_t)p;
    return (void*)q;
}

void mt_writer_heap_fork_lock(void) {
    pthread_mutex_lock(&lock);
}

void mt_writer_heap_fork_unlock(void) {
    pthread_mutex_unlock(&lock);
}
