// SPDX-License-Identifier: MIT
// Reading and writing capture files (SQLite, schema in memtrace/schema.h).
// The reader validates what it opens and streams events in global sequence order,
// merging the per-thread chunks; the writer creates a capture and appends chunks.
// Errors are negative errno values; a message for people goes into the caller's buffer.
#ifndef MEMTRACE_CAPTURE_H
#define MEMTRACE_CAPTURE_H

#include "memtrace/event.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct sqlite3 sqlite3;

// ---- rows

// Rows of the capture's tables as the writer takes them and the reader gives them
// (docs/capture-format.md). A 0 id of a mapping, a NULL string or a has_ flag left false is stored
// as SQL NULL.
typedef struct mt_frame_rec {
    int64_t id, mapping_id; // mapping_id 0: no mapping (pc outside every loaded object)
    uint64_t pc;
    bool has_rel_pc;
    uint64_t rel_pc;
    const char* function; // NULL until symbolized
    const char* file;     // with function: known names (Python frames, imported stacks)
    int line;             // 0: none
} mt_frame_rec;

typedef struct mt_callsite_rec {
    int64_t id, parent_id, frame_id, depth; // parent_id 0: a root
} mt_callsite_rec;

typedef struct mt_mapping_rec {
    int64_t id;
    const char* path;
    uint64_t start, end, load_bias;
    const char* build_id; // NULL or "": unknown
    int64_t ts_loaded;
    int64_t ts_unloaded; // negative: still loaded
} mt_mapping_rec;

typedef struct mt_mark_rec {
    int heap;
    const char* kind; // "mark", "range", or an importer's kind
    const char* name;
    int64_t ts_begin;
    bool has_end; // false: ts_end NULL (a range still open, closed by mt_capture_writer_mark_end)
    int64_t ts_end;
    bool has_tid;
    int64_t tid;
    const char* attrs; // a JSON object, or NULL
} mt_mark_rec;

typedef struct mt_counter_point {
    int64_t ts, value;
} mt_counter_point;

// ---- reader

typedef struct mt_capture mt_capture;

// Opens and validates a capture (read-write when possible, so readers can cache derived
// tables; read-only otherwise). A capture left unfinished (killed program, full disk) is
// read with its -wal file, never checkpointed. Checks SQLite's structure (files up to
// 64 MiB) and that callsites form a tree. On failure returns -ENOENT/-EACCES/-EIO (cannot
// open or read, locked), -EISDIR, -EPROTO (not a capture, corrupt) or -ENOTSUP (newer
// schema), with a one-line message in words in err.
int mt_capture_open(const char* path, mt_capture** out, char* err, size_t errlen);
void mt_capture_close(mt_capture* cap);
// Opens a capture that its program may still be writing, for one consistent read (memreport
// live): read-only, without file locks, the -wal read as it is at the first read (a
// snapshot of the committed transactions), nothing ever written, checkpointed or removed,
// and no symbolization (mt_capture_symbolize does nothing). Read what you need, then ask
// mt_capture_live_changed: true means the tracer checkpointed meanwhile, so what was read
// may mix two moments (close, and read again from a new open). Errors as mt_capture_open.
int mt_capture_open_live(const char* path, mt_capture** out, char* err, size_t errlen);
bool mt_capture_live_changed(mt_capture* cap);
// A second handle on cap's file, read-only and not checked again, for another thread's
// reads (each handle serves one thread at a time; close it with mt_capture_close). Returns
// 0, -ENOTSUP for a capture read with its -wal or a live one (their one connection holds
// what they read), -ENOMEM or -EIO.
int mt_capture_open_reader(mt_capture* cap, mt_capture** out);
// Whether cap was opened with mt_capture_open_live.
bool mt_capture_is_live(const mt_capture* cap);
const char* mt_capture_path(const mt_capture* cap);
// Calls fn for each thread that has a name, in tid order. Returns 0 or -EIO.
typedef void (*mt_thread_fn)(void* ud, int64_t tid, const char* name);
int mt_capture_threads(mt_capture* cap, mt_thread_fn fn, void* ud);

// Meta values. mt_capture_meta_text returns a malloc'd copy (NULL when absent).
char* mt_capture_meta_text(mt_capture* cap, const char* key);
int64_t mt_capture_meta_int(mt_capture* cap, const char* key, int64_t fallback);
// True when capture_status is not 'complete' (the program was killed or the tracer failed).
bool mt_capture_truncated(mt_capture* cap);

// ---- typed reads of the tables (docs/capture-format.md)
//
// A row reader calls fn once per row; a nonzero return from fn stops it and is returned.
// Otherwise it returns 0, or -EPROTO when the rows cannot be read (mt_capture_error says
// why). Strings handed to fn live until fn returns.

// The connection's latest SQLite error in words, after a read returned -EPROTO.
const char* mt_capture_error(mt_capture* cap);

typedef struct mt_heap_rec {
    int id;
    const char* name;
    const char* kind; // "libc", "npu"
    const char* time_unit;
} mt_heap_rec;
typedef int (*mt_heap_fn)(void* ud, const mt_heap_rec* h);
// The heaps, in id order.
int mt_capture_heaps(mt_capture* cap, mt_heap_fn fn, void* ud);

// How many events the chunks of one heap hold and the times of the first and the last,
// from the chunks' headers (no event is decoded). Returns 1, 0 when the heap has no chunk
// (all zero), or -EPROTO.
typedef struct mt_heap_span {
    uint64_t events;
    int64_t first_ts, last_ts;
} mt_heap_span;
int mt_capture_heap_span(mt_capture* cap, int heap, mt_heap_span* out);
// The last seq of the chunks of one heap holding an event stamped at or before ts (from
// their headers' ts_first): no event after it is. Returns 1 with *seq, 0 when no chunk
// holds one, or -EPROTO.
int mt_capture_heap_seq_until(mt_capture* cap, int heap, int64_t ts, uint64_t* seq);

typedef int (*mt_counter_fn)(void* ud, int track, int64_t ts, int64_t value);
// The points of one counter track in time order (points of equal time as written).
int mt_capture_counters(mt_capture* cap, int track, mt_counter_fn fn, void* ud);
// The same for the points after after_ts only (the track's index: a reader following a
// running program reads only what is new).
int mt_capture_counters_after(mt_capture* cap, int track, int64_t after_ts, mt_counter_fn fn,
                              void* ud);
// The points of tracks first..last in the order they were written: one scan of the table,
// no index lookup per point, for tracks an importer wrote in time order (check it).
int mt_capture_counters_written(mt_capture* cap, int first, int last, mt_counter_fn fn, void* ud);
// The time of a track's last point. Returns 1, 0 when the track has none, or -EPROTO.
int mt_capture_counter_end(mt_capture* cap, int track, int64_t* ts);

// Which marks mt_capture_marks reads.
typedef struct mt_mark_query {
    int heap;
    bool other_heaps; // true: the marks of every heap but `heap`
    const char* kind; // NULL: every kind
    bool by_time;     // true: ordered by ts_begin, then as written; false: as written
} mt_mark_query;
typedef int (*mt_mark_fn)(void* ud, const mt_mark_rec* m);
int mt_capture_marks(mt_capture* cap, const mt_mark_query* q, mt_mark_fn fn, void* ud);

// The leak scan's verdicts (the leak table), in seq order: each block's allocation seq, its
// mt_leak_kind and its holder's seq (0: none). -ENOENT when the capture has no verdicts,
// -EPROTO for a row memtrace never writes.
typedef int (*mt_leak_fn)(void* ud, uint64_t seq, int kind, uint64_t holder_seq);
int mt_capture_leaks(mt_capture* cap, mt_leak_fn fn, void* ud);

// The calls counted per allocator entry point, in name order (a damaged row's name may be
// NULL).
typedef int (*mt_call_count_fn)(void* ud, const char* name, int64_t count);
int mt_capture_call_counts(mt_capture* cap, mt_call_count_fn fn, void* ud);

// The stacks: the highest frame and callsite ids (0 when a table is empty), then the rows.
int mt_capture_stack_ids(mt_capture* cap, int64_t* max_frame, int64_t* max_callsite);
typedef struct mt_frame_info {
    int64_t id;
    uint64_t pc;
    uint64_t rel_pc;      // as stored, else pc minus the mapping's load bias, else pc
    int64_t mapping_id;   // 0: no mapping
    const char* module;   // the mapping's path; NULL: no mapping
    const char* function; // NULL until symbolized
    const char* file;     // NULL without line information
    int line;
    const char* inlined; // NULL, or a JSON array of the functions inlined at pc
    bool relevant;
} mt_frame_info;
typedef int (*mt_frame_fn)(void* ud, const mt_frame_info* f);
int mt_capture_frames(mt_capture* cap, mt_frame_fn fn, void* ud);
// The mappings (loaded modules) in id order; a NULL time reads as 0 (ts_unloaded: -1).
typedef int (*mt_mapping_fn)(void* ud, const mt_mapping_rec* m);
int mt_capture_mappings(mt_capture* cap, mt_mapping_fn fn, void* ud);
// Callsites in id order (the rows of table callsite and of callsite_chunk; an id in both, or
// in two chunks, reads as its last row); a NULL parent or frame reads as 0.
typedef int (*mt_callsite_fn)(void* ud, const mt_callsite_rec* c);
int mt_capture_callsites(mt_capture* cap, mt_callsite_fn fn, void* ud);

// ---- callsite chunks (table callsite_chunk, schema 6: capture_callsites.c)

// The most callsites a chunk may hold: readers refuse a row claiming more before decoding.
#define MT_CALLSITE_CHUNK_MAX 65536
// Worst-case size of a chunk of n callsites.
size_t mt_capture_callsite_chunk_bound(size_t n);
// Encodes n callsites (1..MT_CALLSITE_CHUNK_MAX, any ids) into out, which holds
// mt_capture_callsite_chunk_bound(n) bytes. Returns the BLOB's length, 0 when out of memory.
size_t mt_capture_callsite_chunk_encode(const mt_callsite_rec* c, size_t n, uint8_t* out);
// Decodes the BLOB of a row whose count column is count into out (count callsites, in the
// order written). Returns 0, -EBADMSG when its checksum does not match, -EPROTO when it does
// not decode into exactly count callsites, -ENOMEM.
int mt_capture_callsite_chunk_decode(const uint8_t* data, size_t len, int64_t count,
                                     mt_callsite_rec* out);

// ---- aggregates (memtrace/schema.h MEMTRACE_AGGREGATE_SQL; the bytes are the reporter's)

// A digest of what a heap's events are: its chunks' headers (ids, seq and time bounds,
// counts, codecs, sizes) and the meta that weighs them (sampling). Reads no chunk's bytes.
// Returns 0 or -EPROTO.
int mt_capture_aggregate_fingerprint(mt_capture* cap, int heap, uint64_t* out);
// The stored aggregates of a heap, as written: returns 1 with *data malloc'd (the caller
// frees), 0 when there are none (no table, no row), or -ENOMEM.
int mt_capture_aggregate_read(mt_capture* cap, int heap, int64_t* format, uint64_t* fingerprint,
                              uint8_t** data, size_t* len);
// Whether this handle may write the file (not opened read-only, not a live capture).
bool mt_capture_writable(mt_capture* cap);
// Stores (replaces) a heap's aggregates in one savepoint. Returns 0, -EROFS (a read-only
// handle) or -EIO (a full disk, a lock: nothing is changed).
int mt_capture_aggregate_store(mt_capture* cap, int heap, int64_t format, uint64_t fingerprint,
                               const void* data, size_t len);

// ---- derived answers (memtrace/schema.h MEMTRACE_DERIVED_SQL; the bytes are the reporter's)

// The stored answer `key` of a heap, as written: returns as mt_capture_aggregate_read.
int mt_capture_derived_read(mt_capture* cap, int heap, int64_t key, int64_t* format,
                            uint64_t* fingerprint, uint8_t** data, size_t* len);
// The stored answer `key` of a heap, to read in pieces (one of tens of MB is never whole in
// memory): returns 1 with *blob open and *len its size, 0 when there is none, -ENOMEM or
// -EIO. The blob reads what the row held when opened, until the row is replaced.
typedef struct mt_capture_blob mt_capture_blob;
int mt_capture_derived_open(mt_capture* cap, int heap, int64_t key, int64_t* format,
                            uint64_t* fingerprint, mt_capture_blob** blob, size_t* len);
// n bytes at offset into buf: 0, or -EIO (beyond the end, the row replaced, a read failed).
int mt_capture_blob_read(mt_capture_blob* blob, size_t offset, void* buf, size_t n);
void mt_capture_blob_close(mt_capture_blob* blob);
// Stores (replaces) the answer `key` of a heap: returns as mt_capture_aggregate_store.
int mt_capture_derived_store(mt_capture* cap, int heap, int64_t key, int64_t format,
                             uint64_t fingerprint, const void* data, size_t len);

// ---- checkpoints (memtrace/schema.h MEMTRACE_CHECKPOINT_SQL; the bytes are the reporter's)

// Removes every checkpoint of a heap (the whole table when it has an older layout). Returns
// 0, -EROFS or -EIO.
int mt_capture_checkpoint_clear(mt_capture* cap, int heap);

// One row of the table, as the schema describes its columns.
typedef struct mt_checkpoint_row {
    uint64_t seq;
    int64_t ts_max, ts_min;
    uint64_t high_bytes, high_seq;
    int64_t high_ts;
    int64_t format;
    uint64_t fingerprint;
    const void* allocated;
    size_t allocated_len;
    const void* data;
    size_t len;
} mt_checkpoint_row;

// Stores (replaces) the checkpoint of a heap at row->seq. Returns 0, -EROFS or -EIO.
int mt_capture_checkpoint_store(mt_capture* cap, int heap, const mt_checkpoint_row* row);
// The first checkpoint of (format, fingerprint) at or after after_seq past which every event
// is stamped after ts (the seq 0 row's ts_min speaks for the events after the last one): 1
// with *seq, 0 when there is none (events up to the end may be stamped ts or before).
int mt_capture_checkpoint_settled(mt_capture* cap, int heap, int64_t format, uint64_t fingerprint,
                                  uint64_t after_seq, int64_t ts, uint64_t* seq);
// The checkpoint of (format, fingerprint) with the highest seq whose ts_max is at most
// ts_max (INT64_MAX: the last one; a ts_max of INT64_MIN finds the seq 0 row only): 1
// with *seq and *data malloc'd (the caller frees; data NULL: the seq only), 0 when there is
// none, or -ENOMEM.
int mt_capture_checkpoint_find(mt_capture* cap, int heap, int64_t format, uint64_t fingerprint,
                               int64_t ts_max, uint64_t* seq, uint8_t** data, size_t* len);
// The checkpoint of (format, fingerprint) with the highest seq at most seq_max (the seq 0
// row when none before it): returns as mt_capture_checkpoint_find.
int mt_capture_checkpoint_before(mt_capture* cap, int heap, int64_t format, uint64_t fingerprint,
                                 uint64_t seq_max, uint64_t* seq, uint8_t** data, size_t* len);
// Of the events after checkpoint after_seq up to checkpoint upto_seq (both stored), the most
// bytes live after one and the first event at it (the highest of the rows' high_*, the
// first row at it): 1 with the three, 0 when there are no such rows (or no such columns).
int mt_capture_checkpoint_high(mt_capture* cap, int heap, int64_t format, uint64_t fingerprint,
                               uint64_t after_seq, uint64_t upto_seq, uint64_t* bytes,
                               uint64_t* seq, int64_t* ts);
// The `allocated` bytes of the checkpoint at seq: returns as mt_capture_checkpoint_find.
int mt_capture_checkpoint_allocated(mt_capture* cap, int heap, int64_t format, uint64_t fingerprint,
                                    uint64_t seq, uint8_t** data, size_t* len);

// Names the frames not named yet and stores the names in the capture, for reports opening
// a capture whose program was killed before it could (memtrace/symbolize.h). Returns the
// number of frames named or a negative errno with a message in err.
int mt_capture_symbolize(mt_capture* cap, char* err, size_t errlen);
// The same for a capture that cannot store them (a read-only file, or one its program is
// still writing: mt_capture_open_live): the names go into copies of its frame and meta
// tables in memory, which this handle reads from then on.
int mt_capture_symbolize_in_memory(mt_capture* cap, char* err, size_t errlen);

// Streams the events of one heap in seq order. Memory is bounded by the number of chunks
// whose seq ranges overlap (about one per live thread), plus the 8 chunks that a second
// thread decodes ahead of the merge in a read of more than 16 chunks.
typedef struct mt_event_iter mt_event_iter;
// Process-wide policy, set before reading: with a report function, a chunk whose checksum
// or decoding fails is left out instead of ending the iteration, and reported once per
// capture (`what`: "event chunk N is corrupt (...); skipped its M events"). NULL: an error.
typedef void (*mt_corrupt_chunk_fn)(const char* path, const char* what);
void mt_capture_skip_corrupt_chunks(mt_corrupt_chunk_fn report);
// Returns 0, or a negative errno; either way `*out` is set (NULL, or an iterator whose
// mt_capture_iter_error says what went wrong) and must be passed to mt_capture_iter_close.
int mt_capture_iter_open(mt_capture* cap, int heap, mt_event_iter** out);
// The same for the events after after_seq only (a replay resumed from a checkpoint): the
// chunks that end at or before it are not read.
int mt_capture_iter_open_after(mt_capture* cap, int heap, uint64_t after_seq, mt_event_iter** out);
// The same over the chunks whose id is in (after_chunk, upto_chunk] only (ids grow as
// chunks are written): for a reader following a running program, in batches of the
// chunks written since its last read. mt_capture_iter_last_chunk gives the highest chunk id
// the iterator came across (after_chunk when none).
int mt_capture_iter_open_chunks(mt_capture* cap, int heap, int64_t after_chunk, int64_t upto_chunk,
                                mt_event_iter** out);
int64_t mt_capture_iter_last_chunk(const mt_event_iter* it);
// A sampled capture's allocations are read weighed (the bytes each stands for,
// memtrace/sampling.h); after this call, with the sizes the program asked for (export's CSV
// rows, which give both). Before the first mt_capture_iter_next.
void mt_capture_iter_requested_sizes(mt_event_iter* it);
// Returns 1 with *ev filled, 0 at the end, or a negative errno (-EPROTO: corrupt chunk,
// e.g. "event chunk 7 is corrupt (checksum mismatch)"; the message is in
// mt_capture_iter_error).
int mt_capture_iter_next(mt_event_iter* it, mt_event* ev);
const char* mt_capture_iter_error(const mt_event_iter* it);
void mt_capture_iter_close(mt_event_iter* it);

// ---- writer

typedef struct mt_capture_writer mt_capture_writer;

// Creates a new capture at path (an existing file there is replaced: callers that must
// not overwrite check first). The file is written as WAL while recording and left as one
// self-contained file by mt_capture_writer_finish.
int mt_capture_writer_open(const char* path, mt_capture_writer** out, char* err, size_t errlen);
// Opens a capture that a connection of this process was writing when its thread died (the
// exit watcher's case, docs/tracer.md): SQLite takes it back to its last commit, and writing
// goes on from there. Never with another connection to the file open.
int mt_capture_writer_reopen(const char* path, mt_capture_writer** out, char* err, size_t errlen);
// Whether none of SQLite's process-wide mutexes is held (a thread that died inside SQLite
// may have left one held): else any connection's next call could wait for ever.
bool mt_capture_writer_sqlite_idle(void);
// The SQLite handle, for test and benchmark fixtures that build odd captures by hand.
// Programs write through the typed functions below.
sqlite3* mt_capture_writer_db(mt_capture_writer* w);
// For a temporary file renamed into place only on success: no journal at all (WAL would
// write every page twice: log, then checkpoint). Call before the first mt_capture_writer_begin.
int mt_capture_writer_no_journal(mt_capture_writer* w);
const char* mt_capture_writer_error(mt_capture_writer* w);
int mt_capture_writer_begin(mt_capture_writer* w);
int mt_capture_writer_commit(mt_capture_writer* w);
int mt_capture_writer_meta_text(mt_capture_writer* w, const char* key, const char* value);
int mt_capture_writer_meta_int(mt_capture_writer* w, const char* key, int64_t value);
// Reads an integer meta value back: 0, 1 when the key is absent (*value 0), or -EIO.
int mt_capture_writer_meta_get_int(mt_capture_writer* w, const char* key, int64_t* value);
int mt_capture_writer_heap(mt_capture_writer* w, int id, const char* name, const char* kind,
                           const char* time_unit);
int mt_capture_writer_counter_track(mt_capture_writer* w, int id, int heap, const char* name,
                                    const char* unit);
int mt_capture_writer_counter(mt_capture_writer* w, int track, int64_t ts, int64_t value);
// n points of one track, in as few statement executions as possible (imports write millions).
int mt_capture_writer_counters(mt_capture_writer* w, int track, const mt_counter_point* p,
                               size_t n);
// Stacks, modules, threads, call counts and marks. Rows with an id replace an earlier row of
// that id (a fork child writes every row again into its own capture).
int mt_capture_writer_frame(mt_capture_writer* w, const mt_frame_rec* f);
int mt_capture_writer_callsite(mt_capture_writer* w, const mt_callsite_rec* c);
int mt_capture_writer_mapping(mt_capture_writer* w, const mt_mapping_rec* m);
int mt_capture_writer_thread(mt_capture_writer* w, int64_t tid, const char* name);
int mt_capture_writer_call_count(mt_capture_writer* w, const char* call, int64_t count);
int mt_capture_writer_mark(mt_capture_writer* w, const mt_mark_rec* m);
// One block's leak verdict (leak table): the allocation's seq, its mt_leak_kind and, for an
// indirectly lost block, the seq of a lost block that holds a pointer to it (else 0).
int mt_capture_writer_leak(mt_capture_writer* w, uint64_t seq, int kind, uint64_t holder_seq);
// Ends the latest open range of that name on that thread (none open: nothing changes).
int mt_capture_writer_mark_end(mt_capture_writer* w, const char* name, int64_t tid, int64_t ts);
// Resolves the names of the frames written so far within budget_ms, the rest left to
// memreport (mt_symbolize_capture_at_exit in memtrace/symbolize.h, read_files too); returns
// the number of frames named or a negative errno. Commit first: it runs its own
// transactions.
int mt_capture_writer_symbolize(mt_capture_writer* w, int budget_ms, bool read_files, char* err,
                                size_t errlen);
// Encodes n events (seq strictly increasing within the call) as one chunk of `heap`.
// scratch must hold mt_codec_bound(n) bytes. n is at most MT_CHUNK_EVENTS_MAX (memtrace/codec.h;
// more: -EINVAL).
int mt_capture_writer_chunk(mt_capture_writer* w, int heap, const mt_event* ev, size_t n,
                            uint8_t* scratch);
// mt_capture_writer_chunk in its two steps, for a writer that must know whether the capture was
// touched: the encoding into scratch (returns its length; 0 for n == 0, n too large or no
// memory), which changes nothing in the file, and the insert of what it made.
struct mt_chunk_header;
size_t mt_capture_writer_encode_chunk(mt_capture_writer* w, int heap, const mt_event* ev, size_t n,
                                      uint8_t* scratch, struct mt_chunk_header* h);
int mt_capture_writer_insert_chunk(mt_capture_writer* w, const struct mt_chunk_header* h,
                                   const uint8_t* data, size_t len);
// Codec 4: the time unit (ns) of the chunks written from now on whose times are all multiples
// of it (the tracer's resolution, meta time_resolution_ns); others are written in ns.
void mt_capture_writer_set_time_unit(mt_capture_writer* w, int64_t unit);
// Writes the next chunks in an older codec (1 to 3) and marks the capture as the schema that
// holds it: for tests that old captures stay readable. Returns 0, -EINVAL or -EIO.
int mt_capture_writer_set_codec(mt_capture_writer* w, int codec);
// Sets capture_status (e.g. "complete"), checkpoints, switches to a rollback journal so no
// -wal/-shm files remain, and closes. w is freed whatever the result.
int mt_capture_writer_finish(mt_capture_writer* w, const char* status);
// Closes without finalizing (the capture stays 'recording', i.e. truncated).
void mt_capture_writer_abandon(mt_capture_writer* w);
// Removes path-wal, path-shm and path-journal, if present.
void mt_capture_remove_sidecars(const char* path);

#endif
