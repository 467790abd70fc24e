// SPDX-License-Identifier: MIT
// Measures mt_symbolize_capture on a capture of N unique frames (default 10,000) spread over
// real objects of this machine: libc (DWARF from libc6-dbg when installed), libsqlite3 and
// libdw (symbol tables), and this program (DWARF). Prints the wall time. Not a test.
#define _GNU_SOURCE
#include "memtrace/capture.h"
#include "memtrace/symbolize.h"

#include <elfutils/libdwfl.h>
#include <errno.h>
#include <gelf.h>
#include <link.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

typedef struct object {
    char path[4096];
    uint64_t bias;
} object;

static object objs[8];
static int nobjs;

static int pick(struct dl_phdr_info* info, size_t size, void* ud) {
    (void)size;
    (void)ud;
    const char* n = info->dlpi_name;
    if (nobjs < 8 &&
        (!n[0] || strstr(n, "libc.so") || strstr(n, "libsqlite3") || strstr(n, "libdw.so"))) {
        object* o = &objs[nobjs++];
        if (n[0])
            snprintf(o->path, sizeof o->path, "%s", n);
        else if (readlink("/proc/self/exe", o->path, sizeof o->path - 1) < 0)
            nobjs--;
        o->bias = info->dlpi_addr;
    }
    return 0;
}

// Appends up to `want` return addresses inside the functions of one object (file
// addresses: a few bytes into each function, as a return address would be).
static size_t collect(const char* path, uint64_t* out, size_t want) {
    static const Dwfl_Callbacks cb = {.find_debuginfo = dwfl_standard_find_debuginfo,
                                      .section_address = dwfl_offline_section_address};
    Dwfl* d = dwfl_begin(&cb);
    dwfl_report_begin(d);
    Dwfl_Module* m = dwfl_report_elf(d, "x", path, -1, 0, false);
    dwfl_report_end(d, NULL, NULL);
    size_t n = 0;
    int nsym = m ? dwfl_module_getsymtab(m) : 0;
    for (int i = 0; i < nsym && n < want; i++) {
        GElf_Sym sym;
        GElf_Addr addr;
        const char* name = dwfl_module_getsym_info(m, i, &sym, &addr, NULL, NULL, NULL);
        if (!name || GELF_ST_TYPE(sym.st_info) != STT_FUNC || sym.st_size < 8)
            continue;
        for (uint64_t off = 5; off < sym.st_size && n < want; off += 97)
            out[n++] = sym.st_value + off;
    }
    dwfl_end(d);
    return n;
}

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char** argv) {
    size_t total = argc > 1 ? (size_t)atol(argv[1]) : 10000;
    dl_iterate_phdr(pick, NULL);
    char path[] = "/tmp/bench_symbolize.XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0)
        return 1;
    close(fd);
    char err[512];
    mt_capture_writer* w;
    if (mt_capture_writer_open(path, &w, err, sizeof err)) {
        fprintf(stderr, "bench_symbolize: %s\n", err);
        return 1;
    }
    sqlite3* db = mt_capture_writer_db(w);
    sqlite3_exec(db, "BEGIN", NULL, NULL, NULL);
    uint64_t* pcs = malloc(total * sizeof *pcs);
    size_t have = 0, frame_id = 1;
    sqlite3_stmt *mi, *fi;
    sqlite3_prepare_v2(db, "INSERT INTO mapping VALUES(?1,?2,0,0,?3,NULL,0,NULL)", -1, &mi, NULL);
    sqlite3_prepare_v2(db, "INSERT INTO frame(id,mapping_id,pc,rel_pc) VALUES(?1,?2,?3,?4)", -1,
                       &fi, NULL);
    for (int o = 0; o < nobjs && have < total; o++) {
        size_t share = (total - have) / (size_t)(nobjs - o);
        size_t n = collect(objs[o].path, pcs, share);
        printf("  %-60s %zu frames\n", objs[o].path, n);
        sqlite3_bind_int(mi, 1, o + 1);
        sqlite3_bind_text(mi, 2, objs[o].path, -1, SQLITE_STATIC);
        sqlite3_bind_int64(mi, 3, (int64_t)objs[o].bias);
        sqlite3_step(mi);
        sqlite3_reset(mi);
        for (size_t i = 0; i < n; i++) {
            sqlite3_bind_int64(fi, 1, (int64_t)frame_id++);
            sqlite3_bind_int(fi, 2, o + 1);
            sqlite3_bind_int64(fi, 3, (int64_t)(pcs[i] + objs[o].bias));
            sqlite3_bind_int64(fi, 4, (int64_t)pcs[i]);
            sqlite3_step(fi);
            sqlite3_reset(fi);
        }
        have += n;
    }
    sqlite3_finalize(mi);
    sqlite3_finalize(fi);
    sqlite3_exec(db, "COMMIT", NULL, NULL, NULL);

    double t0 = now();
    int done = mt_symbolize_capture(db, 0, err, sizeof err);
    double t1 = now();
    if (done < 0) {
        fprintf(stderr, "bench_symbolize: %s\n", err);
        return 1;
    }
    sqlite3_stmt* st;
    sqlite3_prepare_v2(db,
                       "SELECT count(*), sum(line IS NOT NULL), sum(function LIKE '%+0x%')"
                       " FROM frame",
                       -1, &st, NULL);
    sqlite3_step(st);
    printf("symbolized %d unique frames in %.3f s (%.1f us/frame): %lld with file:line, "
           "%lld unresolved\n",
           done, t1 - t0, (t1 - t0) * 1e6 / (done ? done : 1), sqlite3_column_int64(st, 1),
           sqlite3_column_int64(st, 2));
    sqlite3_finalize(st);
    mt_capture_writer_abandon(w);
    unlink(path);
    free(pcs);
    return 0;
}
