// SPDX-License-Identifier: MIT
// The moment, range and thread given on the command line (mr_when, opts.h) placed in a
// capture: times checked against its extent, names of marks and ranges looked up in it.
#include "when.h"

#include "extent.h"
#include "messages.h"

#include "memtrace/units.h"
#include "memtrace/vec.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

int mr_when_check_time(const char* option, const char* value, mr_time t, const char* path,
                       mr_extent extent, int64_t* ts) {
    char a[32];
    if (extent.steps && !t.step) {
        mr_messages_error(
            NULL,
            "%s %s: %s is an imported NPU log, timed in allocation steps: expected step N "
            "(0 to %lld)",
            option, value, path, (long long)extent.end - 1);
        return MR_EXIT_USAGE;
    }
    if (!extent.steps && t.step) {
        mr_messages_error(NULL,
                          "%s %s: %s is timed in ns, not steps: expected a time with a unit (e.g. "
                          "20ms, 1.5s)",
                          option, value, path);
        return MR_EXIT_USAGE;
    }
    if (extent.steps && t.value >= extent.end) {
        mr_messages_error(NULL, "%s %s: past the end of %s (%lld steps: step 0 to step %lld)",
                          option, value, path, (long long)extent.end, (long long)extent.end - 1);
        return MR_EXIT_USAGE;
    }
    if (!extent.steps && t.value > extent.end) {
        mr_messages_error(NULL, "%s %s: past the end of %s (duration %s)", option, value, path,
                          mt_units_format_duration(extent.end, a, sizeof a));
        return MR_EXIT_USAGE;
    }
    *ts = t.value;
    return MR_EXIT_OK;
}

// ---- marks and ranges named instead of times

// The marks of a heap, by time: what a name given for a time can be.
typedef struct named_mark {
    char* name;
    bool range;         // a range (begin..end), else a point in time
    int64_t begin, end; // end: the capture's end for a range never closed
} named_mark;
typedef struct mark_list {
    named_mark* v;
    size_t n, cap;
    int64_t capture_end;
    bool steps; // an NPU heap: a region ends where the next starts, so its last step is end-1
} mark_list;

static int collect_mark(void* ud, const mt_mark_rec* m) {
    mark_list* l = ud;
    if (!m->name || mt_vec_grow(&l->v, &l->cap, l->n + 1, sizeof *l->v))
        return m->name ? -ENOMEM : 0;
    // A point mark is written with its end at its begin.
    bool range = (m->kind && !strcmp(m->kind, "range")) || (m->has_end && m->ts_end != m->ts_begin);
    char* name = strdup(m->name);
    if (!name)
        return -ENOMEM;
    int64_t end = m->ts_end;
    if (!m->has_end)
        end = l->capture_end;
    else if (l->steps && m->ts_end > m->ts_begin)
        end = m->ts_end - 1;
    l->v[l->n++] = (named_mark){name, range, m->ts_begin, end};
    return 0;
}

static void marks_free(mark_list* l) {
    for (size_t i = 0; i < l->n; i++)
        free(l->v[i].name);
    free(l->v);
}

// Reads the heap's marks. Returns 0 or an exit code after the reason.
static int marks_load(mt_capture* cap, int heap, const char* path, mark_list* l) {
    mr_extent extent = mr_extent_of(cap, heap);
    l->capture_end = extent.steps ? extent.end - 1 : extent.end;
    l->steps = extent.steps;
    mt_mark_query mq = {.heap = heap, .by_time = true};
    int rc = mt_capture_marks(cap, &mq, collect_mark, l);
    if (!rc)
        return MR_EXIT_OK;
    marks_free(l);
    *l = (mark_list){0};
    mr_messages_error(path, "%s", rc == -ENOMEM ? "out of memory" : "cannot read its marks");
    return mr_messages_exit_code(rc);
}

// What a name stands for: a mark's time in any role; a range's begin as FROM, its end as
// TO or --at; ROLE_RANGE_BEGIN (--range NAME) takes only a range.
typedef enum mark_role { ROLE_AT, ROLE_FROM, ROLE_TO, ROLE_RANGE_BEGIN } mark_role;
typedef struct mark_ctx {
    const mark_list* marks;
    const char* path;
    mr_extent extent;
} mark_ctx;

static size_t count_named(const mark_list* l, const char* name, size_t len) {
    size_t n = 0;
    for (size_t i = 0; i < l->n; i++)
        n += strlen(l->v[i].name) == len && !memcmp(l->v[i].name, name, len);
    return n;
}

// The k-th (from 0) mark named name[0..len), or NULL.
static const named_mark* nth_named(const mark_list* l, const char* name, size_t len, size_t k) {
    for (size_t i = 0; i < l->n; i++)
        if (strlen(l->v[i].name) == len && !memcmp(l->v[i].name, name, len) && k-- == 0)
            return &l->v[i];
    return NULL;
}

// "mark at 1.20 ms" or "range 1.20 ms..3.00 ms", into buf.
static const char* describe_mark(const named_mark* m, bool steps, char* buf, size_t len) {
    char a[32], b[32];
    if (m->range)
        snprintf(buf, len, "range %s..%s", mr_extent_format_time(m->begin, steps, a, sizeof a),
                 mr_extent_format_time(m->end, steps, b, sizeof b));
    else
        snprintf(buf, len, "mark at %s", mr_extent_format_time(m->begin, steps, a, sizeof a));
    return buf;
}

// An unknown name: says which names the capture has (the first few, each once).
static int unknown_name(const mark_ctx* c, const char* option, const char* value) {
    char list[512] = "";
    size_t len = 0, shown = 0;
    for (size_t i = 0; i < c->marks->n && len < sizeof list; i++) {
        const named_mark* m = &c->marks->v[i];
        size_t nlen = strlen(m->name);
        if (nth_named(c->marks, m->name, nlen, 0) != m)
            continue; // listed already
        if (shown++ == 12) {
            len += (size_t)snprintf(list + len, sizeof list - len, ", ...");
            break;
        }
        size_t times = count_named(c->marks, m->name, nlen);
        char many[32] = "";
        if (times > 1)
            snprintf(many, sizeof many, " x%zu", times);
        len += (size_t)snprintf(list + len, sizeof list - len, "%s'%s' (%s%s)",
                                shown > 1 ? ", " : "", m->name, m->range ? "range" : "mark", many);
    }
    if (!c->marks->n)
        mr_messages_error(NULL, "%s %s: %s has no marks or ranges (times take a unit: 20ms, 1.5s)",
                          option, value, c->path);
    else
        mr_messages_error(NULL, "%s %s: no mark or range of that name in %s; it has %s", option,
                          value, c->path, list);
    return MR_EXIT_USAGE;
}

// A name recorded several times: lists them with the NAME#N that picks each.
static int ambiguous_name(const mark_ctx* c, const char* option, const char* value,
                          const char* name, size_t times) {
    char list[512] = "", d[96];
    size_t len = 0;
    for (size_t k = 0; k < times && len < sizeof list; k++) {
        if (k == 8) {
            len += (size_t)snprintf(list + len, sizeof list - len, ", ...");
            break;
        }
        const named_mark* m = nth_named(c->marks, name, strlen(name), k);
        len += (size_t)snprintf(list + len, sizeof list - len, "%s%s#%zu (%s)", k ? ", " : "", name,
                                k + 1, describe_mark(m, c->extent.steps, d, sizeof d));
    }
    mr_messages_error(NULL, "%s %s: %zu marks or ranges are named '%s' in %s; pick one: %s", option,
                      value, times, name, c->path, list);
    return MR_EXIT_USAGE;
}

// The time `name` stands for in `role`. Returns 0 with *ts, or the usage exit code after
// the reason.
static int mark_time(const mark_ctx* c, const char* option, const char* value, const char* name,
                     mark_role role, int64_t* ts) {
    size_t len = strlen(name), k = 0;
    size_t times = count_named(c->marks, name, len);
    const char* hash = strrchr(name, '#');
    if (!times && hash && hash[1]) { // NAME#N, unless a mark is named so
        char* end;
        unsigned long long nth = strtoull(hash + 1, &end, 10);
        size_t base = (size_t)(hash - name);
        size_t base_times = count_named(c->marks, name, base);
        if (*end || !isdigit((unsigned char)hash[1]) || !base_times)
            return unknown_name(c, option, value);
        if (nth < 1 || nth > base_times) {
            mr_messages_error(NULL, "%s %s: '%.*s' was recorded %zu time%s: expected #1 to #%zu",
                              option, value, (int)base, name, base_times,
                              base_times == 1 ? "" : "s", base_times);
            return MR_EXIT_USAGE;
        }
        len = base;
        k = (size_t)nth - 1;
    } else if (!times) {
        return unknown_name(c, option, value);
    } else if (times > 1) {
        return ambiguous_name(c, option, value, name, times);
    }
    const named_mark* m = nth_named(c->marks, name, len, k);
    if (role == ROLE_RANGE_BEGIN && !m->range) {
        char d[96];
        mr_messages_error(NULL, "%s %s: '%.*s' is a %s, not a range: give FROM..TO", option, value,
                          (int)len, name, describe_mark(m, c->extent.steps, d, sizeof d));
        return MR_EXIT_USAGE;
    }
    *ts = m->range && role != ROLE_FROM && role != ROLE_RANGE_BEGIN ? m->end : m->begin;
    return MR_EXIT_OK;
}

int mr_when_query(const mr_when* w, const char* path, mt_capture* cap, mr_query* q, bool* steps) {
    *q = (mr_query)MR_QUERY_INIT(mr_extent_default_heap(cap));
    q->moment = w->moment;
    q->tid = w->tid;
    mr_extent extent = mr_extent_of(cap, q->heap);
    *steps = extent.steps;
    mark_list marks = {0};
    int rc = 0;
    if ((w->at_name || w->from_name || w->to_name) && (rc = marks_load(cap, q->heap, path, &marks)))
        return rc;
    mark_ctx ctx = {&marks, path, extent};
    if (w->at_name)
        rc = mark_time(&ctx, "--at", w->at_arg, w->at_name, ROLE_AT, &q->at);
    else if (w->at_arg)
        rc = mr_when_check_time("--at", w->at_arg, w->at, path, extent, &q->at);
    mark_role from_role = w->range_named ? ROLE_RANGE_BEGIN : ROLE_FROM;
    if (!rc && w->from_name)
        rc = mark_time(&ctx, "--range", w->from_arg, w->from_name, from_role, &q->from);
    else if (!rc && w->from_arg)
        rc = mr_when_check_time("--range", w->from_arg, w->from, path, extent, &q->from);
    if (!rc && w->to_name)
        rc = mark_time(&ctx, "--range", w->to_arg, w->to_name, ROLE_TO, &q->to);
    else if (!rc && w->to_arg)
        rc = mr_when_check_time("--range", w->to_arg, w->to, path, extent, &q->to);
    marks_free(&marks);
    if (!rc && q->from > q->to) {
        mr_messages_error(NULL, "--range: FROM is after TO");
        rc = MR_EXIT_USAGE;
    }
    return rc;
}
