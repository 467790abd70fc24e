// SPDX-License-Identifier: MIT
// The live set: every block of the libc heap the capture holds as allocated and not yet
// freed, by address, with its size, sequence number, callsite and heap. Kept by the writer
// thread from the events it writes (writer.c), so the program's threads pay nothing for it;
// read by the leak scan at the capture's end (leak_scan.h). Memory from the writer's heap
// (writer_heap.h), never the program's malloc. Not thread-safe: one thread owns a set.
#ifndef MT_LIVE_SET_H
#define MT_LIVE_SET_H

#include "memtrace/event.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct mt_live_block {
    uint64_t addr;
    uint64_t size;
    uint64_t seq; // the allocation's
    uint32_t callsite;
    uint8_t heap;
} mt_live_block;

typedef struct mt_live_set mt_live_set;

// A new, empty set; NULL when no memory can be had.
mt_live_set* mt_live_set_new(void);
void mt_live_set_free(mt_live_set* s);
// Applies one event (any order across threads: see live_set.c). 0, or -ENOMEM, after which
// the set is incomplete for good (mt_live_set_complete says so).
int mt_live_set_apply(mt_live_set* s, const mt_event* ev);
// No event with a seq below `seq` can still arrive: the marks of frees older than it may go.
void mt_live_set_settle(mt_live_set* s, uint64_t seq);
// Whether every event applied so far was kept (no -ENOMEM).
bool mt_live_set_complete(const mt_live_set* s);
// Live blocks and their bytes, over all heaps.
size_t mt_live_set_count(const mt_live_set* s);
uint64_t mt_live_set_bytes(const mt_live_set* s);
// Calls fn for each live block, in no particular order; stops at fn's first non-zero
// return, which it returns.
int mt_live_set_each(const mt_live_set* s, int (*fn)(const mt_live_block* b, void* ud), void* ud);
// The live blocks of `heap`, sorted by address, into a new array of the writer's heap
// (mt_writer_heap_free). 0 or -ENOMEM.
int mt_live_set_sorted(const mt_live_set* s, int heap, mt_live_block** out, size_t* n);

#endif
