// SPDX-License-Identifier: MIT
// MEMTRACE_MMAP=1: the program's mmap, munmap and mremap calls as heap MT_HEAP_MMAP
// (mmap_track.c). The shim calls the *_traced functions only when recording with the setting
// on; each calls the real function and returns what it returned, errno included.
#ifndef MT_MMAP_TRACK_H
#define MT_MMAP_TRACK_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

void* mt_mmap_track_traced(void* addr, size_t len, int prot, int flags, int fd, off_t off);
int mt_mmap_track_munmap_traced(void* addr, size_t len);
void* mt_mmap_track_mremap_traced(void* old, size_t old_len, size_t new_len, int flags,
                                  void* new_addr);
// The real mmap, also before the real functions are resolved (then the system call).
void* mt_mmap_track_real(void* addr, size_t len, int prot, int flags, int fd, off_t off);
// In a forked child (core_lifecycle.c's fork handler): the table empty and unlocked.
void mt_mmap_track_fork_child(void);

// File mappings the program made while recording: how many, and their page-rounded bytes.
extern _Atomic uint64_t mt_mmap_file_count, mt_mmap_file_bytes;

#endif
