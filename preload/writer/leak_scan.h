// SPDX-License-Identifier: MIT
// The leak scan: which of the blocks live at the capture's end are still reachable, possibly
// lost, indirectly or definitely lost, as valgrind's memcheck defines them (docs/leaks.md).
// Scans in place where the calling thread is the process's last (its signals blocked meanwhile),
// else a copy of the process made with a raw clone (no fork handlers run, no SIGCHLD), so
// the program's memory never changes and its other threads go on undisturbed; the copy
// writes its verdicts into memory shared with this process and exits. Called by the thread
// that finishes the capture; uses only the writer's heap and raw mappings, never the
// program's malloc.
#ifndef MT_LEAK_SCAN_H
#define MT_LEAK_SCAN_H

#include "live_set.h"

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define MT_LEAK_NO_HOLDER UINT32_MAX

typedef struct mt_leak_scan {
    uint8_t* kind;          // per block: its mt_leak_kind
    uint32_t* holder;       // per block: an indirectly lost block's holder (an index), or none
    size_t n;               // blocks
    uint64_t roots_bytes;   // memory scanned as roots (modules' data, stacks, TLS)
    uint64_t scanned_bytes; // roots and the blocks' contents scanned
    int64_t ns;             // from the start to the verdicts
    int64_t cpu_ns;         // the scan's CPU time (the copy's, user and system)
    bool in_place;          // scanned by the calling thread, not in a copy
    void* map;              // the shared mapping behind kind and holder
    size_t map_len;
} mt_leak_scan;

// Classifies blocks[0, n), sorted by address and live in this process now. The stack of
// thread `skip` (the writer thread: its locals hold the addresses of events, its task
// skip_tid) is not a root. Scans in place where the process has no other task, in a copy
// otherwise. Gives up after timeout_ms. 0, or a negative errno with the reason in why[cap].
int mt_leak_scan_run(const mt_live_block* blocks, size_t n, pthread_t skip, pid_t skip_tid,
                     int timeout_ms, mt_leak_scan* out, char* why, size_t cap);
void mt_leak_scan_release(mt_leak_scan* s);
// Whether the scan reads the memory the program mapped itself as roots, as memcheck does:
// only beside glibc's allocator, whose heaps it can tell apart (leak_scan.c).
bool mt_leak_scan_reads_mapped(void);

#endif
