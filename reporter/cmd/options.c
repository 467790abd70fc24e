// SPDX-License-Identifier: MIT
// The command layer's shared plumbing: options, usage errors, times on the command line,
// opening the input, writing a report.
#include "options.h"

#include "messages.h"
#include "output.h"
#include "symbols.h"

#include "memtrace/units.h"

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
    if (rc == 0)
        return MR_EXIT_OK;
    mr_error(path, "%s", err);
    return (rc == -ENOENT || rc == -EACCES || rc == -EIO) ? MR_EXIT_IO : MR_EXIT_BAD_INPUT;
}

int mr_open_capture_symbols(const char* path, mt_capture** cap, mr_symbols** sym) {
    int rc = mr_open_capture(path, cap);
    if (rc)
        return rc;
    if ((rc = mr_symbols_load(*cap, sym))) {
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

int mr_write_report(const mr_opts* o, json_t* report, void (*print_text)(FILE*, json_t*)) {
    mr_report_to to = mr_opts_report_to(o);
    return mr_json_write_report(&to, report, print_text);
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
    return !e ? MR_EXIT_OK : e == -ENOMEM ? MR_EXIT_IO : MR_EXIT_BAD_INPUT;
}

int mr_parse_at(const char* value, mr_when* w) {
    w->moment = MR_AT_TIME;
    w->at_arg = value;
    return mr_parse_time("--at", value, &w->at);
}

int mr_parse_range(char* value, const char* help, mr_when* w) {
    char name[64], input[64];
    usage_words(help, name, sizeof name, input, sizeof input);
    char* dots = strstr(value, "..");
    if (!dots)
        return mr_usage_error(help, "%s: --range %s: expected FROM..TO", name, value);
    *dots = 0;
    w->from_arg = *value ? value : NULL;
    w->to_arg = dots[2] ? dots + 2 : NULL;
    int rc = 0;
    if (w->from_arg)
        rc = mr_parse_time("--range", w->from_arg, &w->from);
    if (!rc && w->to_arg)
        rc = mr_parse_time("--range", w->to_arg, &w->to);
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

int mr_query_for(const mr_when* w, const char* path, mt_capture* cap, mr_query* q, bool* steps) {
    *q = (mr_query)MR_QUERY_INIT(mr_capture_default_heap(cap));
    q->moment = w->moment;
    q->tid = w->tid;
    mr_extent extent = mr_capture_extent(cap, q->heap);
    *steps = extent.steps;
    int rc = 0;
    if (w->at_arg)
        rc = mr_time_in_capture("--at", w->at_arg, w->at, path, extent, &q->at);
    if (!rc && w->from_arg)
        rc = mr_time_in_capture("--range", w->from_arg, w->from, path, extent, &q->from);
    if (!rc && w->to_arg)
        rc = mr_time_in_capture("--range", w->to_arg, w->to, path, extent, &q->to);
    if (!rc && q->from > q->to) {
        mr_error(NULL, "--range: FROM is after TO");
        rc = MR_EXIT_USAGE;
    }
    return rc;
}
