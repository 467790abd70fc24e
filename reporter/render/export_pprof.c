// SPDX-License-Identifier: MIT
// pprof: a gzipped profile.proto (github.com/google/pprof, proto/profile.proto) laid out as
// Go's heap profiles are, so `go tool pprof`, Pyroscope and Parca read it as one: the sample
// types alloc_objects/count, alloc_space/bytes (allocations in the range), inuse_objects/
// count, inuse_space/bytes (live at the moment). One sample per callsite, one location per
// physical frame (its inlined functions as lines of it, innermost first), the mappings the
// locations fall in, with their build-ids. Nothing is sampled: period 1. Several processes
// (export.h): each one's frames and mappings are locations and mappings of their own, and
// each sample's outermost location is its process, a location without a mapping whose one
// line names it, "COMMAND (pid N)".
//
// The message is streamed: each top-level field is encoded (protobuf.h), then deflated
// into `out`; the string table, which every other field indexes, is gathered first and
// written last, as Go does.
#include "export.h"
#include "protobuf.h"
#include "sites.h"
#include "u64map.h"

#include "memtrace/vec.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

// Field numbers of profile.proto.
enum {
    PROFILE_SAMPLE_TYPE = 1,
    PROFILE_SAMPLE = 2,
    PROFILE_MAPPING = 3,
    PROFILE_LOCATION = 4,
    PROFILE_FUNCTION = 5,
    PROFILE_STRING_TABLE = 6,
    PROFILE_TIME_NANOS = 9,
    PROFILE_DURATION_NANOS = 10,
    PROFILE_PERIOD_TYPE = 11,
    PROFILE_PERIOD = 12,
    PROFILE_DEFAULT_SAMPLE_TYPE = 14,
    VALUE_TYPE_TYPE = 1,
    VALUE_TYPE_UNIT = 2,
    SAMPLE_LOCATION_ID = 1,
    SAMPLE_VALUE = 2,
    MAPPING_ID = 1,
    MAPPING_MEMORY_START = 2,
    MAPPING_MEMORY_LIMIT = 3,
    MAPPING_FILE_OFFSET = 4,
    MAPPING_FILENAME = 5,
    MAPPING_BUILD_ID = 6,
    MAPPING_HAS_FUNCTIONS = 7,
    MAPPING_HAS_FILENAMES = 8,
    MAPPING_HAS_LINE_NUMBERS = 9,
    MAPPING_HAS_INLINE_FRAMES = 10,
    LOCATION_ID = 1,
    LOCATION_MAPPING_ID = 2,
    LOCATION_ADDRESS = 3,
    LOCATION_LINE = 4,
    LINE_FUNCTION_ID = 1,
    LINE_LINE = 2,
    FUNCTION_ID = 1,
    FUNCTION_NAME = 2,
    FUNCTION_SYSTEM_NAME = 3,
    FUNCTION_FILENAME = 4,
};

// The sample types, in Go's order; the string table holds these words.
static const char* const sample_types[][2] = {{"alloc_objects", "count"},
                                              {"alloc_space", "bytes"},
                                              {"inuse_objects", "count"},
                                              {"inuse_space", "bytes"}};

// A location: one physical frame of the stacks written (of one process), or a process.
#define PROCESS_FRAME UINT32_MAX
typedef struct location {
    uint32_t proc;  // the process's index with several, else 0
    uint32_t frame; // PROCESS_FRAME: the process itself
    uint64_t address;
    int64_t mapping; // the capture's mapping id; 0: none
} location;

typedef struct mapping {
    mt_mapping_rec rec; // path and build_id owned
    uint32_t proc;
} mapping;

typedef struct function {
    size_t name, file; // string table indexes
} function;

typedef struct pprof {
    const mr_export_input* in;
    location* locs;
    size_t nlocs, loccap;
    mr_u64map loc_of_frame; // process << 32 | frame id -> location id (its index + 1)
    mapping* maps;
    size_t nmaps, mapcap;
    mr_u64map map_of_id; // process << 32 | capture mapping id -> pprof mapping id (index + 1)
    uint32_t reading;    // the process whose frames and mappings are being read
    const char** strs;   // the string table, sorted and distinct once built
    size_t nstrs, strcap;
    function* funcs;
    size_t nfuncs, funccap;
    mr_u64map func_of_key; // name index << 32 | file index -> function id (index + 1)
    mr_protobuf pb;
    z_stream z;
    FILE* out;
    int err;
    char* msg;
    size_t msglen;
} pprof;

static uint32_t stack_frames[MR_SITES_MAX_DEPTH];

static uint64_t frame_key(uint32_t proc, uint32_t frame) {
    return (uint64_t)proc << 32 | frame;
}

// The frames of a callsite's stack, leaf first (as pprof lists a sample's locations), and
// with several processes the callsite's process.
static size_t stack_of(const pprof* p, uint32_t callsite, uint32_t* proc) {
    const mr_symbols* sym = p->in->sym;
    *proc = 0;
    if (p->in->nprocs) {
        const mr_export_process* ep = mr_export_process_of(p->in, callsite);
        *proc = (uint32_t)(ep - p->in->procs);
        sym = ep->sym;
        callsite -= ep->first;
    }
    size_t n = mr_symbols_stack(sym, callsite, p->in->all_frames, stack_frames, MR_SITES_MAX_DEPTH);
    return n > MR_SITES_MAX_DEPTH ? MR_SITES_MAX_DEPTH : n;
}

// A location's symbols: those of its process.
static const mr_symbols* symbols_of(const pprof* p, const location* l) {
    return p->in->nprocs ? p->in->procs[l->proc].sym : p->in->sym;
}

// The locations of a frame or a process (its functions and lines), innermost first.
static size_t location_lines(const pprof* p, const location* l, const mr_symloc** out) {
    if (l->frame == PROCESS_FRAME) {
        *out = &p->in->procs[l->proc].root;
        return 1;
    }
    return mr_symbols_frame_locs(symbols_of(p, l), l->frame, out);
}

static bool row_written(const mr_profile_row* r) {
    return r->alloc_count || r->alloc_bytes || r->live_blocks || r->live_bytes;
}

static int add_string(pprof* p, const char* s) {
    if (mt_vec_grow(&p->strs, &p->strcap, p->nstrs + 1, sizeof *p->strs))
        return -ENOMEM;
    p->strs[p->nstrs++] = s ? s : "";
    return 0;
}

// ---- gathering: locations, their addresses and mappings, the strings

static int add_location(pprof* p, uint32_t proc, uint32_t frame) {
    if (mr_u64map_get(&p->loc_of_frame, frame_key(proc, frame)))
        return 0;
    if (mt_vec_grow(&p->locs, &p->loccap, p->nlocs + 1, sizeof *p->locs) ||
        mr_u64map_put(&p->loc_of_frame, frame_key(proc, frame), p->nlocs + 1))
        return -ENOMEM;
    p->locs[p->nlocs++] = (location){.proc = proc, .frame = frame};
    return 0;
}

static int collect_locations(pprof* p) {
    for (size_t i = 0; i < p->in->prof->nrows; i++) {
        if (!row_written(&p->in->prof->rows[i]))
            continue;
        uint32_t proc;
        size_t n = stack_of(p, p->in->prof->rows[i].callsite, &proc);
        for (size_t k = 0; k < n; k++)
            if (add_location(p, proc, stack_frames[k]))
                return -ENOMEM;
        if (p->in->nprocs && add_location(p, proc, PROCESS_FRAME))
            return -ENOMEM;
    }
    return 0;
}

static int on_frame(void* ud, const mt_frame_info* f) {
    pprof* p = ud;
    uint64_t* loc = f->id > 0 && f->id < PROCESS_FRAME
                        ? mr_u64map_get(&p->loc_of_frame, frame_key(p->reading, (uint32_t)f->id))
                        : NULL;
    if (!loc)
        return 0;
    p->locs[*loc - 1].address = f->pc;
    p->locs[*loc - 1].mapping = f->mapping_id;
    if (f->mapping_id > 0 && f->mapping_id <= UINT32_MAX &&
        mr_u64map_put(&p->map_of_id, frame_key(p->reading, (uint32_t)f->mapping_id), 0))
        return -ENOMEM;
    return 0;
}

static int on_mapping(void* ud, const mt_mapping_rec* m) {
    pprof* p = ud;
    if (m->id <= 0 || m->id > UINT32_MAX ||
        !mr_u64map_get(&p->map_of_id, frame_key(p->reading, (uint32_t)m->id)))
        return 0;
    if (mt_vec_grow(&p->maps, &p->mapcap, p->nmaps + 1, sizeof *p->maps))
        return -ENOMEM;
    mapping* copy = &p->maps[p->nmaps++];
    copy->rec = *m;
    copy->proc = p->reading;
    copy->rec.path = strdup(m->path ? m->path : "");
    copy->rec.build_id = strdup(m->build_id ? m->build_id : "");
    return copy->rec.path && copy->rec.build_id ? 0 : -ENOMEM;
}

// pprof takes mapping[0] for the main binary: the traced executable goes first.
static void main_binary_first(pprof* p) {
    char* exe = mt_capture_meta_text(p->in->cap, "exe");
    for (size_t i = 1; exe && i < p->nmaps; i++)
        if (!strcmp(p->maps[i].rec.path, exe)) {
            mapping main = p->maps[i];
            memmove(&p->maps[1], &p->maps[0], i * sizeof *p->maps);
            p->maps[0] = main;
            break;
        }
    free(exe);
}

// Addresses and mappings of the locations, then the mappings they fall in (ids 1..n), of
// each process in turn.
static int read_addresses(pprof* p) {
    int rc = 0;
    for (size_t i = 0; !rc && i < (p->in->nprocs ? p->in->nprocs : 1); i++) {
        mt_capture* cap = p->in->nprocs ? p->in->procs[i].cap : p->in->cap;
        p->reading = (uint32_t)i;
        rc = mt_capture_frames(cap, on_frame, p);
        if (!rc)
            rc = mt_capture_mappings(cap, on_mapping, p);
        if (rc == -EPROTO)
            snprintf(p->msg, p->msglen, "%s", mt_capture_error(cap));
    }
    if (rc)
        return rc;
    main_binary_first(p);
    for (size_t i = 0; i < p->nmaps; i++)
        *mr_u64map_get(&p->map_of_id, frame_key(p->maps[i].proc, (uint32_t)p->maps[i].rec.id)) =
            i + 1;
    return 0;
}

static int by_text(const void* a, const void* b) {
    return strcmp(*(const char* const*)a, *(const char* const*)b);
}

// The string table: every string written, sorted and distinct ("" sorts first: index 0).
static int build_strings(pprof* p) {
    int rc = add_string(p, "") || add_string(p, "space");
    for (size_t i = 0; !rc && i < sizeof sample_types / sizeof *sample_types; i++)
        rc = add_string(p, sample_types[i][0]) || add_string(p, sample_types[i][1]);
    for (size_t i = 0; !rc && i < p->nmaps; i++)
        rc = add_string(p, p->maps[i].rec.path) || add_string(p, p->maps[i].rec.build_id);
    for (size_t i = 0; !rc && i < p->nlocs; i++) {
        const mr_symloc* locs;
        size_t n = location_lines(p, &p->locs[i], &locs);
        for (size_t k = 0; !rc && k < n; k++)
            rc = add_string(p, locs[k].function) || add_string(p, locs[k].file);
    }
    if (rc)
        return -ENOMEM;
    if (p->nstrs > 1) // qsort must never see the NULL of an empty vector
        qsort(p->strs, p->nstrs, sizeof *p->strs, by_text);
    size_t n = 0;
    for (size_t i = 0; i < p->nstrs; i++)
        if (n == 0 || strcmp(p->strs[n - 1], p->strs[i]))
            p->strs[n++] = p->strs[i];
    p->nstrs = n;
    return 0;
}

static uint64_t string_index(const pprof* p, const char* s) {
    const char* key = s ? s : "";
    const char** hit = bsearch(&key, p->strs, p->nstrs, sizeof *p->strs, by_text);
    return hit ? (uint64_t)(hit - p->strs) : 0; // every string was gathered: always a hit
}

// The function id of a (name, file) pair, numbered in order of first use.
static int function_id(pprof* p, const mr_symloc* loc, uint64_t* id) {
    uint64_t name = string_index(p, loc->function), file = string_index(p, loc->file);
    uint64_t* known = mr_u64map_get(&p->func_of_key, name << 32 | file);
    if (known) {
        *id = *known;
        return 0;
    }
    if (mt_vec_grow(&p->funcs, &p->funccap, p->nfuncs + 1, sizeof *p->funcs) ||
        mr_u64map_put(&p->func_of_key, name << 32 | file, p->nfuncs + 1))
        return -ENOMEM;
    p->funcs[p->nfuncs++] = (function){name, file};
    *id = p->nfuncs;
    return 0;
}

// ---- writing

// Deflates what the buffer holds into out (all of it, and the gzip trailer, when finish).
static int flush(pprof* p, bool finish) {
    if (p->pb.err)
        return p->pb.err;
    p->z.next_in = p->pb.data;
    p->z.avail_in = (uInt)p->pb.len;
    int zrc;
    do {
        unsigned char chunk[65536];
        p->z.next_out = chunk;
        p->z.avail_out = sizeof chunk;
        zrc = deflate(&p->z, finish ? Z_FINISH : Z_NO_FLUSH);
        if (zrc == Z_STREAM_ERROR)
            return -ENOMEM;
        size_t have = sizeof chunk - p->z.avail_out;
        if (have && fwrite(chunk, 1, have, p->out) != have) {
            snprintf(p->msg, p->msglen, "cannot write: %s", strerror(errno));
            return -EIO;
        }
    } while (p->z.avail_out == 0 || (finish && zrc != Z_STREAM_END));
    mr_protobuf_clear(&p->pb);
    return 0;
}

// Top-level fields are flushed once the buffer holds a good piece of output.
static int maybe_flush(pprof* p) {
    return p->pb.len >= 256 * 1024 || p->pb.err ? flush(p, false) : 0;
}

static void value_type(pprof* p, int field, const char* type, const char* unit) {
    size_t start = mr_protobuf_begin(&p->pb);
    mr_protobuf_uint_opt(&p->pb, VALUE_TYPE_TYPE, string_index(p, type));
    mr_protobuf_uint_opt(&p->pb, VALUE_TYPE_UNIT, string_index(p, unit));
    mr_protobuf_end(&p->pb, field, start);
}

// The preferred sample type: the one --metric names (Go's default, the last, for live).
static const char* default_type(mr_metric m) {
    return m == MR_METRIC_ALLOC_BYTES   ? "alloc_space"
           : m == MR_METRIC_ALLOC_COUNT ? "alloc_objects"
           : m == MR_METRIC_LIVE_BLOCKS ? "inuse_objects"
                                        : "inuse_space";
}

static void write_header(pprof* p) {
    for (size_t i = 0; i < sizeof sample_types / sizeof *sample_types; i++)
        value_type(p, PROFILE_SAMPLE_TYPE, sample_types[i][0], sample_types[i][1]);
    // Wall-clock start of the capture and its length; an NPU log's steps are no time.
    int64_t start = mt_capture_meta_int(p->in->cap, "start_realtime_ns", 0);
    int64_t duration = mt_capture_meta_int(p->in->cap, "duration_ns", 0);
    if (!p->in->steps && start > 0)
        mr_protobuf_uint(&p->pb, PROFILE_TIME_NANOS, (uint64_t)start);
    if (!p->in->steps && duration > 0)
        mr_protobuf_uint(&p->pb, PROFILE_DURATION_NANOS, (uint64_t)duration);
    value_type(p, PROFILE_PERIOD_TYPE, "space", "bytes");
    mr_protobuf_uint(&p->pb, PROFILE_PERIOD, 1);
    mr_protobuf_uint(&p->pb, PROFILE_DEFAULT_SAMPLE_TYPE,
                     string_index(p, default_type(p->in->metric)));
}

static int write_samples(pprof* p) {
    for (size_t i = 0; i < p->in->prof->nrows; i++) {
        const mr_profile_row* r = &p->in->prof->rows[i];
        if (!row_written(r))
            continue;
        uint32_t proc;
        size_t n = stack_of(p, r->callsite, &proc);
        size_t sample = mr_protobuf_begin(&p->pb);
        size_t ids = mr_protobuf_begin(&p->pb);
        for (size_t k = 0; k < n; k++)
            mr_protobuf_varint(&p->pb,
                               *mr_u64map_get(&p->loc_of_frame, frame_key(proc, stack_frames[k])));
        if (p->in->nprocs) // the process: the outermost location
            mr_protobuf_varint(&p->pb,
                               *mr_u64map_get(&p->loc_of_frame, frame_key(proc, PROCESS_FRAME)));
        if (n || p->in->nprocs)
            mr_protobuf_end(&p->pb, SAMPLE_LOCATION_ID, ids);
        size_t values = mr_protobuf_begin(&p->pb);
        mr_protobuf_varint(&p->pb, r->alloc_count);
        mr_protobuf_varint(&p->pb, r->alloc_bytes);
        mr_protobuf_varint(&p->pb, r->live_blocks);
        mr_protobuf_varint(&p->pb, r->live_bytes);
        mr_protobuf_end(&p->pb, SAMPLE_VALUE, values);
        mr_protobuf_end(&p->pb, PROFILE_SAMPLE, sample);
        int rc = maybe_flush(p);
        if (rc)
            return rc;
    }
    return 0;
}

static int write_mappings(pprof* p) {
    // A symbolized capture names every frame: pprof must not look for the binaries.
    char* symbolized = mt_capture_meta_text(p->in->cap, "symbolized");
    bool named = symbolized && !strcmp(symbolized, "1");
    free(symbolized);
    for (size_t i = 0; i < p->nmaps; i++) {
        const mt_mapping_rec* m = &p->maps[i].rec;
        size_t start = mr_protobuf_begin(&p->pb);
        mr_protobuf_uint(&p->pb, MAPPING_ID, i + 1);
        mr_protobuf_uint_opt(&p->pb, MAPPING_MEMORY_START, m->start);
        mr_protobuf_uint_opt(&p->pb, MAPPING_MEMORY_LIMIT, m->end);
        // The module's first address as an offset into its file: its lowest vaddr.
        mr_protobuf_uint_opt(&p->pb, MAPPING_FILE_OFFSET,
                             m->start >= m->load_bias ? m->start - m->load_bias : 0);
        mr_protobuf_uint_opt(&p->pb, MAPPING_FILENAME, string_index(p, m->path));
        mr_protobuf_uint_opt(&p->pb, MAPPING_BUILD_ID, string_index(p, m->build_id));
        for (int field = MAPPING_HAS_FUNCTIONS; named && field <= MAPPING_HAS_INLINE_FRAMES;
             field++)
            mr_protobuf_uint(&p->pb, field, 1);
        mr_protobuf_end(&p->pb, PROFILE_MAPPING, start);
    }
    return maybe_flush(p);
}

static int write_locations(pprof* p) {
    for (size_t i = 0; i < p->nlocs; i++) {
        const location* l = &p->locs[i];
        uint64_t* map = l->mapping > 0 && l->mapping <= UINT32_MAX
                            ? mr_u64map_get(&p->map_of_id, frame_key(l->proc, (uint32_t)l->mapping))
                            : NULL;
        size_t start = mr_protobuf_begin(&p->pb);
        mr_protobuf_uint(&p->pb, LOCATION_ID, i + 1);
        mr_protobuf_uint_opt(&p->pb, LOCATION_MAPPING_ID, map ? *map : 0);
        mr_protobuf_uint_opt(&p->pb, LOCATION_ADDRESS, l->address);
        // Innermost first: the inlined functions, then the function the code belongs to.
        const mr_symloc* locs;
        size_t n = location_lines(p, l, &locs);
        for (size_t k = 0; k < n; k++) {
            uint64_t fn;
            if (function_id(p, &locs[k], &fn))
                return -ENOMEM;
            size_t line = mr_protobuf_begin(&p->pb);
            mr_protobuf_uint(&p->pb, LINE_FUNCTION_ID, fn);
            mr_protobuf_uint_opt(&p->pb, LINE_LINE, locs[k].line > 0 ? (uint64_t)locs[k].line : 0);
            mr_protobuf_end(&p->pb, LOCATION_LINE, line);
        }
        mr_protobuf_end(&p->pb, PROFILE_LOCATION, start);
        int rc = maybe_flush(p);
        if (rc)
            return rc;
    }
    return 0;
}

static int write_functions(pprof* p) {
    for (size_t i = 0; i < p->nfuncs; i++) {
        size_t start = mr_protobuf_begin(&p->pb);
        mr_protobuf_uint(&p->pb, FUNCTION_ID, i + 1);
        mr_protobuf_uint_opt(&p->pb, FUNCTION_NAME, p->funcs[i].name);
        mr_protobuf_uint_opt(&p->pb, FUNCTION_SYSTEM_NAME, p->funcs[i].name);
        mr_protobuf_uint_opt(&p->pb, FUNCTION_FILENAME, p->funcs[i].file);
        mr_protobuf_end(&p->pb, PROFILE_FUNCTION, start);
        int rc = maybe_flush(p);
        if (rc)
            return rc;
    }
    return 0;
}

static int write_strings(pprof* p) {
    for (size_t i = 0; i < p->nstrs; i++) {
        mr_protobuf_bytes(&p->pb, PROFILE_STRING_TABLE, p->strs[i], strlen(p->strs[i]));
        int rc = maybe_flush(p);
        if (rc)
            return rc;
    }
    return 0;
}

static int write_profile(pprof* p) {
    // Go writes its profiles with gzip's fastest level too: exports stay quick.
    if (deflateInit2(&p->z, Z_BEST_SPEED, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
        return -ENOMEM;
    write_header(p);
    int rc = write_samples(p);
    if (!rc)
        rc = write_mappings(p);
    if (!rc)
        rc = write_locations(p);
    if (!rc)
        rc = write_functions(p);
    if (!rc)
        rc = write_strings(p);
    if (!rc)
        rc = flush(p, true);
    deflateEnd(&p->z);
    return rc;
}

static void pprof_free(pprof* p) {
    for (size_t i = 0; i < p->nmaps; i++) {
        free((char*)p->maps[i].rec.path);
        free((char*)p->maps[i].rec.build_id);
    }
    free(p->maps);
    free(p->locs);
    free(p->strs);
    free(p->funcs);
    mr_u64map_free(&p->loc_of_frame);
    mr_u64map_free(&p->map_of_id);
    mr_u64map_free(&p->func_of_key);
    mr_protobuf_free(&p->pb);
}

int mr_export_pprof(FILE* out, const mr_export_input* in, char* err, size_t errlen) {
    pprof p = {.in = in, .out = out, .msg = err, .msglen = errlen};
    err[0] = 0;
    int rc = mr_u64map_init(&p.loc_of_frame) || mr_u64map_init(&p.map_of_id) ||
                     mr_u64map_init(&p.func_of_key)
                 ? -ENOMEM
                 : 0;
    if (!rc)
        rc = collect_locations(&p);
    if (!rc)
        rc = read_addresses(&p);
    if (!rc)
        rc = build_strings(&p);
    if (!rc)
        rc = write_profile(&p);
    pprof_free(&p);
    if (rc && !err[0])
        snprintf(err, errlen, "%s", rc == -ENOMEM ? "out of memory" : strerror(-rc));
    return rc;
}
