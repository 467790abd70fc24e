// SPDX-License-Identifier: MIT
// The sampled captures of this run (sampled.h).
#include "sampled.h"

#include "memtrace/units.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_NOTED 64

static struct {
    char* path;
    uint64_t sample_bytes; // 0: not sampled
} noted[MAX_NOTED];
static size_t nnoted, nsampled;

void mr_sampled_note(mt_capture* cap) {
    const char* path = mt_capture_path(cap);
    for (size_t i = 0; i < nnoted; i++)
        if (!strcmp(noted[i].path, path))
            return;
    int64_t n = mt_capture_meta_int(cap, "sample_bytes", 0);
    char* copy = strdup(path);
    if (nnoted == MAX_NOTED || !copy) {
        free(copy);
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

void mr_sampled_line(size_t i, char* buf, size_t len) {
    const char* path;
    uint64_t n;
    mr_sampled_get(i, &path, &n);
    char interval[32];
    mt_format_bytes(n, interval, sizeof interval);
    snprintf(buf, len,
             "sampled: %s%sPoisson by bytes, mean interval %s (bytes are estimates; counts are "
             "of sampled allocations)",
             nnoted > 1 ? path : "", nnoted > 1 ? ": " : "", interval);
}
