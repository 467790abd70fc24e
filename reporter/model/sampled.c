// SPDX-License-Identifier: MIT
// The sampled captures of this run (sampled.h).
#include "sampled.h"

#include "memtrace/units.h"
#include "memtrace/vec.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct noted_capture {
    char* path;
    uint64_t sample_bytes; // 0: not sampled
} noted_capture;
static noted_capture* noted;
static size_t nnoted, capnoted, nsampled;

void mr_sampled_note(mt_capture* cap) {
    const char* path = mt_capture_path(cap);
    for (size_t i = 0; i < nnoted; i++)
        if (!strcmp(noted[i].path, path))
            return;
    int64_t n = mt_capture_meta_int(cap, "sample_bytes", 0);
    char* copy = strdup(path);
    if (!copy || MT_VEC_RESERVE(&noted, &capnoted, nnoted + 1)) {
        free(copy); // out of memory: the capture goes unnoted
        return;
    }
    noted[nnoted].path = copy;
    noted[nnoted++].sample_bytes = n > 0 ? (uint64_t)n : 0;
    nsampled += n > 0;
}

size_t mr_sampled_count(void) {
    return nsampled;
}

void mr_sampled_get(size_t i, const char** path, uint64_t* sample_bytes) {
    for (size_t k = 0; k < nnoted; k++)
        if (noted[k].sample_bytes && i-- == 0) {
            *path = noted[k].path;
            *sample_bytes = noted[k].sample_bytes;
            return;
        }
    *path = "";
    *sample_bytes = 0;
}

// Whether every sampled capture has the same mean interval.
static bool one_interval(void) {
    const char* path;
    uint64_t first, n;
    mr_sampled_get(0, &path, &first);
    for (size_t i = 1; i < nsampled; i++) {
        mr_sampled_get(i, &path, &n);
        if (n != first)
            return false;
    }
    return true;
}

size_t mr_sampled_lines(void) {
    return nsampled > 1 && one_interval() ? 1 : nsampled;
}

void mr_sampled_line(size_t i, char* buf, size_t len) {
    const char* path;
    uint64_t n;
    mr_sampled_get(i, &path, &n);
    char interval[32], who[4200] = "";
    mt_units_format_bytes(n, interval, sizeof interval);
    if (nsampled > 1 && mr_sampled_lines() == 1) // a process tree sampled alike: one line
        snprintf(who, sizeof who, "%zu of %zu captures: ", nsampled, nnoted);
    else if (nnoted > 1)
        snprintf(who, sizeof who, "%s: ", path);
    snprintf(buf, len,
             "sampled: %sPoisson by bytes, mean interval %s (bytes are estimates; counts are of "
             "sampled allocations)",
             who, interval);
}
