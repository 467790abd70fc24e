// SPDX-License-Identifier: MIT
// The command layer's shared plumbing: options, usage errors, times on the command line,
// opening the input.
#include "options.h"

#include "cxx_names.h"
#include "leak_kinds.h"
#include "messages.h"
#include "output_file.h"
#include "runtime_held.h"
#include "sampled.h"
#include "symbols.h"

#include "memtrace/units.h"
#include "memtrace/vec.h"

#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

int mr_open_capture(const char* path, mt_capture** out) {
    char err[512];
    int rc = mt_capture_open(path, out, err, sizeof err);
    const char* heap = mr_wanted_heap_name();
    if (rc == 0 && heap && !mr_capture_heap_named(*out, heap)) { // --heap NAME
        mr_error(path, "no heap named '%s'%s", heap,
                 strcmp(heap, "mmap") ? "" : " (recorded with MEMTRACE_MMAP=1 only)");
        mt_capture_close(*out);
        *out = NULL;
        return MR_EXIT_BAD_INPUT;
    }
    if (rc == 0) {
        mr_sampled_note(*out); // the report then says its figures are estimates
        return MR_EXIT_OK;
    }
    mr_error(path, "%s", err);
    return (rc == -ENOENT || rc == -EACCES || rc == -EIO) ? MR_EXIT_IO : MR_EXIT_BAD_INPUT;
}

int mr_open_symbols(mt_capture* cap, mr_symbols** sym) {
    char msg[1024];
    int e = mr_symbols_load(cap, sym, msg, sizeof msg);
    if (msg[0])
        mr_error(mt_capture_path(cap), "%s", msg);
    return mr_exit_code(e);
}

int mr_open_capture_symbols(const char* path, mt_capture** cap, mr_symbols** sym) {
    int rc = mr_open_capture(path, cap);
    if (rc)
        return rc;
    if ((rc = mr_open_symbols(*cap, sym))) {
        mt_capture_close(*cap);
        *cap = NULL;
    }
    return rc;
}

int mr_opts_handle(mr_opts* o, int c, const char* help) {
    switch (c) {
    case 'j':
        o->json = true;
        return MR_OPT_NEXT;
    case 'o':
        o->output = optarg;
        return MR_OPT_NEXT;
    case 'f':
        o->force = true;
        return MR_OPT_NEXT;
    case 'h':
        fputs(help, stdout);
        return MR_EXIT_OK;
    case MR_OPT_FULL_NAMES:
        mr_cxx_names_set_full(true);
        return MR_OPT_NEXT;
    default: // getopt said what is wrong
        mr_usage_hint(help);
        return MR_EXIT_USAGE;
    }
}

// The subcommand (second word) and the input (third word, "CAPTURE-or-LOG" read as
// "capture or log") of a help text's first line, "usage: memreport NAME INPUT ...".
static void usage_words(const char* help, char* name, size_t namelen, char* input,
                        size_t inputlen) {
    int n = 0, i = 0;
    sscanf(help, "usage: memreport %n%*s%n", &n, &i);
    snprintf(name, namelen, "%.*s", i > n ? i - n : 0, help + n);
    const char* in = help + i + strspn(help + i, " ");
    size_t k = 0;
    for (; k + 1 < inputlen && in[k] && in[k] != ' ' && in[k] != '\n'; k++)
        input[k] = in[k] == '-' ? ' ' : (char)tolower((unsigned char)in[k]);
    input[k] = 0;
}

void mr_usage_hint(const char* help) {
    // The usage lines: the first, and those indented under it.
    const char* end = strchr(help, '\n');
    while (end && end[1] == ' ' && end[2] == ' ')
        end = strchr(end + 1, '\n');
    char name[64], input[64];
    usage_words(help, name, sizeof name, input, sizeof input);
    fprintf(stderr, "%.*s\n('memreport %s --help' describes every option)\n",
            end ? (int)(end - help) : (int)strlen(help), help, name);
}

int mr_usage_error(const char* help, const char* fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fputs("memreport: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    mr_usage_hint(help);
    return MR_EXIT_USAGE;
}

const char* mr_opts_input(int argc, char** argv, const char* help) {
    if (optind == argc - 1)
        return argv[optind];
    char name[64], input[64];
    usage_words(help, name, sizeof name, input, sizeof input);
    if (optind >= argc)
        mr_usage_error(help, "%s needs a %s", name, input);
    else
        mr_usage_error(help, "%s takes one %s, got %d", name, input, argc - optind);
    return NULL;
}

int mr_parse_top(const char* value, const char* help, size_t* out) {
    char* end;
    long long v = strtoll(value, &end, 10);
    if (*end || end == value || v < 0) {
        char name[64], input[64];
        usage_words(help, name, sizeof name, input, sizeof input);
        return mr_usage_error(help, "%s: --top: not a count: '%s'", name, value);
    }
    *out = v == 0 ? SIZE_MAX : (size_t)v;
    return MR_EXIT_OK;
}

#define MR_TIME_EXPECTED                                                                           \
    "a time with its unit, ns, us, ms or s (e.g. 20ms, 1.5s), or step N for an imported NPU log"

int mr_parse_time(const char* option, const char* value, mr_time* out) {
    const char* p = value;
    if (!strncmp(p, "step", 4)) {
        p += 4;
        while (*p == ' ')
            p++;
        char* end;
        errno = 0;
        long long v = *p >= '0' && *p <= '9' ? strtoll(p, &end, 10) : -1;
        if (v < 0 || *end || errno) {
            mr_error(NULL, "%s %s: not a step: expected step N, N a whole number", option, value);
            return MR_EXIT_USAGE;
        }
        *out = (mr_time){v, true};
        return MR_EXIT_OK;
    }
    // Digits with an optional fraction; strtod alone would also take "1e3", "inf" or "0x1p4".
    size_t n = strspn(p, "0123456789");
    if (n && p[n] == '.')
        n += 1 + strspn(p + n + 1, "0123456789");
    if (!n) {
        mr_error(NULL, "%s %s: not a time: expected %s", option, value, MR_TIME_EXPECTED);
        return MR_EXIT_USAGE;
    }
    const char* unit = p + n;
    while (*unit == ' ')
        unit++;
    static const struct {
        const char* name;
        double ns;
    } units[] = {{"ns", 1}, {"us", 1e3}, {"ms", 1e6}, {"s", 1e9}};
    double scale = 0;
    for (size_t i = 0; i < sizeof units / sizeof *units; i++)
        if (!strcmp(unit, units[i].name))
            scale = units[i].ns;
    if (!*unit) {
        mr_error(NULL, "%s %s: no unit: expected %s", option, value, MR_TIME_EXPECTED);
        return MR_EXIT_USAGE;
    }
    if (!scale) {
        mr_error(NULL, "%s %s: unknown unit '%s': expected %s", option, value, unit,
                 MR_TIME_EXPECTED);
        return MR_EXIT_USAGE;
    }
    double ns = strtod(p, NULL) * scale;
    if (!(ns < 9.2e18)) {
        mr_error(NULL, "%s %s: too large a time", option, value);
        return MR_EXIT_USAGE;
    }
    *out = (mr_time){(int64_t)llround(ns), false};
    return MR_EXIT_OK;
}

int mr_time_in_capture(const char* option, const char* value, mr_time t, const char* path,
                       mr_extent extent, int64_t* ts) {
    char a[32];
    if (extent.steps && !t.step) {
        mr_error(NULL,
                 "%s %s: %s is an imported NPU log, timed in allocation steps: expected step N "
                 "(0 to %lld)",
                 option, value, path, (long long)extent.end - 1);
        return MR_EXIT_USAGE;
    }
    if (!extent.steps && t.step) {
        mr_error(NULL,
                 "%s %s: %s is timed in ns, not steps: expected a time with a unit (e.g. "
                 "20ms, 1.5s)",
                 option, value, path);
        return MR_EXIT_USAGE;
    }
    if (extent.steps && t.value >= extent.end) {
        mr_error(NULL, "%s %s: past the end of %s (%lld steps: step 0 to step %lld)", option, value,
                 path, (long long)extent.end, (long long)extent.end - 1);
        return MR_EXIT_USAGE;
    }
    if (!extent.steps && t.value > extent.end) {
        mr_error(NULL, "%s %s: past the end of %s (duration %s)", option, value, path,
                 mt_format_duration(extent.end, a, sizeof a));
        return MR_EXIT_USAGE;
    }
    *ts = t.value;
    return MR_EXIT_OK;
}

int mr_profile_for(const char* path, mt_capture* cap, const mr_query* q, mr_profile* p) {
    char err[256];
    int e = mr_profile_build(cap, q, p, err, sizeof err);
    if (e)
        mr_error(path, "%s", err);
    return !e ? MR_EXIT_OK : mr_exit_code(e);
}

int mr_program_profile_for(const char* path, mt_capture* cap, const mr_symbols* sym,
                           const mr_query* q, mr_profile* p) {
    int rc = mr_profile_for(path, cap, q, p);
    if (!rc && mr_profile_runtime_apart(p, sym, q->moment == MR_AT_END, NULL, NULL)) {
        mr_profile_free(p);
        mr_error(path, "out of memory");
        rc = MR_EXIT_IO;
    }
    return rc;
}

int mr_runtime_held_at_end(mt_capture* cap, const mr_aggregates* a, uint64_t* bytes,
                           uint64_t* blocks) {
    *bytes = *blocks = 0;
    if (!a->peak.heap.live_blocks) // no stacks to read for nothing
        return MR_EXIT_OK;
    mr_symbols* sym = NULL;
    int rc = mr_open_symbols(cap, &sym);
    mr_profile end = {0};
    if (!rc && (mr_profile_moment_of(&a->peak, MR_AT_END, &end) ||
                mr_profile_runtime_apart(&end, sym, true, bytes, blocks))) {
        mr_error(mt_capture_path(cap), "out of memory");
        rc = MR_EXIT_IO;
    }
    mr_profile_free(&end);
    mr_symbols_free(sym);
    return rc;
}

int mr_aggregates_for(mt_capture* cap, int heap, const char* progress, mr_aggregates* a) {
    char err[256];
    int e = mr_aggregates_get(cap, heap, progress, a, err, sizeof err);
    if (e)
        mr_error(mt_capture_path(cap), "%s", err);
    return e ? mr_exit_code(e) : MR_EXIT_OK;
}

int mr_leak_totals_at_end(mt_capture* cap, bool* scanned, uint64_t* bytes, uint64_t* blocks) {
    *scanned = false;
    for (size_t k = 0; k < MT_LEAK_COUNT_; k++)
        bytes[k] = blocks[k] = 0;
    char* status = mt_capture_meta_text(cap, "leak_scan");
    bool complete = status && !strcmp(status, "complete");
    free(status);
    if (!complete) // no verdicts: no need for the stacks
        return MR_EXIT_OK;
    mr_symbols* sym = NULL;
    int rc = mr_open_symbols(cap, &sym);
    if (rc)
        return rc;
    mr_leak_kinds kinds;
    char err[256];
    int e = mr_leak_kinds_load(cap, mr_capture_default_heap(cap), mr_symbols_callsite_count(sym),
                               &kinds, err, sizeof err);
    if (e) {
        mr_error(mt_capture_path(cap), "%s", err);
        rc = e == -ENOMEM ? MR_EXIT_IO : MR_EXIT_BAD_INPUT;
    } else {
        *scanned = kinds.scanned;
        mr_leak_kinds_program(&kinds, sym, bytes, blocks);
        mr_leak_kinds_free(&kinds);
    }
    mr_symbols_free(sym);
    return rc;
}

// Whether value is meant as a time: it starts with a digit, or with "step" and a number.
static bool looks_like_time(const char* value) {
    if (!strncmp(value, "step", 4))
        value += 4 + strspn(value + 4, " ");
    return isdigit((unsigned char)*value);
}

// A time, or the name of a mark (*name): a value that looks like a time is one, so a mark
// named like a time is given as mark:NAME. Returns 0 or the usage exit code.
static int parse_time_or_name(const char* option, const char* value, mr_time* t,
                              const char** name) {
    if (!strncmp(value, "mark:", 5) || !looks_like_time(value)) {
        *name = strncmp(value, "mark:", 5) ? value : value + 5;
        if (**name)
            return MR_EXIT_OK;
        mr_error(NULL, "%s %s: expected %s, or the name of a mark or range", option, value,
                 MR_TIME_EXPECTED);
        return MR_EXIT_USAGE;
    }
    return mr_parse_time(option, value, t);
}

int mr_parse_at(const char* value, mr_when* w) {
    w->moment = MR_AT_TIME;
    w->at_arg = value;
    w->at_name = NULL;
    return parse_time_or_name("--at", value, &w->at, &w->at_name);
}

int mr_parse_range(char* value, const char* help, mr_when* w) {
    char name[64], input[64];
    usage_words(help, name, sizeof name, input, sizeof input);
    w->from_name = w->to_name = NULL;
    char* dots = strstr(value, "..");
    w->range_named = !dots;
    if (!dots) { // the name of a range: its begin..end
        int rc = parse_time_or_name("--range", value, &w->from, &w->from_name);
        if (!rc && !w->from_name)
            return mr_usage_error(help, "%s: --range %s: expected FROM..TO or a range's name", name,
                                  value);
        w->from_arg = w->to_arg = value;
        w->to_name = w->from_name;
        return rc;
    }
    *dots = 0;
    w->from_arg = *value ? value : NULL;
    w->to_arg = dots[2] ? dots + 2 : NULL;
    int rc = 0;
    if (w->from_arg)
        rc = parse_time_or_name("--range", w->from_arg, &w->from, &w->from_name);
    if (!rc && w->to_arg)
        rc = parse_time_or_name("--range", w->to_arg, &w->to, &w->to_name);
    return rc;
}

int mr_parse_thread(const char* value, const char* help, uint32_t* tid) {
    char* end;
    unsigned long v = strtoul(value, &end, 10);
    if (*end || end == value || v == 0 || v > UINT32_MAX) {
        char name[64], input[64];
        usage_words(help, name, sizeof name, input, sizeof input);
        return mr_usage_error(help, "%s: --thread: not a thread id: '%s'", name, value);
    }
    *tid = (uint32_t)v;
    return MR_EXIT_OK;
}

int mr_parse_metric(const char* value, const char* help, bool leaked, mr_metric* out) {
    static const struct {
        const char* name;
        mr_metric metric;
    } metrics[] = {{"live", MR_METRIC_LIVE_BYTES},
                   {"allocated", MR_METRIC_ALLOC_BYTES},
                   {"count", MR_METRIC_ALLOC_COUNT},
                   {"leaked", MR_METRIC_END_BYTES}};
    size_t n = sizeof metrics / sizeof *metrics - (leaked ? 0 : 1);
    for (size_t i = 0; i < n; i++)
        if (!strcmp(value, metrics[i].name)) {
            *out = metrics[i].metric;
            return MR_EXIT_OK;
        }
    char name[64], input[64];
    usage_words(help, name, sizeof name, input, sizeof input);
    return mr_usage_error(help, "%s: --metric: expected live, allocated%s count%s, got '%s'", name,
                          leaked ? "," : " or", leaked ? " or leaked" : "", value);
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
    mr_extent extent = mr_capture_extent(cap, heap);
    l->capture_end = extent.steps ? extent.end - 1 : extent.end;
    l->steps = extent.steps;
    mt_mark_query mq = {.heap = heap, .by_time = true};
    int rc = mt_capture_marks(cap, &mq, collect_mark, l);
    if (!rc)
        return MR_EXIT_OK;
    marks_free(l);
    *l = (mark_list){0};
    mr_error(path, "%s", rc == -ENOMEM ? "out of memory" : "cannot read its marks");
    return mr_exit_code(rc);
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
        snprintf(buf, len, "range %s..%s", mr_format_time(m->begin, steps, a, sizeof a),
                 mr_format_time(m->end, steps, b, sizeof b));
    else
        snprintf(buf, len, "mark at %s", mr_format_time(m->begin, steps, a, sizeof a));
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
        mr_error(NULL, "%s %s: %s has no marks or ranges (times take a unit: 20ms, 1.5s)", option,
                 value, c->path);
    else
        mr_error(NULL, "%s %s: no mark or range of that name in %s; it has %s", option, value,
                 c->path, list);
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
    mr_error(NULL, "%s %s: %zu marks or ranges are named '%s' in %s; pick one: %s", option, value,
             times, name, c->path, list);
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
            mr_error(NULL, "%s %s: '%.*s' was recorded %zu time%s: expected #1 to #%zu", option,
                     value, (int)base, name, base_times, base_times == 1 ? "" : "s", base_times);
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
        mr_error(NULL, "%s %s: '%.*s' is a %s, not a range: give FROM..TO", option, value, (int)len,
                 name, describe_mark(m, c->extent.steps, d, sizeof d));
        return MR_EXIT_USAGE;
    }
    *ts = m->range && role != ROLE_FROM && role != ROLE_RANGE_BEGIN ? m->end : m->begin;
    return MR_EXIT_OK;
}

int mr_query_for(const mr_when* w, const char* path, mt_capture* cap, mr_query* q, bool* steps) {
    *q = (mr_query)MR_QUERY_INIT(mr_capture_default_heap(cap));
    q->moment = w->moment;
    q->tid = w->tid;
    mr_extent extent = mr_capture_extent(cap, q->heap);
    *steps = extent.steps;
    mark_list marks = {0};
    int rc = 0;
    if ((w->at_name || w->from_name || w->to_name) && (rc = marks_load(cap, q->heap, path, &marks)))
        return rc;
    mark_ctx ctx = {&marks, path, extent};
    if (w->at_name)
        rc = mark_time(&ctx, "--at", w->at_arg, w->at_name, ROLE_AT, &q->at);
    else if (w->at_arg)
        rc = mr_time_in_capture("--at", w->at_arg, w->at, path, extent, &q->at);
    mark_role from_role = w->range_named ? ROLE_RANGE_BEGIN : ROLE_FROM;
    if (!rc && w->from_name)
        rc = mark_time(&ctx, "--range", w->from_arg, w->from_name, from_role, &q->from);
    else if (!rc && w->from_arg)
        rc = mr_time_in_capture("--range", w->from_arg, w->from, path, extent, &q->from);
    if (!rc && w->to_name)
        rc = mark_time(&ctx, "--range", w->to_arg, w->to_name, ROLE_TO, &q->to);
    else if (!rc && w->to_arg)
        rc = mr_time_in_capture("--range", w->to_arg, w->to, path, extent, &q->to);
    marks_free(&marks);
    if (!rc && q->from > q->to) {
        mr_error(NULL, "--range: FROM is after TO");
        rc = MR_EXIT_USAGE;
    }
    return rc;
}
