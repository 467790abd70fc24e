// SPDX-License-Identifier: MIT
// The loaded ELF objects (main program, shared libraries, vdso) with their address ranges,
// load bias and build-id, kept current across dlopen/dlclose. One mapping row per object
// load; an unloaded object keeps its row (ts_unloaded set) so old frames keep their names.
#ifndef MT_MAPS_H
#define MT_MAPS_H

#include <stdbool.h>
#include <stdint.h>

typedef struct mt_mapping {
    uint32_t id;
    uintptr_t start, end, bias;
    char* path;
    char build_id[41];
    int64_t ts_loaded, ts_unloaded;
    bool written, unload_written;
    bool pseudo; // not an ELF object (mt_maps_add_pseudo): never unloaded
} mt_mapping;

void mt_maps_init(void);
// Re-reads the loaded objects. After a dlclose (`unloaded`), stacks are re-interned so a
// library loaded later at the same addresses gets frames of its own.
void mt_maps_refresh(bool unloaded);
// A mapping that is no loaded object: frames whose pcs lie in [start, end) are its (Python
// frames: python_frames.h), rel_pc = pc - start. Returns its id, 0 when out of memory.
uint32_t mt_maps_add_pseudo(const char* path, uintptr_t start, uintptr_t end);
// The mapping id containing pc (0: none); *bias gets its load bias. Caller holds no maps
// lock; safe from the callsite-miss path.
uint32_t mt_maps_lookup(uintptr_t pc, uintptr_t* bias);
// The tracer's own text range, for dropping its frames from stacks.
void mt_maps_self_range(uintptr_t* lo, uintptr_t* hi);
// The address range of the loaded object containing addr; false when none does.
bool mt_maps_range_of(uintptr_t addr, uintptr_t* lo, uintptr_t* hi);

// Writer side: calls fn for every mapping not yet written (or newly unloaded).
typedef void (*mt_maps_visit_fn)(const mt_mapping* m, void* ud);
void mt_maps_drain(mt_maps_visit_fn fn, void* ud);
// A new capture (a fork child's, a capture started again) or one taken back to its last
// commit (the exit watcher's): every mapping is written again, with its unload.
void mt_maps_rewrite_all(void);
void mt_maps_lock(void);
void mt_maps_unlock(void);
// The exit watcher's, with every thread gone: a lock that a thread died holding (in a
// lookup, which changes nothing, or a dlopen's refresh) is made anew.
void mt_maps_take_over(void);

#endif
