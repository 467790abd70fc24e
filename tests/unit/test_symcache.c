// SPDX-License-Identifier: MIT
// The symbol cache's files: once a cache exists, a process that opens it, looks names up
// and closes it creates and removes no file (each file created costs a short program a
// fraction of a millisecond: ext4 looks for a recently freed inode), and still finds what
// an earlier process put.
#include "../check.h"
#include "../tmpdir.h"
#include "memtrace/symcache.h"

#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

// The names created or deleted in the test's directory since the last call, "name+;" or "name-;"
// each.
static void drain_events(int fd, char* names, size_t len) {
    _Alignas(struct inotify_event) char buf[4096];
    ssize_t n;
    while ((n = read(fd, buf, sizeof buf)) > 0)
        for (char* p = buf; p < buf + n;) {
            const struct inotify_event* ev = (const struct inotify_event*)p;
            if (ev->len && strlen(names) + ev->len + 3 < len) {
                strcat(names, ev->name);
                strcat(names, ev->mask & IN_CREATE ? "+;" : "-;");
            }
            p += sizeof *ev + ev->len;
        }
}

static void test_reopen_creates_no_file(void) {
    char path[128], names[1024] = "";
    snprintf(path, sizeof path, "%s/symbols.db", test_tmpdir());
    setenv("MEMTRACE_SYMBOL_CACHE", path, 1);
    mt_symcache* c = mt_symcache_open(); // the first process: creates the cache
    CHECK(c != NULL);
    if (!c)
        return;
    mt_symcache_entry e = {.function = "main", .file = "m.c", .line = 3, .relevant = true};
    mt_symcache_put(c, "abcd", 0x40, &e);
    mt_symcache_close(c);

    int fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
    CHECK(fd >= 0);
    if (fd < 0)
        return;
    CHECK(inotify_add_watch(fd, test_tmpdir(), IN_CREATE | IN_DELETE) >= 0);
    for (int process = 0; process < 2; process++) { // later processes: only read
        c = mt_symcache_open();
        CHECK(c != NULL);
        if (!c)
            break;
        mt_symcache_entry got;
        CHECK(mt_symcache_get(c, "abcd", 0x40, &got));
        CHECK_EQ_STR(got.function ? got.function : "(none)", "main");
        CHECK_EQ_I64(got.line, 3);
        mt_symcache_entry_free(&got);
        CHECK(!mt_symcache_get(c, "abcd", 0x41, &got));
        mt_symcache_close(c);
    }
    drain_events(fd, names, sizeof names);
    close(fd);
    CHECK_EQ_STR(names, "");
}

// A process that learns a new name still keeps it for the next one.
static void test_put_after_reopen(void) {
    mt_symcache* c = mt_symcache_open();
    CHECK(c != NULL);
    if (!c)
        return;
    mt_symcache_entry e = {.function = "helper", .relevant = true, .from_dwarf = true};
    mt_symcache_put(c, "abcd", 0x80, &e);
    mt_symcache_close(c);
    c = mt_symcache_open();
    CHECK(c != NULL);
    if (!c)
        return;
    mt_symcache_entry got;
    CHECK(mt_symcache_get(c, "abcd", 0x80, &got));
    CHECK_EQ_STR(got.function ? got.function : "(none)", "helper");
    CHECK(got.from_dwarf);
    mt_symcache_entry_free(&got);
    CHECK(mt_symcache_get(c, "abcd", 0x40, &got));
    mt_symcache_entry_free(&got);
    mt_symcache_close(c);
}

// The kept -wal is emptied by the last process to close the cache, even when that one only
// read while another wrote: the next to open has no frames to recover from it.
static void test_wal_emptied_by_last_reader(void) {
    mt_symcache* reader = mt_symcache_open();
    mt_symcache* writer = mt_symcache_open();
    CHECK(reader != NULL && writer != NULL);
    mt_symcache_entry e = {.function = "late", .relevant = true};
    mt_symcache_put(writer, "abcd", 0xc0, &e);
    mt_symcache_close(writer); // not the last: its frames stay in the -wal
    mt_symcache_close(reader);
    char wal[160];
    snprintf(wal, sizeof wal, "%s/symbols.db-wal", test_tmpdir());
    struct stat st;
    CHECK(stat(wal, &st) == 0);
    CHECK_EQ_I64(st.st_size, 0);
    mt_symcache* c = mt_symcache_open();
    mt_symcache_entry got;
    CHECK(c && mt_symcache_get(c, "abcd", 0xc0, &got)); // checkpointed into the file
    mt_symcache_entry_free(&got);
    mt_symcache_close(c);
}

static sqlite3* last_opened; // the connection most recently opened in this process

static int remember_connection(sqlite3* db, char** err, const void* api) {
    (void)err, (void)api;
    last_opened = db;
    return SQLITE_OK;
}

// Opening the cache prepares only plain statements: the JSON vetting of an inlined chain
// (a long statement over json_each) is prepared when a row has one, and still vets it.
static void test_inlined_vetted_on_demand(void) {
    sqlite3_auto_extension((void (*)(void))remember_connection);
    mt_symcache* c = mt_symcache_open();
    sqlite3_cancel_auto_extension((void (*)(void))remember_connection);
    CHECK(c != NULL && last_opened != NULL);
    if (!c || !last_opened)
        return;
    for (sqlite3_stmt* st = sqlite3_next_stmt(last_opened, NULL); st;
         st = sqlite3_next_stmt(last_opened, st))
        CHECK(strstr(sqlite3_sql(st), "json") == NULL);
    mt_symcache_entry good = {.function = "outer",
                              .inlined = "[{\"function\":\"inner\",\"file\":\"i.c\",\"line\":7}]",
                              .relevant = true,
                              .from_dwarf = true};
    mt_symcache_entry bad = {.function = "forged", .inlined = "[1,2]", .relevant = true};
    mt_symcache_entry neg = {
        .function = "neg", .inlined = "[{\"function\":\"f\",\"line\":-1}]", .relevant = true};
    mt_symcache_put(c, "ef01", 1, &good);
    mt_symcache_put(c, "ef01", 2, &bad);
    mt_symcache_put(c, "ef01", 3, &neg);
    mt_symcache_close(c);
    c = mt_symcache_open();
    CHECK(c != NULL);
    if (!c)
        return;
    mt_symcache_entry got;
    CHECK(mt_symcache_get(c, "ef01", 1, &got));
    CHECK_EQ_STR(got.inlined ? got.inlined : "(none)", good.inlined);
    mt_symcache_entry_free(&got);
    CHECK(!mt_symcache_get(c, "ef01", 2, &got)); // not a chain of frames: a miss
    CHECK(!mt_symcache_get(c, "ef01", 3, &got)); // a negative line: a miss
    CHECK(mt_symcache_get(c, "ef01", 1, &got));  // the vetting statement, reused
    mt_symcache_entry_free(&got);
    mt_symcache_close(c);
}

int main(void) {
    test_reopen_creates_no_file();
    test_put_after_reopen();
    test_wal_emptied_by_last_reader();
    test_inlined_vetted_on_demand();
    printf("%d checks, %d failures\n", check_count, check_failures);
    return check_failures != 0;
}
