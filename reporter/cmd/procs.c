// SPDX-License-Identifier: MIT
// summary and flamegraph over a process tree's captures (procs.h): the set is opened by the
// model (capture_set.h), each process replayed or profiled on its own, the report written
// by render/ (procs_report.h, flamegraph_page.h).
#include "procs.h"

#include "capture_set.h"
#include "extent.h"
#include "flame_procs.h"
#include "flame_tree.h"
#include "load.h"
#include "output_file.h"
#include "procs_report.h"
#include "procs_timeline.h"
#include "procs_views.h"
#include "profile.h"
#include "runtime_held.h"
#include "symbols.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

// Kept frames at most, whatever --min-width says (as for one capture).
#define MAX_NODES 20000

// Opens the set; on failure says why and returns the exit code.
static int open_set(mr_capture_set* s, char* const* paths, int n, const char* help) {
    char bad[4096], err[512];
    int e = mr_capture_set_open(s, paths, (size_t)n, bad, sizeof bad, err, sizeof err);
    if (!e)
        return MR_EXIT_OK;
    if (e == -EINVAL) // the command line names a capture twice
        return mr_opts_usage_error(help, "%s: %s", bad, err);
    mr_messages_error(bad, "%s", err);
    return mr_messages_exit_code(e);
}

int mr_procs_joint_peak(const mr_capture_set* s, mr_procs_moment* m) {
    mr_procs_error err;
    int e = mr_procs_timeline_moment_find(s, m, &err);
    if (e)
        mr_messages_error(err.path, "%s", err.msg);
    return mr_messages_exit_code(e);
}

int mr_procs_open(mr_capture_set* s, char* const* paths, int n, const char* help, bool symbols) {
    int rc = open_set(s, paths, n, help);
    if (rc || !symbols)
        return rc;
    for (size_t i = 0; !rc && i < s->n; i++)
        rc = s->procs[i].sym ? MR_EXIT_OK : mr_load_symbols(s->procs[i].cap, &s->procs[i].sym);
    if (rc)
        mr_capture_set_free(s);
    return rc;
}

int mr_procs_profiles(const mr_capture_set* s, const mr_query* q, const mr_procs_moment* at,
                      mr_profile** v, mr_profile* sum) {
    *sum = (mr_profile){0};
    *v = calloc(s->n, sizeof **v);
    if (!*v) {
        mr_messages_error(s->procs[0].path, "out of memory");
        return MR_EXIT_IO;
    }
    int rc = MR_EXIT_OK;
    size_t built = 0;
    for (; !rc && built < s->n; built++) {
        const mr_process* p = &s->procs[built];
        mr_query pq = *q;
        pq.heap = mr_extent_default_heap(p->cap);
        if (at) {
            pq.moment = MR_AT_TIME;
            pq.at = at->at[built];
            pq.before_seq = at->before_seq[built];
        }
        if ((rc = p->sym ? mr_load_program_profile(p->path, p->cap, p->sym, &pq, &(*v)[built])
                         : mr_load_profile(p->path, p->cap, &pq, &(*v)[built])))
            break;
        mr_procs_views_profile_add(sum, &(*v)[built]);
    }
    if (rc) {
        mr_procs_profiles_free(*v, built);
        *v = NULL;
    }
    return rc;
}

void mr_procs_profiles_free(mr_profile* v, size_t n) {
    for (size_t i = 0; v && i < n; i++)
        mr_profile_free(&v[i]);
    free(v);
}

int mr_procs_report(char* const* paths, int n, const char* help, const mr_query* q, bool joint_peak,
                    mr_procs_report_fn fn, void* ud) {
    mr_capture_set s;
    int rc = mr_procs_open(&s, paths, n, help, true);
    if (rc)
        return rc;
    mr_profile *profs = NULL, sum;
    mr_procs_moment joint = {0};
    bool at_joint = q->moment == MR_AT_PEAK && joint_peak;
    if (at_joint)
        rc = mr_procs_joint_peak(&s, &joint);
    if (!rc && !(rc = mr_procs_profiles(&s, q, at_joint ? &joint : NULL, &profs, &sum)))
        rc = fn(ud, &s, profs, &sum, at_joint ? &joint : NULL);
    mr_procs_profiles_free(profs, profs ? s.n : 0);
    mr_procs_timeline_moment_free(&joint);
    mr_capture_set_free(&s);
    return rc;
}

// The numbers of one process, from its aggregates. Returns an exit code.
static int numbers_of(const mr_process* p, mr_proc_numbers* out) {
    mr_aggregates a;
    int rc = mr_load_aggregates(p->cap, mr_extent_default_heap(p->cap), "summary", &a);
    if (rc)
        return rc;
    const mr_heap_totals* t = &a.peak.heap;
    uint64_t held_bytes = 0, held_blocks = 0; // the program's leaks only, as summary's
    rc = mr_load_runtime_held(p->cap, &a, &held_bytes, &held_blocks);
    int64_t duration = mt_capture_meta_int(p->cap, "duration_ns", -1);
    *out = (mr_proc_numbers){.truncated = mt_capture_truncated(p->cap),
                             .events = t->events,
                             .allocations = t->allocations,
                             .frees = t->frees,
                             .bytes_allocated = t->bytes_allocated,
                             .peak_bytes = t->peak_bytes,
                             .peak_ts = t->peak_ts,
                             .leaked_bytes = t->live_bytes - held_bytes,
                             .leaked_allocations = t->live_blocks - held_blocks,
                             .duration_ns = duration >= 0 ? duration : t->last_ts};
    mr_aggregates_free(&a);
    return rc;
}

int mr_procs_summary(const mr_opts* o, char* const* paths, int n, const char* help) {
    mr_capture_set s;
    int rc = open_set(&s, paths, n, help);
    if (rc)
        return rc;
    mr_proc_numbers* nums = calloc(s.n, sizeof *nums);
    if (!nums) {
        mr_messages_error(paths[0], "out of memory");
        rc = MR_EXIT_IO;
    }
    mr_procs_moment joint = {0};
    if (!rc)
        rc = mr_procs_joint_peak(&s, &joint);
    for (size_t i = 0; !rc && i < s.n; i++)
        if (!(rc = numbers_of(&s.procs[i], &nums[i])))
            nums[i].at_joint_peak = joint.live[i];
    mr_report_to to = mr_opts_report_to(o);
    if (!rc)
        rc = mr_procs_report_summary_write(&to, &s, nums, &joint);
    mr_procs_timeline_moment_free(&joint);
    free(nums);
    mr_capture_set_free(&s);
    return rc;
}

// The flame tree of one process at `at` (the processes' joint peak), or at its end.
// Returns an exit code.
static int process_tree(const mr_process* p, mr_flamegraph_mode mode, int64_t at,
                        uint64_t before_seq, mr_flame_tree* t) {
    mr_symbols* sym = NULL;
    int rc = mr_load_symbols(p->cap, &sym);
    if (rc)
        return rc;
    mr_query q = MR_QUERY_INIT(mr_extent_default_heap(p->cap));
    q.moment = mode == MR_FLAMEGRAPH_LEAKS ? MR_AT_END : MR_AT_TIME;
    q.at = at;
    q.before_seq = before_seq;
    q.progress = "flamegraph";
    mr_profile prof;
    char err[256] = "";
    int e = mr_profile_build(p->cap, &q, &prof, err, sizeof err);
    if (!e && err[0]) // a note: damaged stored aggregates, read anew
        mr_messages_error(p->path, "%s", err);
    if (!e && (e = mr_runtime_held_apart(&prof, sym, q.moment == MR_AT_END, NULL, NULL)))
        snprintf(err, sizeof err, "out of memory");
    if (!e) {
        e = mr_flame_tree_build(t, sym, &prof, false);
        snprintf(err, sizeof err, "out of memory");
    }
    mr_profile_free(&prof);
    mr_symbols_free(sym); // the tree keeps its strings, not the symbols
    t->sym = NULL;
    if (e)
        mr_messages_error(p->path, "%s", err);
    return e == 0 ? MR_EXIT_OK : mr_messages_exit_code(e);
}

// memreport-flamegraph-NAME.html, NAME the first input's file name without .db.
static char* default_output(const char* path) {
    size_t n = strlen(path);
    while (n > 1 && path[n - 1] == '/')
        n--;
    size_t start = n;
    while (start > 0 && path[start - 1] != '/')
        start--;
    if (n - start > 3 && !strncmp(path + n - 3, ".db", 3))
        n -= 3;
    char* out;
    if (asprintf(&out, "memreport-flamegraph-%.*s.html", (int)(n - start), path + start) < 0)
        return NULL;
    return out;
}

// The combined tree of every process of s, pruned. Returns an exit code.
static int combined_tree(const mr_capture_set* s, const mr_procs_flame_args* a,
                         const mr_procs_moment* joint, mr_flame_tree* g) {
    if (mr_flame_procs_init(g)) {
        mr_messages_error(s->procs[0].path, "out of memory");
        return MR_EXIT_IO;
    }
    int rc = MR_EXIT_OK;
    for (size_t i = 0; !rc && i < s->n; i++) {
        mr_flame_tree t = {0};
        rc = process_tree(&s->procs[i], a->mode, joint->n ? joint->at[i] : -1,
                          joint->n ? joint->before_seq[i] : 0, &t);
        if (!rc && mr_flame_tree_prune(&t, a->min_width, MAX_NODES)) {
            mr_messages_error(s->procs[i].path, "out of memory");
            rc = MR_EXIT_IO;
        }
        char* label = rc ? NULL : mr_procs_report_label(&s->procs[i]);
        if (!rc && (!label || mr_flame_procs_add(g, label, &t))) {
            mr_messages_error(s->procs[i].path, "out of memory");
            rc = MR_EXIT_IO;
        }
        free(label);
        mr_flame_tree_free(&t);
    }
    // Each process was pruned on its own: here only the page's bound on frames applies,
    // which folds the narrowest first (a process frame is wider than its own frames).
    if (!rc && mr_flame_tree_prune(g, 0, MAX_NODES)) {
        mr_messages_error(s->procs[0].path, "out of memory");
        rc = MR_EXIT_IO;
    }
    return rc;
}

int mr_procs_flamegraph(const mr_procs_flame_args* a, char* const* paths, int n, const char* help) {
    char* def = a->output ? NULL : default_output(paths[0]);
    const char* output = a->output ? a->output : def;
    if (!output) {
        mr_messages_error(paths[0], "out of memory");
        return MR_EXIT_IO;
    }
    mr_capture_set s;
    mr_flame_tree g = {0};
    mr_procs_moment joint = {0};
    int rc = open_set(&s, paths, n, help);
    if (!rc && a->mode != MR_FLAMEGRAPH_LEAKS)
        rc = mr_procs_joint_peak(&s, &joint);
    if (!rc)
        rc = combined_tree(&s, a, &joint, &g);
    mr_output_file out;
    if (!rc && !(rc = mr_output_file_open(&out, output, a->force))) {
        // The page's title and capture are those of the first root (the command run).
        mr_flamegraph_view view = {.mode = a->mode,
                                   .all_frames = a->all_frames,
                                   .inverted = a->inverted,
                                   .orientation = a->orientation,
                                   .processes = true,
                                   .t = joint.ts};
        int e = mr_flamegraph_page_write(out.fp, &g, s.procs[0].cap, &view);
        if (e) {
            mr_messages_error(e == -ENOMEM ? paths[0] : output, "%s",
                              e == -ENOMEM ? "out of memory" : "cannot write the page");
            mr_output_file_abort(&out);
            rc = MR_EXIT_IO;
        } else {
            rc = mr_output_file_commit(&out);
        }
    }
    mr_flame_tree_free(&g);
    mr_procs_timeline_moment_free(&joint);
    if (s.procs)
        mr_capture_set_free(&s);
    free(def);
    return rc;
}
