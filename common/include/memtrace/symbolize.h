// SPDX-License-Identifier: MIT
// Symbolization of a capture's frames with elfutils (libdwfl/libdw): names, file:line,
// inlined chains and relevance are computed once per unique frame and stored in the
// capture's frame table, so reports need no binaries afterwards. Shared by the tracer's
// writer thread (at finalize) and memreport (captures whose program was killed).
#ifndef MEMTRACE_SYMBOLIZE_H
#define MEMTRACE_SYMBOLIZE_H

#include <stdbool.h>
#include <stddef.h>

typedef struct sqlite3 sqlite3;

// The name given to the tracer's truncation marker (pc 0, no mapping): the root frame of a
// stack that was cut at the depth limit, its outermost frames lost.
#define MT_SYMBOLIZE_TRUNCATED "[truncated]"

// Re-symbolize every frame, not only those whose function is still NULL.
#define MT_SYMBOLIZE_ALL 1u
// Write the names into TEMP copies of the frame and meta tables (which the connection's
// unqualified queries read from then on), leaving the file as it is: for a capture that
// cannot be written.
#define MT_SYMBOLIZE_IN_MEMORY 2u

// Fills frame.function/file/line/inlined/relevant for the frames whose function IS NULL
// (all of them with MT_SYMBOLIZE_ALL), in one transaction (a savepoint, so a caller's open
// transaction is fine), and sets meta 'symbolized'='1'.
//
// What a frame row holds afterwards (every captured pc is a return address, so the lookup
// is made at rel_pc - 1, the call instruction):
// - function: the physical (non-inlined) function containing the call, demangled; from
//   DWARF, else .symtab, else .dynsym; `module+0xREL_PC` when nothing resolves (also when
//   the file on disk is missing or its build-id differs from mapping.build_id). Never empty.
// - file, line: source of the call inside `function` (NULL without line info).
// - inlined: NULL, or a JSON array [{"function","file","line"}, ...] of the functions
//   inlined at that pc, innermost first; the innermost's file:line is the call itself, each
//   one's location is inside its own body. A reader's full chain for the frame is
//   inlined[0..n-1], then function.
// - relevant: 0 for noise (libc's allocator internals, C++ operator new/delete, runtime
//   and thread start-up frames, anything in libmemtrace.so), 1 otherwise.
//
// Noise frames are named from the symbol table alone, without file:line: a module's DWARF
// is loaded only for frames that reports show.
//
// Thread-safe with respect to other connections; writes nothing on stdout/stderr (errors
// go to err). Returns the number of frames written, or a negative errno (-EIO: SQLite).
int mt_symbolize_capture(sqlite3* db, unsigned flags, char* err, size_t errlen);

// The tracer's pass at exit, bounded in time: names from the symbol cache and the symbol
// tables always; from a module's DWARF only while the pass is within budget_ms, counting
// what reading that DWARF would cost (its size) before reading it. Frames it leaves stay
// unnamed (*deferred of them); meta 'symbolized' is then not set but 'symbols_deferred' is,
// and memreport names them on first open (mt_symbolize_capture) with the same result.
// read_files false: names from the symbol cache only, every other frame deferred (a process
// recorded through an attach goes on running: no library is loaded into it for names).
int mt_symbolize_capture_at_exit(sqlite3* db, int budget_ms, bool read_files, int* deferred,
                                 char* err, size_t errlen);

#endif
