// SPDX-License-Identifier: MIT
// memreport stats on a sampled capture (meta sample_bytes): each allocation read weighed
// (memtrace/sampling.h) is counted in the size histogram's bucket of the size the program
// asked for, with the bytes it stands for. Sizes 2^k - 1 and 2^k, rounded to bytes, would
// weigh the same at N = 4096 (7 and 8 bytes both 4100): the 7 bytes were counted as 8-15.
#include "cmd.h"

#include "../check.h"
#include "../reports/fixture.h"
#include "../tmpdir.h"
#include "memtrace/sampling.h"

#include <jansson.h>
#include <stdio.h>

#define N 4096

int main(void) {
    char cap[256], out[256];
    snprintf(cap, sizeof cap, "%s/sampled.db", test_tmpdir());
    snprintf(out, sizeof out, "%s/stats.json", test_tmpdir());
    fx f;
    fx_open(&f, cap);
    fx_sql(&f, "INSERT INTO meta VALUES('symbolized','1'),('sample_bytes',4096),"
               "('sample_method','poisson-bytes');"
               "INSERT INTO thread(tid, name) VALUES(1,'main');"
               "INSERT INTO mapping VALUES(1,'/usr/bin/prog',4096,65536,0,'ab',0,NULL);"
               "INSERT INTO frame VALUES(1,1,4097,4097,'main','prog.c',10,NULL,1);"
               "INSERT INTO callsite VALUES(1,0,1,1);");
    // One allocation each of 2^k - 1 and 2^k bytes, k = 1..12: bucket b holds 2^(b-1) to
    // 2^b - 1 bytes, so buckets 2..12 get two allocations, 1 (1 byte) and 13 (4096) one.
    uint64_t addr = 0x1000, want_bytes[14] = {0};
    for (unsigned k = 1; k <= 12; k++) {
        uint64_t sizes[2] = {(1ull << k) - 1, 1ull << k};
        for (int i = 0; i < 2; i++) {
            fx_alloc(&f, 1, addr += 0x1000, sizes[i], 1);
            unsigned bucket = 64u - (unsigned)__builtin_clzll(sizes[i]);
            want_bytes[bucket] += mt_sample_weight_bytes(sizes[i], N);
        }
    }
    fx_finish(&f, "complete");
    CHECK_EQ_I64(fx_run(mr_cmd_stats, "stats", cap, "--json", "-o", out, NULL), 0);
    json_error_t je;
    json_t* r = json_load_file(out, 0, &je);
    CHECK(r != NULL);
    json_t* sizes = json_object_get(r, "sizes");
    CHECK_EQ_I64(json_array_size(sizes), 13); // buckets 1..13 (8192 is 14 bits: none)
    for (size_t i = 0; i < json_array_size(sizes); i++) {
        json_t* h = json_array_get(sizes, i);
        uint64_t min = (uint64_t)json_integer_value(json_object_get(h, "min"));
        unsigned bucket = min ? 64u - (unsigned)__builtin_clzll(min) : 0;
        int64_t count = json_integer_value(json_object_get(h, "count"));
        int64_t want_count = bucket == 1 || bucket == 13 ? 1 : bucket <= 12 ? 2 : 0;
        if (count != want_count)
            fprintf(stderr, "bucket from %llu: %lld allocations, want %lld\n",
                    (unsigned long long)min, (long long)count, (long long)want_count);
        CHECK_EQ_I64(count, want_count);
        if (bucket < 14)
            CHECK_EQ_I64(json_integer_value(json_object_get(h, "bytes")),
                         (int64_t)want_bytes[bucket]);
    }
    json_decref(r);
    CHECK_DONE();
}
