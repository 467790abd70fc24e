// SPDX-License-Identifier: MIT
// The capture writer's typed row functions, read back with SQL: which columns become NULL,
// that an id written twice keeps one row, that mark_end closes the latest open range of
// its name and thread only, that bulk counters keep every point in order, and the thread
// reader and the sidecar removal of common/.
#include "../check.h"
#include "../tmpdir.h"
#include "memtrace/capture.h"
#include "memtrace/schema.h"

#include <fcntl.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

// The first column of the first row of sql as text ("NULL" for NULL, "none" for no row).
static const char* query(sqlite3* db, const char* sql) {
    static char out[256];
    sqlite3_stmt* st;
    snprintf(out, sizeof out, "error");
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
        return out;
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW)
        snprintf(out, sizeof out, "%s",
                 sqlite3_column_type(st, 0) == SQLITE_NULL
                     ? "NULL"
                     : (const char*)sqlite3_column_text(st, 0));
    else if (rc == SQLITE_DONE)
        snprintf(out, sizeof out, "none");
    sqlite3_finalize(st);
    return out;
}

static void write_rows(mt_capture_writer* w) {
    CHECK_EQ_I64(mt_capture_writer_begin(w), 0);
    mt_frame_rec native = {
        .id = 1, .mapping_id = 3, .pc = 0x1234, .has_rel_pc = true, .rel_pc = 0x34};
    mt_frame_rec outside = {.id = 2, .pc = 0x99, .has_rel_pc = true, .rel_pc = 0x99};
    mt_frame_rec named = {.id = 3, .pc = 3, .function = "npu_func"};
    CHECK_EQ_I64(mt_capture_writer_frame(w, &native), 0);
    CHECK_EQ_I64(mt_capture_writer_frame(w, &native), 0); // again: replaces, one row
    CHECK_EQ_I64(mt_capture_writer_frame(w, &outside), 0);
    CHECK_EQ_I64(mt_capture_writer_frame(w, &named), 0);
    mt_callsite_rec root = {.id = 1, .parent_id = 0, .frame_id = 1, .depth = 1};
    mt_callsite_rec leaf = {.id = 2, .parent_id = 1, .frame_id = 2, .depth = 2};
    CHECK_EQ_I64(mt_capture_writer_callsite(w, &root), 0);
    CHECK_EQ_I64(mt_capture_writer_callsite(w, &leaf), 0);
    mt_mapping_rec loaded = {.id = 3,
                             .path = "/lib/a.so",
                             .start = 0x1000,
                             .end = 0x2000,
                             .load_bias = 0x1000,
                             .build_id = "",
                             .ts_loaded = 5,
                             .ts_unloaded = -1};
    mt_mapping_rec unloaded = {.id = 4,
                               .path = "/lib/b.so",
                               .start = 0x3000,
                               .end = 0x4000,
                               .build_id = "abcd",
                               .ts_loaded = 6,
                               .ts_unloaded = 9};
    CHECK_EQ_I64(mt_capture_writer_mapping(w, &loaded), 0);
    CHECK_EQ_I64(mt_capture_writer_mapping(w, &unloaded), 0);
    CHECK_EQ_I64(mt_capture_writer_thread(w, 42, "worker"), 0);
    CHECK_EQ_I64(mt_capture_writer_thread(w, 7, "main"), 0);
    CHECK_EQ_I64(mt_capture_writer_thread(w, 42, "renamed"), 0);
    CHECK_EQ_I64(mt_capture_writer_call_count(w, "malloc", 10), 0);
    CHECK_EQ_I64(mt_capture_writer_call_count(w, "malloc", 12), 0);
    // Two open ranges "r" on thread 42, one on thread 43: mark_end closes the later of 42's.
    mt_mark_rec r = {
        .heap = MT_HEAP_LIBC, .kind = "range", .name = "r", .has_tid = true, .tid = 42};
    r.ts_begin = 100;
    CHECK_EQ_I64(mt_capture_writer_mark(w, &r), 0);
    r.ts_begin = 200;
    CHECK_EQ_I64(mt_capture_writer_mark(w, &r), 0);
    r.tid = 43;
    r.ts_begin = 300;
    CHECK_EQ_I64(mt_capture_writer_mark(w, &r), 0);
    CHECK_EQ_I64(mt_capture_writer_mark_end(w, "r", 42, 250), 0);
    mt_mark_rec flag = {.heap = MT_HEAP_NPU,
                        .kind = "fragmentation",
                        .name = "fragmentation",
                        .ts_begin = 7,
                        .attrs = "{\"bytes\":5}"};
    CHECK_EQ_I64(mt_capture_writer_mark(w, &flag), 0);
    mt_counter_point pts[300];
    for (int i = 0; i < 300; i++)
        pts[i] = (mt_counter_point){.ts = i, .value = 1000 + i};
    CHECK_EQ_I64(mt_capture_writer_counters(w, MT_TRACK_RSS, pts, 300), 0); // 2 blocks + 44 rows
    CHECK_EQ_I64(mt_capture_writer_commit(w), 0);
}

static void check_rows(sqlite3* db) {
    CHECK_EQ_STR(query(db, "SELECT count(*) FROM frame"), "3");
    CHECK_EQ_STR(query(db, "SELECT mapping_id || ',' || rel_pc FROM frame WHERE id=1"), "3,52");
    CHECK_EQ_STR(query(db, "SELECT mapping_id FROM frame WHERE id=2"), "NULL");
    CHECK_EQ_STR(query(db, "SELECT function FROM frame WHERE id=1"), "NULL");
    CHECK_EQ_STR(query(db, "SELECT rel_pc FROM frame WHERE id=3"), "NULL");
    CHECK_EQ_STR(query(db, "SELECT function || relevant FROM frame WHERE id=3"), "npu_func1");
    // Callsites go into one compressed row per commit (test_capture_callsites reads them).
    CHECK_EQ_STR(query(db, "SELECT count(*) || ':' || (SELECT group_concat(count)"
                           " FROM callsite_chunk) FROM callsite"),
                 "0:2");
    CHECK_EQ_STR(query(db, "SELECT build_id FROM mapping WHERE id=3"), "NULL");
    CHECK_EQ_STR(query(db, "SELECT ts_unloaded FROM mapping WHERE id=3"), "NULL");
    CHECK_EQ_STR(query(db, "SELECT build_id || ts_unloaded FROM mapping WHERE id=4"), "abcd9");
    CHECK_EQ_STR(query(db, "SELECT name FROM thread WHERE tid=42"), "renamed");
    CHECK_EQ_STR(query(db, "SELECT count || '/' || (SELECT count(*) FROM call_count)"
                           " FROM call_count WHERE name='malloc'"),
                 "12/1");
    CHECK_EQ_STR(query(db, "SELECT group_concat(ts_begin || '-' || ifnull(ts_end, 'open'))"
                           " FROM (SELECT * FROM mark WHERE kind='range' ORDER BY id)"),
                 "100-open,200-250,300-open");
    CHECK_EQ_STR(query(db, "SELECT heap || ifnull(ts_end, 'N') || ifnull(tid, 'N') || attrs"
                           " FROM mark WHERE kind='fragmentation'"),
                 "2NN{\"bytes\":5}");
    CHECK_EQ_STR(query(db, "SELECT count(*) FROM counter WHERE track=1"), "300");
    CHECK_EQ_STR(query(db, "SELECT count(*) FROM (SELECT ts, value, rowid FROM counter"
                           " WHERE value != ts + 1000 OR rowid != ts + 1)"),
                 "0");
}

static void add_thread(void* ud, int64_t tid, const char* name) {
    char* out = ud;
    size_t n = strlen(out);
    snprintf(out + n, 256 - n, "%lld=%s;", (long long)tid, name);
}

static void test_rows(void) {
    char path[128], err[256];
    snprintf(path, sizeof path, "%s/rows.db", test_tmpdir());
    mt_capture_writer* w;
    CHECK_EQ_I64(mt_capture_writer_open(path, &w, err, sizeof err), 0);
    if (!w)
        return;
    write_rows(w);
    CHECK_EQ_I64(mt_capture_writer_finish(w, "complete"), 0);
    sqlite3* db;
    CHECK(sqlite3_open(path, &db) == SQLITE_OK);
    check_rows(db);
    // A thread without a name is left out by the reader.
    sqlite3_exec(db, "INSERT INTO thread(tid, name) VALUES(9, NULL)", NULL, NULL, NULL);
    sqlite3_close(db);
    mt_capture* cap;
    CHECK_EQ_I64(mt_capture_open(path, &cap, err, sizeof err), 0);
    if (!cap)
        return;
    char names[256] = "";
    CHECK_EQ_I64(mt_capture_threads(cap, add_thread, names), 0);
    CHECK_EQ_STR(names, "7=main;42=renamed;");
    mt_capture_close(cap);
    unlink(path);
}

static void test_remove_sidecars(void) {
    char path[128], side[160];
    snprintf(path, sizeof path, "%s/s.db", test_tmpdir());
    static const char* const suffix[] = {"-wal", "-shm", "-journal"};
    for (int i = 0; i < 3; i++) {
        snprintf(side, sizeof side, "%s%s", path, suffix[i]);
        close(open(side, O_WRONLY | O_CREAT, 0600));
    }
    close(open(path, O_WRONLY | O_CREAT, 0600));
    mt_capture_remove_sidecars(path);
    struct stat st;
    for (int i = 0; i < 3; i++) {
        snprintf(side, sizeof side, "%s%s", path, suffix[i]);
        CHECK(stat(side, &st) != 0);
    }
    CHECK(stat(path, &st) == 0); // the capture itself stays
    unlink(path);
}

// Every file a process creates costs it (ext4 looks for a recently freed inode): a capture's
// life creates the file and its -wal, and no -journal (created and deleted at the switches
// into and out of WAL mode before).
static void test_files_created(void) {
    char path[128], names[512] = "";
    snprintf(path, sizeof path, "%s/f.db", test_tmpdir());
    int fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
    CHECK(fd >= 0);
    if (fd < 0)
        return;
    CHECK(inotify_add_watch(fd, test_tmpdir(), IN_CREATE) >= 0);
    mt_capture_writer* w;
    char err[256];
    CHECK_EQ_I64(mt_capture_writer_open(path, &w, err, sizeof err), 0);
    if (w) {
        write_rows(w);
        CHECK_EQ_I64(mt_capture_writer_finish(w, "complete"), 0);
    }
    _Alignas(struct inotify_event) char buf[4096];
    ssize_t n;
    while ((n = read(fd, buf, sizeof buf)) > 0)
        for (char* p = buf; p < buf + n;) {
            const struct inotify_event* ev = (const struct inotify_event*)p;
            if (ev->len) {
                strncat(names, ev->name, sizeof names - strlen(names) - 2);
                strcat(names, ";");
            }
            p += sizeof *ev + ev->len;
        }
    close(fd);
    CHECK_EQ_STR(names, "f.db;f.db-wal;");
    struct stat st;
    snprintf(names, sizeof names, "%s-wal", path);
    CHECK(stat(names, &st) != 0); // one self-contained file at the end
    unlink(path);
}

int main(void) {
    test_rows();
    test_remove_sidecars();
    test_files_created();
    printf("%d checks, %d failures\n", check_count, check_failures);
    return check_failures != 0;
}
