// SPDX-License-Identifier: MIT
// One side of memreport diff: a capture's numbers at its peak, and its entries keyed by
// function (name, file name) and by stack (function names, outermost first).
#include "diff_run.h"

#include "extent.h"
#include "load.h"
#include "opts.h"
#include "runtime_held.h"
#include "sites.h"

#include "memtrace/schema.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char* mr_diff_run_file_name(const char* file) {
    const char* slash = file ? strrchr(file, '/') : NULL;
    return slash ? slash + 1 : file;
}

static void set_values(uint64_t* v, const uint64_t* by_metric) {
    v[MR_DIFF_PEAK_BYTES] = by_metric[MR_METRIC_LIVE_BYTES];
    v[MR_DIFF_ALLOC_BYTES] = by_metric[MR_METRIC_ALLOC_BYTES];
    v[MR_DIFF_ALLOCATIONS] = by_metric[MR_METRIC_ALLOC_COUNT];
    v[MR_DIFF_LEAKED_BYTES] = by_metric[MR_METRIC_END_BYTES];
}

// Functions are keyed by name and the file's name without its directory: a build in
// another directory is the same function.
static int function_entries(mr_diff_run* r, bool inclusive) {
    size_t n = r->fns.n;
    r->fn_entries = calloc(n ? n : 1, sizeof *r->fn_entries);
    r->fn_keys = calloc(2 * (n ? n : 1), sizeof *r->fn_keys);
    if (!r->fn_entries || !r->fn_keys)
        return -ENOMEM;
    for (size_t i = 0; i < n; i++) {
        const mr_function* f = &r->fns.v[i];
        mr_diff_entry* e = &r->fn_entries[r->nfns];
        set_values(e->v, inclusive ? f->total : f->self);
        if (!(e->v[0] | e->v[1] | e->v[2] | e->v[3])) // a caller only (self 0): not listed
            continue;
        r->fn_keys[2 * r->nfns] = f->name;
        r->fn_keys[2 * r->nfns + 1] = mr_diff_run_file_name(f->file);
        e->key = &r->fn_keys[2 * r->nfns];
        e->nkey = 2;
        r->nfns++;
    }
    return 0;
}

// The function names of a row's stack, outermost first (inlined functions included, as
// the function view shows them), in a new array.
static const char** stack_key(const mr_diff_run* r, uint32_t callsite, bool all_frames,
                              uint32_t* frames, size_t* nkey) {
    size_t nf = mr_functions_stack(r->sy, callsite, all_frames, frames), n = 0;
    for (size_t j = 0; j < nf; j++)
        n += mr_symbols_frame_locs(r->sy, frames[j], &(const mr_symloc*){NULL});
    const char** key = malloc((n ? n : 1) * sizeof *key);
    if (!key)
        return NULL;
    size_t k = n;
    for (size_t j = 0; j < nf; j++) {
        const mr_symloc* locs;
        size_t nl = mr_symbols_frame_locs(r->sy, frames[j], &locs);
        for (size_t l = 0; l < nl; l++)
            key[--k] = locs[l].function;
    }
    if (n == 0)
        key[n++] = MR_FUNCTIONS_NO_STACK;
    *nkey = n;
    return key;
}

static int stack_entries(mr_diff_run* r, bool all_frames) {
    r->stack_entries = calloc(r->prof.nrows ? r->prof.nrows : 1, sizeof *r->stack_entries);
    uint32_t* frames = malloc(MR_SITES_MAX_DEPTH * sizeof *frames);
    if (!r->stack_entries || !frames) {
        free(frames);
        return -ENOMEM;
    }
    for (size_t i = 0; i < r->prof.nrows; i++) {
        const mr_profile_row* row = &r->prof.rows[i];
        mr_diff_entry* e = &r->stack_entries[r->nstacks];
        if (!(e->key = stack_key(r, row->callsite, all_frames, frames, &e->nkey))) {
            free(frames);
            return -ENOMEM;
        }
        r->nstacks++;
        uint64_t by_metric[MR_NMETRICS];
        for (int m = 0; m < MR_NMETRICS; m++)
            by_metric[m] = mr_profile_row_value(row, (mr_metric)m);
        set_values(e->v, by_metric);
    }
    free(frames);
    return 0;
}

void mr_diff_run_close(mr_diff_run* r) {
    for (size_t i = 0; i < r->nstacks; i++)
        free((void*)r->stack_entries[i].key);
    free(r->stack_entries);
    free(r->fn_entries);
    free(r->fn_keys);
    mr_functions_free(&r->fns);
    mr_profile_free(&r->prof);
    if (r->sy)
        mr_symbols_free(r->sy);
    if (r->cap)
        mt_capture_close(r->cap);
}

// The numbers of an open capture at its peak, with what went wrong (or a note) in r->err. progress:
// whether a terminal may show this side's progress. Returns an exit code.
static int numbers(mr_diff_run* r, bool all_frames, bool inclusive, bool progress) {
    r->npu = mr_extent_default_heap(r->cap) == MT_HEAP_NPU;
    mr_query q = MR_QUERY_INIT(mr_extent_default_heap(r->cap));
    q.progress = progress ? "diff" : NULL;
    int e = mr_profile_build(r->cap, &q, &r->prof, r->err, sizeof r->err);
    if (!e && (e = mr_runtime_held_apart(&r->prof, r->sy, false, &r->held_bytes, NULL)))
        snprintf(r->err, sizeof r->err, "out of memory");
    if (e)
        return mr_messages_exit_code(e);
    if (mr_functions_build(&r->prof, r->sy, all_frames, &r->fns) ||
        function_entries(r, inclusive) || stack_entries(r, all_frames)) {
        snprintf(r->err, sizeof r->err, "out of memory");
        return MR_EXIT_IO;
    }
    return MR_EXIT_OK;
}

// Computes the numbers of runs[0..n) on two threads, each taking the next run not yet
// taken: each run reads its own capture and symbols, and the model keeps no state outside
// the structures it is given. Only the calling thread shows progress.
typedef struct pool {
    mr_diff_run** runs;
    int* rc;
    size_t n;
    atomic_size_t next;
    bool all_frames, inclusive;
} pool;

static void work(pool* p, bool progress) {
    for (size_t i; (i = atomic_fetch_add(&p->next, 1)) < p->n;)
        p->rc[i] = numbers(p->runs[i], p->all_frames, p->inclusive, progress);
}

static void* second_worker(void* arg) {
    work(arg, false);
    return NULL;
}

int mr_diff_run_numbers(mr_diff_run** runs, size_t n, bool all_frames, bool inclusive) {
    pool p = {.runs = runs, .n = n, .all_frames = all_frames, .inclusive = inclusive};
    atomic_init(&p.next, 0);
    if (!(p.rc = calloc(n ? n : 1, sizeof *p.rc))) {
        mr_messages_error(n ? runs[0]->path : NULL, "out of memory");
        return MR_EXIT_IO;
    }
    pthread_t t;
    bool threaded = n > 1 && pthread_create(&t, NULL, second_worker, &p) == 0;
    work(&p, true); // without a second thread, this one does them all
    if (threaded)
        pthread_join(t, NULL);
    // Messages from this thread only, as one run after the other: each run's note (damaged
    // stored aggregates), up to the first failed run's reason.
    int rc = MR_EXIT_OK;
    for (size_t i = 0; !rc && i < n; i++)
        if ((rc = p.rc[i]) || runs[i]->err[0])
            mr_messages_error(runs[i]->path, "%s", runs[i]->err);
    free(p.rc);
    return rc;
}

int mr_diff_run_open(mr_diff_run* base, mr_diff_run* next, const char* base_path,
                     const char* new_path, bool all_frames, bool inclusive) {
    *base = (mr_diff_run){.path = base_path};
    *next = (mr_diff_run){.path = new_path};
    int rc = mr_load_capture_symbols(base_path, &base->cap, &base->sy);
    if (!rc)
        rc = mr_load_capture_symbols(new_path, &next->cap, &next->sy);
    mr_diff_run* both[] = {base, next};
    return rc ? rc : mr_diff_run_numbers(both, 2, all_frames, inclusive);
}
