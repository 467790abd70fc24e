// SPDX-License-Identifier: MIT
// The capture format both sides agree on: schema version, DDL, event kinds.
// The one header shared by preload/ and reporter/. Never allocates, no SQLite calls here.
// docs/capture-format.md documents every table for people who query captures.
#ifndef MEMTRACE_SCHEMA_H
#define MEMTRACE_SCHEMA_H

#include <stdbool.h>
#include <stdint.h>

// 2: event chunks carry a checksum (codec 2). 3: event chunks are compressed (codec 3).
// 4: their times are counted in a unit each chunk states (codec 4). 5: those times as runs
// (codec 5). 6: callsites in compressed chunks (table callsite_chunk; codec 5 events).
// Readers still read versions 1 to 5 (codecs 1 to 5, callsites as rows).
#define MEMTRACE_SCHEMA_VERSION 6
#define MEMTRACE_SCHEMA_VERSION_OLDEST 1
// 'MTRC' in PRAGMA application_id, so `file`-like checks can tell a capture from any SQLite file.
#define MEMTRACE_APPLICATION_ID 0x4d545243

// Event kinds: XX(id, ENUM, "name", is_alloc, is_free). The ids are stored in captures: never
// renumber, only append. realloc is recorded as two events (the free of the old block, then
// the allocation of the new one), each with its own sequence number.
#define MEMTRACE_EVENT_KIND_MAP(XX)                                                                \
    XX(1, MALLOC, "malloc", 1, 0)                                                                  \
    XX(2, CALLOC, "calloc", 1, 0)                                                                  \
    XX(3, REALLOC, "realloc", 1, 0)                                                                \
    XX(4, REALLOC_FREE, "realloc_free", 0, 1)                                                      \
    XX(5, REALLOCARRAY, "reallocarray", 1, 0)                                                      \
    XX(6, REALLOCARRAY_FREE, "reallocarray_free", 0, 1)                                            \
    XX(7, FREE, "free", 0, 1)                                                                      \
    XX(8, POSIX_MEMALIGN, "posix_memalign", 1, 0)                                                  \
    XX(9, ALIGNED_ALLOC, "aligned_alloc", 1, 0)                                                    \
    XX(10, MEMALIGN, "memalign", 1, 0)                                                             \
    XX(11, VALLOC, "valloc", 1, 0)                                                                 \
    XX(12, PVALLOC, "pvalloc", 1, 0)                                                               \
    XX(13, FREE_SIZED, "free_sized", 0, 1)                                                         \
    XX(14, FREE_ALIGNED_SIZED, "free_aligned_sized", 0, 1)                                         \
    XX(15, CUSTOM_ALLOC, "custom_alloc", 1, 0)                                                     \
    XX(16, CUSTOM_FREE, "custom_free", 0, 1)                                                       \
    XX(17, NPU_ALLOC, "npu_alloc", 1, 0)                                                           \
    XX(18, NPU_FREE, "npu_free", 0, 1)                                                             \
    XX(19, MMAP, "mmap", 1, 0)                                                                     \
    XX(20, MUNMAP, "munmap", 0, 1)                                                                 \
    XX(21, MREMAP, "mremap", 1, 0)                                                                 \
    XX(22, MREMAP_FREE, "mremap_free", 0, 1)

typedef enum mt_event_kind {
    MT_KIND_NONE = 0,
#define MT_KIND_ENUM_(id, e, name, a, f) MT_KIND_##e = id,
    MEMTRACE_EVENT_KIND_MAP(MT_KIND_ENUM_)
#undef MT_KIND_ENUM_
        MT_KIND_COUNT_
} mt_event_kind;

static inline const char* mt_kind_name(int kind) {
    switch (kind) {
#define MT_KIND_NAME_(id, e, name, a, f)                                                           \
    case id:                                                                                       \
        return name;
        MEMTRACE_EVENT_KIND_MAP(MT_KIND_NAME_)
#undef MT_KIND_NAME_
    default:
        return "unknown";
    }
}

static inline bool mt_kind_is_alloc(int kind) {
    switch (kind) {
#define MT_KIND_ALLOC_(id, e, name, a, f)                                                          \
    case id:                                                                                       \
        return a;
        MEMTRACE_EVENT_KIND_MAP(MT_KIND_ALLOC_)
#undef MT_KIND_ALLOC_
    default:
        return false;
    }
}

static inline bool mt_kind_is_free(int kind) {
    switch (kind) {
#define MT_KIND_FREE_(id, e, name, a, f)                                                           \
    case id:                                                                                       \
        return f;
        MEMTRACE_EVENT_KIND_MAP(MT_KIND_FREE_)
#undef MT_KIND_FREE_
    default:
        return false;
    }
}

// Leak kinds (leak.kind), as valgrind's memcheck defines them (docs/leaks.md): XX(id, ENUM,
// "name"). Stored in captures: never renumber.
#define MEMTRACE_LEAK_KIND_MAP(XX)                                                                 \
    XX(1, DEFINITE, "definitely_lost")                                                             \
    XX(2, INDIRECT, "indirectly_lost")                                                             \
    XX(3, POSSIBLE, "possibly_lost")                                                               \
    XX(4, REACHABLE, "still_reachable")

typedef enum mt_leak_kind {
    MT_LEAK_UNCLASSIFIED = 0, // no scan, or a block the scan did not see
#define MT_LEAK_ENUM_(id, e, name) MT_LEAK_##e = id,
    MEMTRACE_LEAK_KIND_MAP(MT_LEAK_ENUM_)
#undef MT_LEAK_ENUM_
        MT_LEAK_COUNT_
} mt_leak_kind;

static inline const char* mt_leak_kind_name(int kind) {
    switch (kind) {
#define MT_LEAK_NAME_(id, e, name)                                                                 \
    case id:                                                                                       \
        return name;
        MEMTRACE_LEAK_KIND_MAP(MT_LEAK_NAME_)
#undef MT_LEAK_NAME_
    default:
        return "unclassified";
    }
}

// Heap ids: heap 1 is the traced process's libc heap; an imported NPU log adds heap 2;
// MEMTRACE_MMAP=1 adds heap 3, the program's anonymous mmap/munmap/mremap mappings; a CPython
// process has heap 4, what its own allocators (PyMem_Malloc, PyObject_Malloc) returned; a
// program that reports its own pool's blocks (memtrace.h) has heap 5, named "pool" unless
// the program names it, written when its first block is.
#define MT_HEAP_LIBC 1
#define MT_HEAP_NPU 2
#define MT_HEAP_MMAP 3
#define MT_HEAP_PYTHON 4
#define MT_HEAP_POOL 5
// Not a heap of the capture: what readers take for "every heap the program allocates from"
// (the libc, python and pool heaps, read together in seq order), the default view of a
// process that has a python or pool heap.
#define MT_HEAP_PROGRAM 0
// The chunks of heap `id` that a reader of `heap` reads (MT_HEAP_PROGRAM: libc's, python's
// and the pool's).
#define MT_HEAP_SQL_MATCH "(heap=?1 OR (?1=0 AND heap IN (1,4,5)))"

// Chunk codecs (event_chunk.codec). Schema 1 captures hold codec 1 only, schema 2 codec 2
// only (the same columns followed by a CRC32C of the row), schema 3 codec 3 only (columns of
// references compressed with zstd, then the CRC32C), schema 4 codec 4 only (codec 3 with
// times in a unit the chunk states), schema 5 codec 5 only (codec 4 with runs of equal times):
// memtrace/codec.h.
#define MT_CODEC_VARINT_COLUMNS 1
#define MT_CODEC_VARINT_COLUMNS_CRC32C 2
#define MT_CODEC_ZSTD_COLUMNS_CRC32C 3
#define MT_CODEC_ZSTD_UNITS_CRC32C 4
#define MT_CODEC_ZSTD_RUNS_CRC32C 5

// Counter tracks (counter_track.id) with fixed meaning.
#define MT_TRACK_RSS 1
#define MT_TRACK_VSZ 2
#define MT_TRACK_NPU_MAX_ALLOCATED 3
#define MT_TRACK_NPU_USED 4
#define MT_TRACK_NPU_FREE 5

// The DDL. Every statement is idempotent so a writer may run it on an existing capture.
#define MEMTRACE_SCHEMA_SQL                                                                        \
    "CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value);"                                \
    "CREATE TABLE IF NOT EXISTS heap(id INTEGER PRIMARY KEY, name TEXT NOT NULL,"                  \
    " kind TEXT NOT NULL, time_unit TEXT NOT NULL);"                                               \
    "CREATE TABLE IF NOT EXISTS event_kind(id INTEGER PRIMARY KEY, name TEXT NOT NULL,"            \
    " is_alloc INTEGER NOT NULL, is_free INTEGER NOT NULL);"                                       \
    "CREATE TABLE IF NOT EXISTS thread(tid INTEGER PRIMARY KEY, name TEXT,"                        \
    " first_ts INTEGER, last_ts INTEGER);"                                                         \
    "CREATE TABLE IF NOT EXISTS mapping(id INTEGER PRIMARY KEY, path TEXT NOT NULL,"               \
    " start INTEGER NOT NULL, end INTEGER NOT NULL, load_bias INTEGER NOT NULL,"                   \
    " build_id TEXT, ts_loaded INTEGER, ts_unloaded INTEGER);"                                     \
    "CREATE TABLE IF NOT EXISTS frame(id INTEGER PRIMARY KEY, mapping_id INTEGER,"                 \
    " pc INTEGER NOT NULL, rel_pc INTEGER, function TEXT, file TEXT, line INTEGER,"                \
    " inlined TEXT, relevant INTEGER NOT NULL DEFAULT 1);"                                         \
    "CREATE TABLE IF NOT EXISTS callsite(id INTEGER PRIMARY KEY, parent_id INTEGER NOT NULL,"      \
    " frame_id INTEGER NOT NULL, depth INTEGER NOT NULL);"                                         \
    "CREATE TABLE IF NOT EXISTS callsite_chunk(id INTEGER PRIMARY KEY, count INTEGER NOT NULL,"    \
    " data BLOB NOT NULL);"                                                                        \
    "CREATE TABLE IF NOT EXISTS counter_track(id INTEGER PRIMARY KEY, heap INTEGER NOT NULL,"      \
    " name TEXT NOT NULL, unit TEXT NOT NULL);"                                                    \
    "CREATE TABLE IF NOT EXISTS counter(track INTEGER NOT NULL, ts INTEGER NOT NULL,"              \
    " value INTEGER NOT NULL);"                                                                    \
    "CREATE INDEX IF NOT EXISTS counter_track_ts ON counter(track, ts);"                           \
    "CREATE TABLE IF NOT EXISTS mark(id INTEGER PRIMARY KEY, heap INTEGER NOT NULL,"               \
    " kind TEXT NOT NULL, name TEXT NOT NULL, ts_begin INTEGER NOT NULL, ts_end INTEGER,"          \
    " tid INTEGER, attrs TEXT);"                                                                   \
    "CREATE TABLE IF NOT EXISTS call_count(name TEXT PRIMARY KEY, count INTEGER NOT NULL);"        \
    "CREATE TABLE IF NOT EXISTS event_chunk(id INTEGER PRIMARY KEY, heap INTEGER NOT NULL,"        \
    " seq_first INTEGER NOT NULL, seq_last INTEGER NOT NULL, ts_first INTEGER NOT NULL,"           \
    " ts_last INTEGER NOT NULL, count INTEGER NOT NULL, codec INTEGER NOT NULL,"                   \
    " data BLOB NOT NULL);"                                                                        \
    "CREATE INDEX IF NOT EXISTS event_chunk_seq ON event_chunk(heap, seq_first);"

// The leak scan's verdicts and the names of their kinds (docs/capture-format.md): created
// by the scan that writes them, so the empty capture stays as small as it was and a capture
// without a scan has no such table (its blocks read "unclassified").
#define MT_LEAK_KIND_ROW_(id, e, name) ",(" #id ",'" name "')"
#define MEMTRACE_LEAK_KIND_ROWS MEMTRACE_LEAK_KIND_MAP(MT_LEAK_KIND_ROW_)
#define MEMTRACE_LEAK_TABLE_SQL                                                                    \
    "CREATE TABLE IF NOT EXISTS leak_kind(id INTEGER PRIMARY KEY, name TEXT NOT NULL);"            \
    "INSERT OR REPLACE INTO leak_kind VALUES(0,'unclassified')" MEMTRACE_LEAK_KIND_ROWS ";"        \
    "CREATE TABLE IF NOT EXISTS leak(seq INTEGER PRIMARY KEY, kind INTEGER NOT NULL,"              \
    " holder_seq INTEGER);"

// What a replay of a heap's events gives every default report (docs/capture-format.md,
// "Aggregates"), stored by memreport on first open: not in MEMTRACE_SCHEMA_SQL, so a
// capture without the table reads as before and a reader that does not know it ignores it.
// `fingerprint` names the events (chunk headers, sampling) it was computed from; `data`'s
// layout is the reporter's, numbered by `format`.
#define MEMTRACE_AGGREGATE_SQL                                                                     \
    "CREATE TABLE IF NOT EXISTS aggregate(heap INTEGER PRIMARY KEY, format INTEGER NOT NULL,"      \
    " fingerprint INTEGER NOT NULL, data BLOB NOT NULL);"

// The replay's state every so many events of a heap (docs/capture-format.md, "Checkpoints"),
// stored with its aggregates, so that a report at any moment replays from the last one
// before it. Like the aggregate table, not in MEMTRACE_SCHEMA_SQL. `seq` is the last event
// applied (0: the state before any event); `ts_max` the latest time of the events up to it;
// `ts_min` the earliest of the events since the checkpoint before (the seq 0 row: of those
// after the last checkpoint); `high_bytes` the most bytes live after one of those events and
// `high_seq`, `high_ts` the first event at it; `allocated` the allocations made up to it,
// per callsite (the reporter's bytes). The small columns come before the blobs, so that
// reading them reads no blob's pages.
#define MEMTRACE_CHECKPOINT_SQL                                                                    \
    "CREATE TABLE IF NOT EXISTS checkpoint(heap INTEGER NOT NULL, seq INTEGER NOT NULL,"           \
    " ts_max INTEGER NOT NULL, ts_min INTEGER NOT NULL, high_bytes INTEGER NOT NULL,"              \
    " high_seq INTEGER NOT NULL, high_ts INTEGER NOT NULL, format INTEGER NOT NULL,"               \
    " fingerprint INTEGER NOT NULL, allocated BLOB NOT NULL, data BLOB NOT NULL,"                  \
    " PRIMARY KEY(heap, seq));"

// Other answers a replay of a heap's events gives, stored by memreport when first computed
// (docs/capture-format.md, "Derived"): `key` names the question (the reporter's numbering,
// e.g. the temporal flame graph's moments at so many buckets), `format`, `fingerprint` and
// `data` as in the aggregate table. Not in MEMTRACE_SCHEMA_SQL either.
#define MEMTRACE_DERIVED_SQL                                                                       \
    "CREATE TABLE IF NOT EXISTS derived(heap INTEGER NOT NULL, key INTEGER NOT NULL,"              \
    " format INTEGER NOT NULL, fingerprint INTEGER NOT NULL, data BLOB NOT NULL,"                  \
    " PRIMARY KEY(heap, key));"

#endif
