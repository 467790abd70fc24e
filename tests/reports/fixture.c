// SPDX-License-Identifier: MIT
// Report-test captures with known truth (see fixture.h). Built into each report test and
// into the reports_fixture tool the browser test uses.
#include "fixture.h"

#include "memtrace/codec.h"
#include "memtrace/schema.h"
#include "memtrace/vec.h"

#include <getopt.h>
#include <sqlite3.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void die(const char* what, const char* msg) {
    fprintf(stderr, "fixture: %s: %s\n", what, msg);
    exit(99);
}

void fx_open(fx* f, const char* path) {
    char err[256];
    memset(f, 0, sizeof *f);
    if (mt_capture_writer_open(path, &f->w, err, sizeof err))
        die(path, err);
    if (mt_capture_writer_heap(f->w, MT_HEAP_LIBC, "libc", "native", "ns"))
        die(path, "heap row");
}

void fx_sql(fx* f, const char* sql) {
    char* err = NULL;
    if (sqlite3_exec(mt_capture_writer_db(f->w), sql, NULL, NULL, &err) != SQLITE_OK)
        die(sql, err ? err : "?");
}

void fx_event(fx* f, int kind, uint32_t tid, uint64_t addr, uint64_t size, uint32_t callsite) {
    if (MT_VEC_RESERVE(&f->ev, &f->cap, f->n + 1))
        die("events", "out of memory");
    f->seq++;
    f->ev[f->n++] = (mt_event){.seq = f->seq,
                               .ts = (int64_t)f->seq * 1000,
                               .addr = addr,
                               .size = size,
                               .callsite = callsite,
                               .tid = tid,
                               .kind = (uint8_t)kind,
                               .heap = MT_HEAP_LIBC};
}

void fx_alloc(fx* f, uint32_t tid, uint64_t addr, uint64_t size, uint32_t callsite) {
    fx_event(f, MT_KIND_MALLOC, tid, addr, size, callsite);
}

void fx_free(fx* f, uint32_t tid, uint64_t addr) {
    fx_event(f, MT_KIND_FREE, tid, addr, 0, 0);
}

void fx_finish(fx* f, const char* status) {
    mt_event* part = malloc((f->n + 1) * sizeof *part);
    uint8_t* scratch = malloc(mt_codec_bound(f->n + 1));
    if (!part || !scratch)
        die("finish", "out of memory");
    if (mt_capture_writer_begin(f->w))
        die("finish", mt_capture_writer_error(f->w));
    // One chunk per thread and per run of 3 events: several chunks overlap in seq.
    bool* done = calloc(f->n + 1, sizeof *done);
    for (size_t i = 0; i < f->n; i++) {
        if (done[i])
            continue;
        size_t k = 0;
        for (size_t j = i; j < f->n && k < 3; j++)
            if (!done[j] && f->ev[j].tid == f->ev[i].tid) {
                part[k++] = f->ev[j];
                done[j] = true;
            }
        if (mt_capture_writer_chunk(f->w, MT_HEAP_LIBC, part, k, scratch))
            die("chunk", mt_capture_writer_error(f->w));
    }
    if (mt_capture_writer_meta_int(f->w, "events_written", (int64_t)f->n) ||
        mt_capture_writer_meta_int(f->w, "duration_ns", (int64_t)f->seq * 1000 + 1000) ||
        mt_capture_writer_commit(f->w))
        die("finish", mt_capture_writer_error(f->w));
    if (mt_capture_writer_finish(f->w, status))
        die("finish", "cannot finish the capture");
    free(done);
    free(part);
    free(scratch);
    free(f->ev);
    memset(f, 0, sizeof *f);
}

// Callsites of the standard scenario (leaf ids carried by events):
//   1 __libc_start_call_main (relevant=0)
//   2   main
//   3     load_config
//   4       parse_file             leaf A
//   5     make_node                leaf B
//   6       operator new (rel=0)   leaf C
//   7     cache_put                leaf D
//   8     prog+0x1234 (no name)    leaf E
//   9   worker                     leaf F (thread 200)
enum { A = 4, B = 5, C = 6, D = 7, E = 8, F = 9 };

void fx_standard(const char* path) {
    fx f;
    fx_open(&f, path);
    fx_sql(&f, "INSERT INTO meta VALUES('exe','/usr/bin/prog'),"
               "('cmdline','[\"prog\",\"--fast\"]'),('pid','4242'),('symbolized','1');"
               "INSERT INTO thread(tid, name) VALUES(100,'main'),(200,'worker-1');"
               "INSERT INTO mapping VALUES(1,'/usr/bin/prog',4096,65536,0,'ab',0,NULL),"
               "(2,'/usr/lib/x86_64-linux-gnu/libc.so.6',1048576,2097152,1048576,'cd',0,NULL);"
               "INSERT INTO frame VALUES"
               "(1,1,4097,4097,'main','prog.c',10,NULL,1),"
               "(2,1,4098,4098,'load_config','config.c',20,NULL,1),"
               "(3,1,4099,4099,'parse_file','parse.c',30,NULL,1),"
               "(4,1,4100,4100,'make_node','tree.c',40,NULL,1),"
               "(5,1,4101,4101,'cache_put','cache.c',50,NULL,1),"
               "(7,1,4660,4660,NULL,NULL,NULL,NULL,1),"
               "(8,1,4102,4102,'worker','worker.c',7,NULL,1),"
               "(9,2,1048832,256,'__libc_start_call_main',NULL,NULL,NULL,0),"
               "(10,2,1048833,257,'operator new',NULL,NULL,NULL,0);"
               "INSERT INTO callsite VALUES(1,0,9,1),(2,1,1,2),(3,2,2,3),(4,3,3,4),"
               "(5,2,4,3),(6,5,10,4),(7,2,5,3),(8,2,7,3),(9,1,8,2);");
    // Frame 7 has rel_pc 0x1234 = 4660, so its label is "prog+0x1234".
    fx_alloc(&f, 100, 0x1000, 1000, A); // seq 1
    fx_alloc(&f, 100, 0x2000, 200, B);  // seq 2
    fx_free(&f, 100, 0x2000);           // seq 3: B is temporary
    fx_alloc(&f, 100, 0x3000, 4000, C); // seq 4
    fx_alloc(&f, 100, 0x4000, 300, D);  // seq 5
    fx_alloc(&f, 200, 0x5000, 5000, F); // seq 6
    fx_alloc(&f, 100, 0x6000, 64, E);   // seq 7: peak, 10364 live bytes
    fx_free(&f, 200, 0x5000);           // seq 8: not temporary (E allocated in between)
    fx_alloc(&f, 100, 0x7000, 100, D);  // seq 9
    fx_free(&f, 100, 0x1000);           // seq 10
    fx_alloc(&f, 200, 0x8000, 50, F);   // seq 11
    fx_event(&f, MT_KIND_REALLOC_FREE, 100, 0x4000, 0, D); // seq 12
    fx_event(&f, MT_KIND_REALLOC, 100, 0x4100, 600, D);    // seq 13
    fx_free(&f, 100, 0x9999); // seq 14: a block allocated before tracing (unmatched)
    // End: C 4000 (1 block), D 700 (2), E 64 (1), F 50 (1) = 4814 bytes in 5 blocks.
    fx_finish(&f, "complete");
}

// Names that are bytes, not text. SQL literals cannot hold the invalid UTF-8 and control
// bytes, so those are cast from blobs (decoded in the comments). Frames, each the leaf of
// callsite N under main (1):
//   2 caf\xe9_alloc in evil\x1b[2J.c:20, with an inlined callee hi\xff
//   3 esc\x1b]0;pwned\x07\x1b[2J<!--<script>    (terminal title, clear screen, HTML comment)
//   4 csi\xc2\x9b31m_alloc                     (U+009B, a C1 CSI)
//   5 </script><script>window.__pwned=1</script>
//   6 <img src=x onerror=window.__pwned=2>
//   7 <svg onload=window.__pwned=3>   (thread 200, named <img src=x onerror=window.__pwned=4>)
// Thread 100 is named w\x1b[2J. The command line, as the tracer writes it (controls
// escaped, other bytes raw): ["./prog","caf\xe9","\u001b]0;pwned\u0007","<!--<script>"].
void fx_hostile(const char* path) {
    fx f;
    fx_open(&f, path);
    fx_sql(&f, "INSERT INTO meta VALUES('exe','/usr/bin/prog'),('pid','4242'),"
               "('symbolized','1'),"
               "('cmdline', CAST(X'5b222e2f70726f67222c22636166e9222c225c75303031625d303b7077"
               "6e65645c7530303037222c223c212d2d3c7363726970743e225d' AS TEXT));"
               "INSERT INTO thread(tid, name) VALUES(100, CAST(X'771b5b324a' AS TEXT)),"
               "(200, '<img src=x onerror=window.__pwned=4>');"
               "INSERT INTO mapping VALUES(1,'/usr/bin/prog',4096,65536,0,'ab',0,NULL);"
               "INSERT INTO frame VALUES"
               "(1,1,4097,4097,'main','prog.c',10,NULL,1),"
               "(2,1,4098,4098,CAST(X'636166e95f616c6c6f63' AS TEXT),"
               " CAST(X'6576696c1b5b324a2e63' AS TEXT),20,"
               " CAST(X'5b7b2266756e6374696f6e223a226869ff222c2266696c65223a6e756c6c2c226c696e"
               "65223a6e756c6c7d5d' AS TEXT),1),"
               "(3,1,4099,4099,CAST(X'6573631b5d303b70776e6564071b5b324a3c212d2d3c736372697074"
               "3e' AS TEXT),'t.c',30,NULL,1),"
               "(4,1,4100,4100,CAST(X'637369c29b33316d5f616c6c6f63' AS TEXT),'t.c',40,NULL,1),"
               "(5,1,4101,4101,'</script><script>window.__pwned=1</script>','t.c',50,NULL,1),"
               "(6,1,4102,4102,'<img src=x onerror=window.__pwned=2>','t.c',60,NULL,1),"
               "(7,1,4103,4103,'<svg onload=window.__pwned=3>','t.c',70,NULL,1);"
               "INSERT INTO callsite VALUES(1,0,1,1),(2,1,2,2),(3,1,3,2),(4,1,4,2),(5,1,5,2),"
               "(6,1,6,2),(7,1,7,2);");
    for (uint32_t cs = 2; cs <= 7; cs++)
        fx_alloc(&f, cs == 7 ? 200 : 100, 0x1000 * cs, 100 * cs, cs);
    fx_finish(&f, "complete");
}

void fx_leak_verdicts(const char* path) {
    sqlite3* db;
    if (sqlite3_open(path, &db) != SQLITE_OK ||
        sqlite3_exec(db,
                     MEMTRACE_LEAK_TABLE_SQL
                     "WITH RECURSIVE s(n) AS (SELECT 1 UNION ALL SELECT n + 1"
                     " FROM s WHERE n < 300) INSERT INTO leak(seq, kind)"
                     " SELECT n, 1 + n % 4 FROM s;"
                     "INSERT OR REPLACE INTO meta(key, value)"
                     " VALUES('leak_scan', 'complete')",
                     NULL, NULL, NULL) != SQLITE_OK)
        die(path, sqlite3_errmsg(db));
    sqlite3_close(db);
}

int fx_run(int (*cmd)(int, char**), const char* arg0, ...) {
    char* argv[64];
    int argc = 0;
    va_list ap;
    va_start(ap, arg0);
    for (const char* a = arg0; a && argc < 63; a = va_arg(ap, const char*))
        argv[argc++] = (char*)a;
    va_end(ap);
    argv[argc] = NULL;
    optind = 0; // glibc: 0 re-initializes getopt for a new argument vector
    fflush(stdout);
    return cmd(argc, argv);
}

char* fx_read(const char* path) {
    FILE* fp = fopen(path, "rb");
    if (!fp)
        return NULL;
    fseek(fp, 0, SEEK_END);
    long n = ftell(fp);
    fseek(fp, 0, SEEK_SET);
    char* s = malloc((size_t)n + 1);
    if (!s || fread(s, 1, (size_t)n, fp) != (size_t)n)
        die(path, "cannot read");
    s[n] = 0;
    fclose(fp);
    return s;
}
