// SPDX-License-Identifier: MIT
// Prints the events of a capture's libc heap, one a line in seq order: "seq ts kind size"
// (ts in ns since the capture started, kind as named in schema.h). Read through the same
// reader every report uses, so e2e tests can check exact event times (the plot's series
// are bucketed per pixel column and merge nearby events).
// Usage: e2e_dump_events CAPTURE     exit 0, or 2 with a message when the capture is unreadable
#include "memtrace/capture.h"
#include "memtrace/schema.h"

#include <inttypes.h>
#include <stdio.h>

int main(int argc, char** argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: e2e_dump_events CAPTURE\n");
        return 1;
    }
    char err[256];
    mt_capture* cap;
    if (mt_capture_open(argv[1], &cap, err, sizeof err) != 0) {
        fprintf(stderr, "e2e_dump_events: %s: %s\n", argv[1], err);
        return 2;
    }
    mt_event_iter* it;
    int rc = mt_capture_iter_open(cap, MT_HEAP_LIBC, &it);
    if (rc != 0) {
        fprintf(stderr, "e2e_dump_events: %s: cannot read events (%d)\n", argv[1], rc);
        mt_capture_close(cap);
        return 2;
    }
    mt_event ev;
    while ((rc = mt_capture_iter_next(it, &ev)) == 1)
        printf("%" PRIu64 " %" PRId64 " %s %" PRIu64 "\n", ev.seq, ev.ts, mt_kind_name(ev.kind),
               ev.size);
    if (rc < 0)
        fprintf(stderr, "e2e_dump_events: %s: %s\n", argv[1], mt_capture_iter_error(it));
    mt_capture_iter_close(it);
    mt_capture_close(cap);
    return rc < 0 ? 2 : 0;
}
