// SPDX-License-Identifier: MIT
// The /proc files the writer reads again and again (the process's memory and state). open()
// gives the lowest free descriptor number, and programs count on that: a daemon closes 0, 1
// and 2 and opens /dev/null three times; any code may close a descriptor and expect the next
// open to take its number. A descriptor the writer thread held for a moment every few ms was
// taken from the program now and then (640 opens in a million got another number). So these
// files are opened by the thread that starts the capture and kept far above the program's
// descriptors (fdguard.h); a read checks that the descriptor is still the file, and reopens
// it only when the program closed it.
#ifndef MT_PROCFILE_H
#define MT_PROCFILE_H

#include <stddef.h>
#include <sys/types.h>

typedef struct mt_procfile {
    const char* path;
    int fd; // -1: not open
    dev_t dev;
    ino_t ino;
} mt_procfile;

#define MT_PROCFILE(p)                                                                             \
    { .path = (p), .fd = -1 }

// (Re)opens the file for this process (a fork child's copy names its parent's entry).
void mt_procfile_open(mt_procfile* f);
// Closes it if the descriptor is still ours (never one the program took over).
void mt_procfile_close(mt_procfile* f);
// Reads the whole file into buf, NUL-terminated (at most size - 1 bytes): the length, or -1.
ssize_t mt_procfile_read(mt_procfile* f, char* buf, size_t size);

#endif
