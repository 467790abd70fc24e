// SPDX-License-Identifier: MIT
// What a command reads through the model (the capture, its names, profiles, aggregates,
// leak totals), each failure said as "memreport: FILE: what is wrong" and returned as the
// exit code. The model itself prints nothing (CONTRIBUTING.md).
#include "load.h"

#include "extent.h"
#include "leak_kinds.h"
#include "messages.h"
#include "runtime_held.h"
#include "sampled.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int mr_load_capture(const char* path, mt_capture** out) {
    char err[512];
    int rc = mt_capture_open(path, out, err, sizeof err);
    const char* heap = mr_extent_wanted_heap();
    if (rc == 0 && heap && !mr_extent_heap_named(*out, heap)) { // --heap NAME
        mr_messages_error(path, "no heap named '%s'%s", heap,
                          strcmp(heap, "mmap") ? "" : " (recorded with MEMTRACE_MMAP=1 only)");
        mt_capture_close(*out);
        *out = NULL;
        return MR_EXIT_BAD_INPUT;
    }
    if (rc == 0) {
        mr_sampled_note(*out); // the report then says its figures are estimates
        return MR_EXIT_OK;
    }
    mr_messages_error(path, "%s", err);
    return (rc == -ENOENT || rc == -EACCES || rc == -EIO) ? MR_EXIT_IO : MR_EXIT_BAD_INPUT;
}

int mr_load_symbols(mt_capture* cap, mr_symbols** sym) {
    char msg[1024];
    int e = mr_symbols_load(cap, sym, msg, sizeof msg);
    if (msg[0])
        mr_messages_error(mt_capture_path(cap), "%s", msg);
    return mr_messages_exit_code(e);
}

int mr_load_capture_symbols(const char* path, mt_capture** cap, mr_symbols** sym) {
    int rc = mr_load_capture(path, cap);
    if (rc)
        return rc;
    if ((rc = mr_load_symbols(*cap, sym))) {
        mt_capture_close(*cap);
        *cap = NULL;
    }
    return rc;
}

int mr_load_profile(const char* path, mt_capture* cap, const mr_query* q, mr_profile* p) {
    char err[256] = "";
    int e = mr_profile_build(cap, q, p, err, sizeof err);
    if (e || err[0]) // the reason, or a note (damaged stored aggregates, read anew)
        mr_messages_error(path, "%s", err);
    return !e ? MR_EXIT_OK : mr_messages_exit_code(e);
}

int mr_load_program_profile(const char* path, mt_capture* cap, const mr_symbols* sym,
                            const mr_query* q, mr_profile* p) {
    int rc = mr_load_profile(path, cap, q, p);
    if (!rc && mr_runtime_held_apart(p, sym, q->moment == MR_AT_END, NULL, NULL)) {
        mr_profile_free(p);
        mr_messages_error(path, "out of memory");
        rc = MR_EXIT_IO;
    }
    return rc;
}

int mr_load_runtime_held(mt_capture* cap, const mr_aggregates* a, uint64_t* bytes,
                         uint64_t* blocks) {
    *bytes = *blocks = 0;
    if (!a->peak.heap.live_blocks) // no stacks to read for nothing
        return MR_EXIT_OK;
    mr_symbols* sym = NULL;
    int rc = mr_load_symbols(cap, &sym);
    mr_profile end = {0};
    if (!rc && (mr_profile_moment_of(&a->peak, MR_AT_END, &end) ||
                mr_runtime_held_apart(&end, sym, true, bytes, blocks))) {
        mr_messages_error(mt_capture_path(cap), "out of memory");
        rc = MR_EXIT_IO;
    }
    mr_profile_free(&end);
    mr_symbols_free(sym);
    return rc;
}

int mr_load_aggregates(mt_capture* cap, int heap, const char* progress, mr_aggregates* a) {
    char err[256] = "";
    int e = mr_aggregates_get(cap, heap, progress, a, err, sizeof err);
    if (e || err[0])
        mr_messages_error(mt_capture_path(cap), "%s", err);
    return e ? mr_messages_exit_code(e) : MR_EXIT_OK;
}

int mr_load_leak_totals(mt_capture* cap, bool* scanned, uint64_t* bytes, uint64_t* blocks) {
    *scanned = false;
    for (size_t k = 0; k < MT_LEAK_COUNT_; k++)
        bytes[k] = blocks[k] = 0;
    char* status = mt_capture_meta_text(cap, "leak_scan");
    bool complete = status && !strcmp(status, "complete");
    free(status);
    if (!complete) // no verdicts: no need for the stacks
        return MR_EXIT_OK;
    mr_symbols* sym = NULL;
    int rc = mr_load_symbols(cap, &sym);
    if (rc)
        return rc;
    mr_leak_kinds kinds;
    char err[256];
    int e = mr_leak_kinds_load(cap, mr_extent_default_heap(cap), mr_symbols_callsite_count(sym),
                               &kinds, err, sizeof err);
    if (e || err[0]) // an error, or a note: damaged stored sums, counted anew
        mr_messages_error(mt_capture_path(cap), "%s", err);
    if (e) {
        rc = e == -ENOMEM ? MR_EXIT_IO : MR_EXIT_BAD_INPUT;
    } else {
        *scanned = kinds.scanned;
        mr_leak_kinds_program(&kinds, sym, bytes, blocks);
        mr_leak_kinds_free(&kinds);
    }
    mr_symbols_free(sym);
    return rc;
}
