// SPDX-License-Identifier: MIT
// Opening a file to read as input: a capture, its -wal, an NPU log, a suppressions file, a
// binary named by a capture's mappings. Only a regular file is read: a FIFO named there (by
// a capture's author, or planted in a capture directory) would block the reader forever,
// a device would feed it anything. Never blocks, never allocates.
#ifndef MEMTRACE_INPUT_H
#define MEMTRACE_INPUT_H

#include <stddef.h>

// Opens path read-only (O_NONBLOCK, so a FIFO's open returns at once, O_CLOEXEC,
// O_NOCTTY) and checks what it is. Returns the descriptor, or a negative errno with the
// message in err: the open's own (-ENOENT, -EACCES, ...: "cannot open: ..."), -EISDIR
// ("is a directory") or -ENODEV ("not a regular file").
int mt_input_open(const char* path, char* err, size_t errlen);

// Whether path names something that exists and is not a regular file or a directory
// (a FIFO, a socket, a device), following symlinks.
int mt_input_special(const char* path);

#endif
