// SPDX-License-Identifier: MIT
// An output file. "-" means stdout; on a terminal (stdout, or a path naming one such as
// /dev/tty), whatever the format, control characters written through it are escaped
// (mr_escape_terminal_stream, escape.h). Otherwise the data goes to a temporary file in the same
// directory, renamed over `path` by mr_output_file_commit, removed by mr_output_file_abort; an
// existing `path` is refused unless `force`. No half-written file is ever left. An existing `path`
// that is not a regular file (/dev/null, a FIFO, a shell's /dev/fd/N) is written in place: renaming
// over it would replace the device or pipe with a file. Written in place are FIFOs, sockets,
// terminals and /dev/null only; any other device is refused (exit 3), so a symlink planted at the
// path never leads a report into a disk.
#ifndef MR_OUTPUT_FILE_H
#define MR_OUTPUT_FILE_H

#include <stdbool.h>
#include <stdio.h>

typedef struct mr_output_file {
    FILE* fp;
    char* path;       // NULL for stdout
    char* tmp;        // NULL for stdout and a file written in place
    FILE* raw;        // a terminal written in place: the file under the escaping fp
    bool to_terminal; // a terminal: fp escapes control characters (escape.h)
} mr_output_file;

// Returns 0 or an exit code (after printing the reason). Commit says "memreport: wrote
// FILE" on stderr once the file is in place (never for stdout).
int mr_output_file_open(mr_output_file* o, const char* path, bool force);
// Whether path exists and is written in place: a device, FIFO or socket.
bool mr_output_file_in_place(const char* path);
int mr_output_file_commit(mr_output_file* o);
void mr_output_file_abort(mr_output_file* o);

// A default output name: path with the extension of its last component (if any) replaced
// by ext (".db", ".png"). Returns a malloc'd string or NULL.
char* mr_output_file_path_with_ext(const char* path, const char* ext);

#endif
