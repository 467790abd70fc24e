// SPDX-License-Identifier: MIT
// Symbolizer unit test without the tracer: records its own return addresses (plain calls,
// inlined chains, C++ methods, calls from a shared library built with DWARF, with .symtab
// only, with .dynsym only and with a separate debug file) and its mappings, writes them
// into a capture, symbolizes it and checks names, file basenames and lines exactly.
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "capture_sql.h"
#include "symbols.h"

#include "../check.h"
#include "../tmpdir.h"
#include "memtrace/capture.h"
#include "memtrace/symbolize.h"

#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <link.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))
#define ALWAYS_INLINE static inline __attribute__((always_inline))
// Keeps a call from becoming a tail jump (which would leave no return address in the caller).
#define BARRIER() __asm__ volatile("" ::: "memory")

enum {
    S_PLAIN,
    S_INLINE1,
    S_INLINE2,
    S_CXX_METHOD,
    S_CXX_TEMPLATE,
    S_LIB_DEBUG, // +0 symtest_run, +1 symtest_hidden, for each of the four library variants
    S_LIB_NODEBUG = S_LIB_DEBUG + 2,
    S_LIB_STRIPPED = S_LIB_NODEBUG + 2,
    S_LIB_SPLIT = S_LIB_STRIPPED + 2,
    S_MAIN_CALLER = S_LIB_SPLIT + 2,
    S_COUNT
};

static void* ra[S_COUNT];
static int line_at[S_COUNT];
static int inl_line[2][2]; // [slot - S_INLINE1][depth]: lines inside the inlined bodies

static NOINLINE void record(int slot) {
    ra[slot] = __builtin_return_address(0);
    BARRIER();
}

static NOINLINE void plain_caller(void) {
    line_at[S_PLAIN] = __LINE__ + 1;
    record(S_PLAIN);
    BARRIER();
}

ALWAYS_INLINE void inlined_once(void) {
    inl_line[0][0] = __LINE__ + 1;
    record(S_INLINE1);
    BARRIER();
}

static NOINLINE void inline_outer(void) {
    line_at[S_INLINE1] = __LINE__ + 1;
    inlined_once();
    BARRIER();
}

ALWAYS_INLINE void inlined_inner(void) {
    inl_line[1][0] = __LINE__ + 1;
    record(S_INLINE2);
    BARRIER();
}

ALWAYS_INLINE void inlined_middle(void) {
    inl_line[1][1] = __LINE__ + 1;
    inlined_inner();
    BARRIER();
}

static NOINLINE void inline_outer2(void) {
    line_at[S_INLINE2] = __LINE__ + 1;
    inlined_middle();
    BARRIER();
}

void symtest_cxx_run(void (*recorder)(int), int slot, int* lines);

static int lib_base;
static NOINLINE void lib_callback(int slot) {
    ra[lib_base + slot] = __builtin_return_address(0);
    BARRIER();
}

// ---- the process's mappings, as the tracer records them

typedef struct mapping {
    char path[4096];
    uint64_t start, end, bias;
    char build_id[128];
} mapping;

static mapping maps[256];
static int nmaps;

static void hex_build_id(const struct dl_phdr_info* info, char* out) {
    out[0] = 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr)* ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_NOTE)
            continue;
        const char* p = (const char*)(info->dlpi_addr + ph->p_vaddr);
        const char* end = p + ph->p_memsz;
        while (p + sizeof(ElfW(Nhdr)) <= end) {
            const ElfW(Nhdr)* nh = (const ElfW(Nhdr)*)p;
            const char* name = p + sizeof *nh;
            const unsigned char* desc = (const unsigned char*)name + ((nh->n_namesz + 3) & ~3u);
            if (nh->n_type == NT_GNU_BUILD_ID && nh->n_namesz == 4 && !memcmp(name, "GNU", 4)) {
                for (unsigned j = 0; j < nh->n_descsz && j < 60; j++)
                    sprintf(out + 2 * j, "%02x", desc[j]);
                return;
            }
            p = (const char*)desc + ((nh->n_descsz + 3) & ~3u);
        }
    }
}

static int add_mapping(struct dl_phdr_info* info, size_t size, void* ud) {
    (void)size;
    (void)ud;
    if (nmaps == 256)
        return 1;
    mapping* m = &maps[nmaps];
    if (info->dlpi_name[0])
        snprintf(m->path, sizeof m->path, "%s", info->dlpi_name);
    else if (readlink("/proc/self/exe", m->path, sizeof m->path - 1) < 0)
        return 0;
    m->start = UINT64_MAX;
    m->end = 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr)* ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD)
            continue;
        uint64_t a = info->dlpi_addr + ph->p_vaddr;
        if (a < m->start)
            m->start = a;
        if (a + ph->p_memsz > m->end)
            m->end = a + ph->p_memsz;
    }
    m->bias = info->dlpi_addr;
    hex_build_id(info, m->build_id);
    nmaps++;
    return 0;
}

static int mapping_of(uint64_t pc) {
    for (int i = 0; i < nmaps; i++)
        if (pc >= maps[i].start && pc < maps[i].end)
            return i;
    return -1;
}

// ---- capture helpers

static void exec_sql(sqlite3* db, const char* sql) {
    char* msg = NULL;
    if (sqlite3_exec(db, sql, NULL, NULL, &msg) != SQLITE_OK) {
        fprintf(stderr, "sql failed: %s: %s\n", sql, msg);
        check_failures++;
    }
    sqlite3_free(msg);
}

static void insert_mapping(sqlite3* db, int id, const char* path, uint64_t start, uint64_t end,
                           uint64_t bias, const char* build_id) {
    sqlite3_stmt* st;
    sqlite3_prepare_v2(db, "INSERT INTO mapping VALUES(?1,?2,?3,?4,?5,?6,0,NULL)", -1, &st, NULL);
    sqlite3_bind_int(st, 1, id);
    sqlite3_bind_text(st, 2, path, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 3, (int64_t)start);
    sqlite3_bind_int64(st, 4, (int64_t)end);
    sqlite3_bind_int64(st, 5, (int64_t)bias);
    if (build_id && build_id[0])
        sqlite3_bind_text(st, 6, build_id, -1, SQLITE_STATIC);
    CHECK_EQ_I64(sqlite3_step(st), SQLITE_DONE);
    sqlite3_finalize(st);
}

static void insert_frame(sqlite3* db, int id, int mapping_id, uint64_t pc, uint64_t bias) {
    sqlite3_stmt* st;
    sqlite3_prepare_v2(db, "INSERT INTO frame(id, mapping_id, pc, rel_pc) VALUES(?1,?2,?3,?4)", -1,
                       &st, NULL);
    sqlite3_bind_int(st, 1, id);
    sqlite3_bind_int(st, 2, mapping_id);
    sqlite3_bind_int64(st, 3, (int64_t)pc);
    sqlite3_bind_int64(st, 4, (int64_t)(pc - bias));
    CHECK_EQ_I64(sqlite3_step(st), SQLITE_DONE);
    sqlite3_finalize(st);
}

typedef struct row {
    char function[1024];
    char file[1024]; // basename, "" when NULL
    int line;        // 0 when NULL
    char inlined[4096];
    int relevant;
} row;

static row get_frame(sqlite3* db, int id) {
    row r = {0};
    sqlite3_stmt* st;
    sqlite3_prepare_v2(db, "SELECT function, file, line, inlined, relevant FROM frame WHERE id=?1",
                       -1, &st, NULL);
    sqlite3_bind_int(st, 1, id);
    if (sqlite3_step(st) == SQLITE_ROW) {
        const char* s = (const char*)sqlite3_column_text(st, 0);
        snprintf(r.function, sizeof r.function, "%s", s ? s : "(null)");
        s = (const char*)sqlite3_column_text(st, 1);
        if (s) {
            const char* b = strrchr(s, '/');
            snprintf(r.file, sizeof r.file, "%s", b ? b + 1 : s);
        }
        r.line = sqlite3_column_int(st, 2);
        s = (const char*)sqlite3_column_text(st, 3);
        snprintf(r.inlined, sizeof r.inlined, "%s", s ? s : "");
        r.relevant = sqlite3_column_int(st, 4);
    }
    sqlite3_finalize(st);
    return r;
}

static void check_frame(sqlite3* db, int id, const char* fn, const char* file, int line) {
    row r = get_frame(db, id);
    if (strcmp(r.function, fn) || strcmp(r.file, file) || r.line != line)
        fprintf(stderr, "frame %d: got %s %s:%d, want %s %s:%d\n", id, r.function, r.file, r.line,
                fn, file, line);
    CHECK_EQ_STR(r.function, fn);
    CHECK_EQ_STR(r.file, file);
    CHECK_EQ_I64(r.line, line);
}

// Checks frame.inlined: n entries {function, basename(file), line}, innermost first.
static void check_inlined(sqlite3* db, int id, size_t n, const char* const* fns, const int* lines) {
    row r = get_frame(db, id);
    json_t* a = json_loads(r.inlined, 0, NULL);
    CHECK(json_is_array(a));
    CHECK_EQ_I64(json_array_size(a), n);
    for (size_t i = 0; i < n && i < json_array_size(a); i++) {
        json_t* e = json_array_get(a, i);
        CHECK_EQ_STR(json_string_value(json_object_get(e, "function")), fns[i]);
        const char* f = json_string_value(json_object_get(e, "file"));
        CHECK(f && !strcmp(strrchr(f, '/') ? strrchr(f, '/') + 1 : f, "test_symbolize.c"));
        CHECK_EQ_I64(json_integer_value(json_object_get(e, "line")), lines[i]);
    }
    json_decref(a);
}

static int copy_file(const char* from, const char* to) {
    int in = open(from, O_RDONLY), out = open(to, O_WRONLY | O_CREAT | O_TRUNC, 0755);
    char buf[65536];
    ssize_t n;
    int rc = in >= 0 && out >= 0 ? 0 : -1;
    while (rc == 0 && (n = read(in, buf, sizeof buf)) > 0)
        rc = write(out, buf, (size_t)n) == n ? 0 : -1;
    if (in >= 0)
        close(in);
    if (out >= 0)
        close(out);
    return rc;
}

// Loads a library variant from a private copy (so the test may delete it later) and has it
// call back into lib_callback for slots base+0 (from symtest_run) and base+1 (symtest_hidden).
// stderr into the file dir/stderr (its path in path) until stderr_back: what the model
// layer writes there, which must be nothing (it gives its messages to its caller).
static int stderr_to(const char* dir, char* path, size_t len) {
    snprintf(path, len, "%s/stderr", dir);
    fflush(stderr);
    int saved = dup(2);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    CHECK(saved >= 0 && fd >= 0 && dup2(fd, 2) == 2);
    close(fd);
    return saved;
}

static void stderr_back(int saved) {
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
}

static long long file_size(const char* path) {
    struct stat st;
    return stat(path, &st) == 0 ? (long long)st.st_size : -1;
}

static void* run_lib(const char* tmp, const char* name, int base, int* lines) {
    char from[4096], to[4096];
    snprintf(from, sizeof from, "%s/%s", SYMTEST_DIR, name);
    snprintf(to, sizeof to, "%s/%s", tmp, name);
    CHECK_EQ_I64(copy_file(from, to), 0);
    if (strstr(name, "split")) {
        // The debug file goes next to the library, where .gnu_debuglink points.
        snprintf(from, sizeof from, "%s/libsymtest_split.debug", SYMTEST_DIR);
        snprintf(to, sizeof to, "%s/libsymtest_split.debug", tmp);
        CHECK_EQ_I64(copy_file(from, to), 0);
        snprintf(to, sizeof to, "%s/%s", tmp, name);
    }
    void* h = dlopen(to, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        fprintf(stderr, "dlopen %s: %s\n", to, dlerror());
        check_failures++;
        return NULL;
    }
    void (*run)(void (*)(int));
    void* sym = dlsym(h, "symtest_run");
    memcpy(&run, &sym, sizeof sym); // POSIX: dlsym's data pointer converts to a function
    int* l = dlsym(h, "symtest_lines");
    lib_base = base;
    run(lib_callback);
    lines[0] = l[0];
    lines[1] = l[1];
    return h;
}

int main(int argc, char** argv) {
    (void)argc;
    ra[S_MAIN_CALLER] = __builtin_return_address(0); // libc's start-up code calls main
    const char* tmp = test_tmpdir();

    plain_caller();
    inline_outer();
    inline_outer2();
    int cxx_lines[2];
    symtest_cxx_run(record, S_CXX_METHOD, cxx_lines);
    int lines_debug[2], lines_nodebug[2], lines_stripped[2], lines_split[2];
    void* h[4];
    h[0] = run_lib(tmp, "libsymtest.so", S_LIB_DEBUG, lines_debug);
    h[1] = run_lib(tmp, "libsymtest_nodebug.so", S_LIB_NODEBUG, lines_nodebug);
    h[2] = run_lib(tmp, "libsymtest_stripped.so", S_LIB_STRIPPED, lines_stripped);
    h[3] = run_lib(tmp, "libsymtest_split.so", S_LIB_SPLIT, lines_split);
    dl_iterate_phdr(add_mapping, NULL);

    // ---- write the capture: mappings, one frame per recorded address, a callsite chain
    char path[4200];
    snprintf(path, sizeof path, "%s/cap.db", tmp);
    char err[512];
    mt_capture_writer* w;
    CHECK_EQ_I64(mt_capture_writer_open(path, &w, err, sizeof err), 0);
    sqlite3* db = mt_capture_writer_db(w);
    exec_sql(db, "BEGIN");
    for (int i = 0; i < nmaps; i++)
        insert_mapping(db, i + 1, maps[i].path, maps[i].start, maps[i].end, maps[i].bias,
                       maps[i].build_id);
    for (int s = 0; s < S_COUNT; s++) {
        int m = mapping_of((uint64_t)ra[s]);
        CHECK(m >= 0);
        if (m >= 0)
            insert_frame(db, s + 1, m + 1, (uint64_t)ra[s], maps[m].bias);
    }
    // The debug library's frame again, under a mapping whose build-id says it was another
    // file (a rebuilt binary): it must not be named from the file on disk.
    int m = mapping_of((uint64_t)ra[S_LIB_DEBUG]);
    insert_mapping(db, 900, maps[m].path, maps[m].start, maps[m].end, maps[m].bias,
                   "0123456789abcdef0123456789abcdef01234567");
    insert_frame(db, 900, 900, (uint64_t)ra[S_LIB_DEBUG], maps[m].bias);
    insert_mapping(db, 901, "/nonexistent/libgone.so", 0x7f0000000000, 0x7f0000010000,
                   0x7f0000000000, NULL);
    insert_frame(db, 901, 901, 0x7f0000001234, 0x7f0000000000);
    insert_frame(db, 902, 902, 0x4321, 0); // no such mapping row
    // main <- plain_caller: a two-frame stack for the mr_symbols walk.
    char sql[256];
    snprintf(sql, sizeof sql,
             "INSERT INTO callsite VALUES(1, 0, %d, 1);" // main's caller (outermost)
             "INSERT INTO callsite VALUES(2, 1, %d, 2);" // plain_caller
             "INSERT INTO callsite VALUES(3, 2, %d, 3)", // inline_outer (the leaf)
             S_MAIN_CALLER + 1, S_PLAIN + 1, S_INLINE1 + 1);
    exec_sql(db, sql);
    exec_sql(db, "COMMIT");

    int n = mt_symbolize_capture(db, 0, err, sizeof err);
    if (n < 0)
        fprintf(stderr, "symbolize: %s\n", err);
    CHECK_EQ_I64(n, S_COUNT + 3);
    // Nothing left to do the second time.
    CHECK_EQ_I64(mt_symbolize_capture(db, 0, err, sizeof err), 0);

    const char* me = "test_symbolize.c";
    check_frame(db, S_PLAIN + 1, "plain_caller", me, line_at[S_PLAIN]);
    CHECK_EQ_STR(get_frame(db, S_PLAIN + 1).inlined, "");
    CHECK_EQ_I64(get_frame(db, S_PLAIN + 1).relevant, 1);

    check_frame(db, S_INLINE1 + 1, "inline_outer", me, line_at[S_INLINE1]);
    static const char* const chain1[] = {"inlined_once"};
    check_inlined(db, S_INLINE1 + 1, 1, chain1, inl_line[0]);

    check_frame(db, S_INLINE2 + 1, "inline_outer2", me, line_at[S_INLINE2]);
    static const char* const chain2[] = {"inlined_inner", "inlined_middle"};
    check_inlined(db, S_INLINE2 + 1, 2, chain2, inl_line[1]);

    check_frame(db, S_CXX_METHOD + 1, "symtest::Widget::grow(int)", "symtest_cxx.cpp",
                cxx_lines[0]);
    check_frame(db, S_CXX_TEMPLATE + 1, "long symtest::twice<long>(long)", "symtest_cxx.cpp",
                cxx_lines[1]);

    // DWARF, .symtab only, .dynsym only, separate debug file through .gnu_debuglink.
    check_frame(db, S_LIB_DEBUG + 1, "symtest_run", "symtest_lib.c", lines_debug[0]);
    check_frame(db, S_LIB_DEBUG + 2, "symtest_hidden", "symtest_lib.c", lines_debug[1]);
    check_frame(db, S_LIB_NODEBUG + 1, "symtest_run", "", 0);
    check_frame(db, S_LIB_NODEBUG + 2, "symtest_hidden", "", 0);
    check_frame(db, S_LIB_STRIPPED + 1, "symtest_run", "", 0);
    // A static function is in neither table of a fully stripped library: named by where
    // it starts, from its .eh_frame FDE.
    char want[256];
    int ms = mapping_of((uint64_t)ra[S_LIB_STRIPPED + 1]);
    unsigned long* hidden_at = h[2] ? dlsym(h[2], "symtest_hidden_at") : NULL;
    CHECK(hidden_at && *hidden_at);
    snprintf(want, sizeof want, "libsymtest_stripped.so!0x%llx",
             (unsigned long long)((uint64_t)(hidden_at ? *hidden_at : 0) - maps[ms].bias));
    check_frame(db, S_LIB_STRIPPED + 2, want, "", 0);
    check_frame(db, S_LIB_SPLIT + 1, "symtest_run", "symtest_lib.c", lines_split[0]);
    check_frame(db, S_LIB_SPLIT + 2, "symtest_hidden", "symtest_lib.c", lines_split[1]);

    // The caller of main is libc's start-up code: noise.
    CHECK_EQ_I64(get_frame(db, S_MAIN_CALLER + 1).relevant, 0);

    // Replaced binary, missing file, missing mapping: module+offset, never empty.
    snprintf(want, sizeof want, "libsymtest.so+0x%llx",
             (unsigned long long)((uint64_t)ra[S_LIB_DEBUG] - maps[m].bias));
    check_frame(db, 900, want, "", 0);
    check_frame(db, 901, "libgone.so+0x1234", "", 0);
    check_frame(db, 902, "[unknown]+0x4321", "", 0);

    sqlite3_stmt* st;
    sqlite3_prepare_v2(db, "SELECT value FROM meta WHERE key='symbolized'", -1, &st, NULL);
    CHECK_EQ_I64(sqlite3_step(st), SQLITE_ROW);
    CHECK_EQ_STR((const char*)sqlite3_column_text(st, 0), "1");
    sqlite3_finalize(st);
    exec_sql(db, "INSERT OR REPLACE INTO heap VALUES(1, 'libc', 'cpu', 'ns')");
    CHECK_EQ_I64(mt_capture_writer_finish(w, "complete"), 0);

    // ---- the names live in the capture: delete the library, move the capture, read again
    for (int i = 0; i < 4; i++)
        if (h[i])
            dlclose(h[i]);
    char lib[4200], moved_dir[4200], moved[4300];
    snprintf(lib, sizeof lib, "%s/libsymtest.so", tmp);
    CHECK_EQ_I64(unlink(lib), 0);
    snprintf(moved_dir, sizeof moved_dir, "%s/elsewhere", tmp);
    CHECK_EQ_I64(mkdir(moved_dir, 0700), 0);
    snprintf(moved, sizeof moved, "%s/copy.db", moved_dir);
    CHECK_EQ_I64(rename(path, moved), 0);

    mt_capture* cap;
    CHECK_EQ_I64(mt_capture_open(moved, &cap, err, sizeof err), 0);
    mr_symbols* sy = NULL;
    char msg[512];
    CHECK_EQ_I64(mr_symbols_load(cap, &sy, msg, sizeof msg), 0);
    if (sy) {
        CHECK_EQ_STR(mr_symbols_frame_name(sy, S_LIB_DEBUG + 2), "symtest_hidden");
        const mr_symloc* locs;
        size_t nl = mr_symbols_frame_locs(sy, S_INLINE2 + 1, &locs);
        CHECK_EQ_I64(nl, 3);
        if (nl < 3)
            locs = (const mr_symloc[3]){{"?", NULL, 0, 0}, {"?", NULL, 0, 0}, {"?", NULL, 0, 0}};
        CHECK_EQ_STR(locs[0].function, "inlined_inner");
        CHECK(locs[0].inlined);
        CHECK_EQ_STR(locs[1].function, "inlined_middle");
        CHECK_EQ_STR(locs[2].function, "inline_outer2");
        CHECK(!locs[2].inlined);
        CHECK_EQ_I64(locs[2].line, line_at[S_INLINE2]);
        CHECK_EQ_STR(mr_symbols_frame_module(sy, S_LIB_DEBUG + 1), "libsymtest.so");
        uint32_t frames[8];
        // Leaf first; main's caller is noise and only shows with all_frames.
        CHECK_EQ_I64(mr_symbols_stack(sy, 3, false, frames, 8), 2);
        CHECK_EQ_I64(frames[0], S_INLINE1 + 1);
        CHECK_EQ_I64(frames[1], S_PLAIN + 1);
        CHECK_EQ_I64(mr_symbols_stack(sy, 3, true, frames, 8), 3);
        CHECK_EQ_I64(frames[2], S_MAIN_CALLER + 1);
        CHECK_EQ_I64(mr_symbols_stack(sy, 3, true, frames, 1), 3);
        CHECK_EQ_STR(mr_symbols_frame_name(sy, 12345), "[unknown frame]");
        mr_symbols_free(sy);
    }
    mt_capture_close(cap);

    // ---- an unsymbolized copy is symbolized on first load and the result stored
    sqlite3* raw;
    CHECK_EQ_I64(sqlite3_open(moved, &raw), SQLITE_OK);
    exec_sql(raw, "UPDATE frame SET function=NULL WHERE id=1;"
                  "UPDATE meta SET value='0' WHERE key='symbolized'");
    sqlite3_close(raw);
    CHECK_EQ_I64(mt_capture_open(moved, &cap, err, sizeof err), 0);
    char note[512], said[512];
    int quiet = stderr_to(tmp, said, sizeof said);
    CHECK_EQ_I64(mr_symbols_ensure(cap, note, sizeof note), 0);
    stderr_back(quiet);
    CHECK(!strncmp(note, "symbolized ", 11)); // the caller's to say: nothing on stderr
    CHECK_EQ_I64(file_size(said), 0);
    char* v = mt_capture_meta_text(cap, "symbolized");
    CHECK_EQ_STR(v, "1");
    free(v);
    sqlite3* stored = capture_sql_open(cap);
    check_frame(stored, S_PLAIN + 1, "plain_caller", me, line_at[S_PLAIN]);
    sqlite3_close(stored);
    mt_capture_close(cap);

    // ---- stacks that cannot be read: -EPROTO and why, for the caller to say
    CHECK_EQ_I64(sqlite3_open(moved, &raw), SQLITE_OK);
    exec_sql(raw, "UPDATE callsite SET id = 4294967296 WHERE id = (SELECT max(id) FROM callsite)");
    sqlite3_close(raw);
    CHECK_EQ_I64(mt_capture_open(moved, &cap, err, sizeof err), 0);
    mr_symbols* broken = NULL;
    quiet = stderr_to(tmp, said, sizeof said);
    CHECK_EQ_I64(mr_symbols_load(cap, &broken, note, sizeof note), -EPROTO);
    stderr_back(quiet);
    CHECK(broken == NULL && strstr(note, "cannot read stacks") != NULL);
    CHECK_EQ_I64(file_size(said), 0);
    mt_capture_close(cap);

    (void)argv;
    CHECK_DONE();
}
