// SPDX-License-Identifier: MIT
// The self-contained HTML flame graph page of `memreport flamegraph`: a pruned flame tree
// (flame_tree.h) and the moment it shows, as the page's JSON data (flamegraph_data.h) put
// into the compiled-in template.
#ifndef MR_FLAMEGRAPH_PAGE_H
#define MR_FLAMEGRAPH_PAGE_H

#include "flame_tree.h"
#include "moments.h"

#include "memtrace/capture.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

// What the page shows: the blocks live at the peak, at a time, or at the end (leaks); or
// a differential flame graph of two runs, each at its own peak (memreport diff --html).
typedef enum mr_flamegraph_mode {
    MR_FLAMEGRAPH_PEAK,
    MR_FLAMEGRAPH_AT,
    MR_FLAMEGRAPH_LEAKS,
    MR_FLAMEGRAPH_DIFF
} mr_flamegraph_mode;

typedef struct mr_flamegraph_view {
    mr_flamegraph_mode mode;
    int64_t t;       // the moment (ns, or the step when steps); unused for leaks
    bool steps;      // an imported NPU heap, timed in allocation steps
    bool all_frames; // the page opens with noise frames shown
    bool inverted;   // the page opens bottom-up (allocating functions as roots)
    // The root's side the page opens with: NULL lets the page choose (its URL hash, the
    // viewer's last choice, else "top"); "top" (icicle) or "bottom" (flame).
    const char* orientation;
    // --temporal: the heap over time and each node's live values at the candidates; the
    // tree then holds every callsite live at any of them (NULL: one moment).
    const mr_moments* temporal;
    // The tree holds several processes (flame_procs.h), at the moment they together held
    // the most (t, in ns from the earliest start), or each at its end (leaks).
    bool processes;
    // memreport view: the page's header and memory timeline (view_data.h); temporal then
    // holds the buckets' edges and allocations too.
    const struct mr_heap_timeline* timeline;
    // MR_FLAMEGRAPH_DIFF: the base run's capture; the tree is a differential one
    // (mr_flame_tree_add_base) and the page's capture the new run's.
    mt_capture* base;
} mr_flamegraph_view;

// Writes the page of the pruned tree g (mr_flame_tree_prune), every < > & in its data
// escaped so that no name can end the script element. Returns 0, -ENOMEM, -EPROTO
// (template without its placeholder) or -EIO.
int mr_flamegraph_page_write(FILE* fp, const mr_flame_tree* g, mt_capture* cap,
                             const mr_flamegraph_view* view);

// memreport view of a capture with several heaps (libc, python, mmap): one page holding each
// heap's data, the first added the one it opens with, and a list of the heaps (each one's
// peak, allocations and blocks live at the end) from which the page switches to another.
typedef struct mr_heap_pages mr_heap_pages;
mr_heap_pages* mr_flamegraph_page_heaps_new(void);
// Adds the data of the heap named `name` (heap.name, or "libc and python" for a python
// process's two heaps together): its tree g and view. Returns 0 or -ENOMEM.
int mr_flamegraph_page_heaps_add(mr_heap_pages* p, const char* name, const mr_flame_tree* g,
                                 mt_capture* cap, const mr_flamegraph_view* view);
// Adds the page of thread tid's blocks (of the heap added first): its tree g and view.
// Returns 0 or -ENOMEM.
int mr_flamegraph_page_heaps_add_thread(mr_heap_pages* p, uint32_t tid, const mr_flame_tree* g,
                                        mt_capture* cap, const mr_flamegraph_view* view);
// memreport view of a process tree: the pages added are the processes' (the first the one
// the page opens with), pid, ppid and depth in the tree say where each sits, and the
// processes' joint peak (the most they held at one moment: peak bytes, at ts on the
// common axis) is the tree's; offset is the page's process's start on that axis, command
// its whole command line (shown on hover), tells the end of its page's name that tells it
// apart from the others (kept in sight when the rest of the name is cut). The pages
// do not share their series: the page stacks each process's own live heap, moved by its
// offset, on the common axis. Returns 0 or -ENOMEM.
int mr_flamegraph_page_heaps_procs(mr_heap_pages* p, uint64_t peak, int64_t ts);
int mr_flamegraph_page_heaps_place(mr_heap_pages* p, size_t page, int64_t pid, int64_t ppid,
                                   unsigned depth, int64_t offset, const char* command,
                                   const char* tells);
// Says on the page (of the heap added first) why its threads have no pages. 0 or -ENOMEM.
int mr_flamegraph_page_heaps_note_threads(mr_heap_pages* p, const char* why);
// Writes the page, as mr_flamegraph_page_write.
int mr_flamegraph_page_heaps_write(FILE* fp, const mr_heap_pages* p);
void mr_flamegraph_page_heaps_free(mr_heap_pages* p);

#endif
