// SPDX-License-Identifier: MIT
// Module maps from dl_iterate_phdr. dl_iterate_phdr runs without our locks held (the
// loader may allocate under its own lock, and an allocation can take ours), then the
// result is merged under maps_lock. Internal memory comes from the real allocator.
#include "maps.h"

#include "bootstrap.h"
#include "clock.h"
#include "trie.h"

#include <elf.h>
#include <link.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static pthread_mutex_t maps_lock = PTHREAD_MUTEX_INITIALIZER;
static mt_mapping* maps; // all mappings ever seen, by id - 1
static size_t nmaps, capmaps;
static uintptr_t self_lo, self_hi;

void mt_maps_lock(void) {
    pthread_mutex_lock(&maps_lock);
}

void mt_maps_unlock(void) {
    pthread_mutex_unlock(&maps_lock);
}

void mt_maps_take_over(void) {
    if (pthread_mutex_trylock(&maps_lock) == 0) {
        pthread_mutex_unlock(&maps_lock);
        return;
    }
    // Its holder died in a lookup (a hook's, interning a frame), which changes nothing, or
    // in a refresh, whose rows are whole up to the count (a new one perhaps without its
    // range yet: written with none).
    maps_lock = (pthread_mutex_t)PTHREAD_MUTEX_INITIALIZER;
}

typedef struct found {
    uintptr_t start, end, bias;
    char path[512];
    char build_id[41];
} found;

typedef struct found_list {
    found* v;
    size_t n, cap;
} found_list;

static void read_build_id(const struct dl_phdr_info* info, char out[41]) {
    out[0] = 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr)* ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_NOTE)
            continue;
        const unsigned char* p = (const unsigned char*)(info->dlpi_addr + ph->p_vaddr);
        const unsigned char* end = p + ph->p_memsz;
        while (p + sizeof(ElfW(Nhdr)) <= end) {
            const ElfW(Nhdr)* nh = (const ElfW(Nhdr)*)p;
            const unsigned char* name = p + sizeof *nh;
            const unsigned char* desc = name + ((nh->n_namesz + 3) & ~3u);
            if (nh->n_type == NT_GNU_BUILD_ID && nh->n_namesz == 4 && memcmp(name, "GNU", 4) == 0 &&
                desc + nh->n_descsz <= end) {
                size_t n = nh->n_descsz > 20 ? 20 : nh->n_descsz;
                for (size_t k = 0; k < n; k++)
                    snprintf(out + 2 * k, 3, "%02x", desc[k]);
                return;
            }
            p = desc + ((nh->n_descsz + 3) & ~3u);
        }
    }
}

static int collect(struct dl_phdr_info* info, size_t size, void* ud) {
    (void)size;
    found_list* l = ud;
    uintptr_t lo = UINTPTR_MAX, hi = 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr)* ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD)
            continue;
        uintptr_t s = info->dlpi_addr + ph->p_vaddr;
        if (s < lo)
            lo = s;
        if (s + ph->p_memsz > hi)
            hi = s + ph->p_memsz;
    }
    if (hi == 0)
        return 0;
    if (l->n == l->cap) {
        size_t nc = l->cap ? l->cap * 2 : 64;
        found* nv = mt_real.realloc(l->v, nc * sizeof *nv);
        if (!nv)
            return 1;
        l->v = nv;
        l->cap = nc;
    }
    found* f = &l->v[l->n++];
    f->start = lo;
    f->end = hi;
    f->bias = info->dlpi_addr;
    const char* name = info->dlpi_name;
    if (!name || !*name) {
        // The main program has no name here; an object containing this function is us.
        ssize_t n = readlink("/proc/self/exe", f->path, sizeof f->path - 1);
        f->path[n > 0 ? n : 0] = 0;
    } else {
        snprintf(f->path, sizeof f->path, "%s", name);
    }
    read_build_id(info, f->build_id);
    uintptr_t me = (uintptr_t)&mt_maps_init;
    if (me >= lo && me < hi) {
        self_lo = lo;
        self_hi = hi;
    }
    return 0;
}

static bool same(const mt_mapping* m, const found* f) {
    return m->start == f->start && m->bias == f->bias && strcmp(m->path, f->path) == 0;
}

// A new row (under maps_lock), its path copied; NULL when out of memory.
static mt_mapping* add_mapping(const char* path, int64_t now) {
    if (nmaps == capmaps) {
        size_t nc = capmaps ? capmaps * 2 : 64;
        mt_mapping* nm = mt_real.realloc(maps, nc * sizeof *nm);
        if (!nm)
            return NULL;
        maps = nm;
        capmaps = nc;
    }
    size_t plen = strlen(path) + 1;
    char* copy = mt_real.malloc(plen);
    if (!copy)
        return NULL;
    memcpy(copy, path, plen);
    mt_mapping* m = &maps[nmaps];
    memset(m, 0, sizeof *m);
    m->id = (uint32_t)nmaps + 1;
    m->path = copy;
    m->ts_loaded = now;
    m->ts_unloaded = -1;
    // Counted once it can be written: the exit watcher writes every counted row, even where
    // the thread adding it died holding the lock (mt_maps_take_over).
    atomic_signal_fence(memory_order_release);
    nmaps = m->id;
    return m;
}

static void merge(const found_list* l, int64_t now) {
    // Unload what is gone.
    for (size_t i = 0; i < nmaps; i++) {
        if (maps[i].ts_unloaded >= 0 || maps[i].pseudo)
            continue;
        bool present = false;
        for (size_t k = 0; k < l->n && !present; k++)
            present = same(&maps[i], &l->v[k]);
        if (!present)
            maps[i].ts_unloaded = now;
    }
    // Add what is new.
    for (size_t k = 0; k < l->n; k++) {
        bool known = false;
        for (size_t i = 0; i < nmaps && !known; i++)
            known = maps[i].ts_unloaded < 0 && same(&maps[i], &l->v[k]);
        if (known)
            continue;
        const found* f = &l->v[k];
        mt_mapping* m = add_mapping(f->path, now);
        if (!m)
            return;
        m->start = f->start;
        m->end = f->end;
        m->bias = f->bias;
        memcpy(m->build_id, f->build_id, sizeof m->build_id);
    }
}

uint32_t mt_maps_add_pseudo(const char* path, uintptr_t start, uintptr_t end) {
    int saved_guard = mt_guard;
    mt_guard = 1;
    pthread_mutex_lock(&maps_lock);
    mt_mapping* m = add_mapping(path, mt_clock_now());
    if (m) {
        m->start = start;
        m->end = end;
        m->bias = start;
        m->pseudo = true;
    }
    pthread_mutex_unlock(&maps_lock);
    mt_guard = saved_guard;
    return m ? m->id : 0;
}

void mt_maps_refresh(bool unloaded) {
    int saved_guard = mt_guard;
    mt_guard = 1;
    found_list l = {0};
    dl_iterate_phdr(collect, &l);
    int64_t now = mt_clock_now();
    if (unloaded)
        mt_trie_reset(); // before new code can reuse the freed addresses' frame ids
    pthread_mutex_lock(&maps_lock);
    merge(&l, now);
    pthread_mutex_unlock(&maps_lock);
    mt_real.free(l.v);
    mt_guard = saved_guard;
}

void mt_maps_init(void) {
    mt_maps_refresh(false);
}

uint32_t mt_maps_lookup(uintptr_t pc, uintptr_t* bias) {
    uint32_t id = 0;
    pthread_mutex_lock(&maps_lock);
    for (size_t i = 0; i < nmaps; i++) {
        if (maps[i].ts_unloaded < 0 && pc >= maps[i].start && pc < maps[i].end) {
            id = maps[i].id;
            *bias = maps[i].bias;
            break;
        }
    }
    pthread_mutex_unlock(&maps_lock);
    return id;
}

bool mt_maps_range_of(uintptr_t addr, uintptr_t* lo, uintptr_t* hi) {
    bool hit = false;
    pthread_mutex_lock(&maps_lock);
    for (size_t i = 0; i < nmaps && !hit; i++) {
        if (maps[i].ts_unloaded < 0 && addr >= maps[i].start && addr < maps[i].end) {
            *lo = maps[i].start;
            *hi = maps[i].end;
            hit = true;
        }
    }
    pthread_mutex_unlock(&maps_lock);
    return hit;
}

void mt_maps_self_range(uintptr_t* lo, uintptr_t* hi) {
    *lo = self_lo;
    *hi = self_hi;
}

void mt_maps_drain(mt_maps_visit_fn fn, void* ud) {
    pthread_mutex_lock(&maps_lock);
    for (size_t i = 0; i < nmaps; i++) {
        mt_mapping* m = &maps[i];
        if (!m->written || (m->ts_unloaded >= 0 && !m->unload_written)) {
            fn(m, ud);
            m->written = true;
            m->unload_written = m->ts_unloaded >= 0;
        }
    }
    pthread_mutex_unlock(&maps_lock);
}

void mt_maps_rewrite_all(void) {
    for (size_t i = 0; i < nmaps; i++) {
        maps[i].written = false;
        maps[i].unload_written = false;
    }
}
