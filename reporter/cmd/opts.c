// SPDX-License-Identifier: MIT
// The command line's options every subcommand shares, their values (counts, times, marks'
// names) and the usage errors. Parses only: placing a time in a capture is when.c's.
#include "opts.h"

#include "cxx_names.h"
#include "messages.h"

#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

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
        mr_opts_usage_hint(help);
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

void mr_opts_usage_hint(const char* help) {
    // The usage lines: the first, and those indented under it.
    const char* end = strchr(help, '\n');
    while (end && end[1] == ' ' && end[2] == ' ')
        end = strchr(end + 1, '\n');
    char name[64], input[64];
    usage_words(help, name, sizeof name, input, sizeof input);
    fprintf(stderr, "%.*s\n('memreport %s --help' describes every option)\n",
            end ? (int)(end - help) : (int)strlen(help), help, name);
}

int mr_opts_usage_error(const char* help, const char* fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fputs("memreport: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    mr_opts_usage_hint(help);
    return MR_EXIT_USAGE;
}

const char* mr_opts_input(int argc, char** argv, const char* help) {
    if (optind == argc - 1)
        return argv[optind];
    char name[64], input[64];
    usage_words(help, name, sizeof name, input, sizeof input);
    if (optind >= argc)
        mr_opts_usage_error(help, "%s needs a %s", name, input);
    else
        mr_opts_usage_error(help, "%s takes one %s, got %d", name, input, argc - optind);
    return NULL;
}

int mr_opts_parse_top(const char* value, const char* help, size_t* out) {
    char* end;
    long long v = strtoll(value, &end, 10);
    if (*end || end == value || v < 0) {
        char name[64], input[64];
        usage_words(help, name, sizeof name, input, sizeof input);
        return mr_opts_usage_error(help, "%s: --top: not a count: '%s'", name, value);
    }
    *out = v == 0 ? SIZE_MAX : (size_t)v;
    return MR_EXIT_OK;
}

#define MR_TIME_EXPECTED                                                                           \
    "a time with its unit, ns, us, ms or s (e.g. 20ms, 1.5s), or step N for an imported NPU log"

int mr_opts_parse_time(const char* option, const char* value, mr_time* out) {
    const char* p = value;
    if (!strncmp(p, "step", 4)) {
        p += 4;
        while (*p == ' ')
            p++;
        char* end;
        errno = 0;
        long long v = *p >= '0' && *p <= '9' ? strtoll(p, &end, 10) : -1;
        if (v < 0 || *end || errno) {
            mr_messages_error(NULL, "%s %s: not a step: expected step N, N a whole number", option,
                              value);
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
        mr_messages_error(NULL, "%s %s: not a time: expected %s", option, value, MR_TIME_EXPECTED);
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
        mr_messages_error(NULL, "%s %s: no unit: expected %s", option, value, MR_TIME_EXPECTED);
        return MR_EXIT_USAGE;
    }
    if (!scale) {
        mr_messages_error(NULL, "%s %s: unknown unit '%s': expected %s", option, value, unit,
                          MR_TIME_EXPECTED);
        return MR_EXIT_USAGE;
    }
    double ns = strtod(p, NULL) * scale;
    if (!(ns < 9.2e18)) {
        mr_messages_error(NULL, "%s %s: too large a time", option, value);
        return MR_EXIT_USAGE;
    }
    *out = (mr_time){(int64_t)llround(ns), false};
    return MR_EXIT_OK;
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
        mr_messages_error(NULL, "%s %s: expected %s, or the name of a mark or range", option, value,
                          MR_TIME_EXPECTED);
        return MR_EXIT_USAGE;
    }
    return mr_opts_parse_time(option, value, t);
}

int mr_opts_parse_at(const char* value, mr_when* w) {
    w->moment = MR_AT_TIME;
    w->at_arg = value;
    w->at_name = NULL;
    return parse_time_or_name("--at", value, &w->at, &w->at_name);
}

int mr_opts_parse_range(char* value, const char* help, mr_when* w) {
    char name[64], input[64];
    usage_words(help, name, sizeof name, input, sizeof input);
    w->from_name = w->to_name = NULL;
    char* dots = strstr(value, "..");
    w->range_named = !dots;
    if (!dots) { // the name of a range: its begin..end
        int rc = parse_time_or_name("--range", value, &w->from, &w->from_name);
        if (!rc && !w->from_name)
            return mr_opts_usage_error(help, "%s: --range %s: expected FROM..TO or a range's name",
                                       name, value);
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

int mr_opts_parse_thread(const char* value, const char* help, uint32_t* tid) {
    char* end;
    unsigned long v = strtoul(value, &end, 10);
    if (*end || end == value || v == 0 || v > UINT32_MAX) {
        char name[64], input[64];
        usage_words(help, name, sizeof name, input, sizeof input);
        return mr_opts_usage_error(help, "%s: --thread: not a thread id: '%s'", name, value);
    }
    *tid = (uint32_t)v;
    return MR_EXIT_OK;
}

int mr_opts_parse_metric(const char* value, const char* help, bool leaked, mr_metric* out) {
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
    return mr_opts_usage_error(help, "%s: --metric: expected live, allocated%s count%s, got '%s'",
                               name, leaked ? "," : " or", leaked ? " or leaked" : "", value);
}
