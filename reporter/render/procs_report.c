// SPDX-License-Identifier: MIT
// The reports over a process tree's captures (procs_report.h): one JSON document, printed
// from it as text or as it is.
#include "procs_report.h"

#include "escape.h"
#include "extent.h"
#include "json.h"

#include "memtrace/units.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// The command as an array of strings: the capture's cmdline, else [exe], else [].
static json_t* command_of(const mr_process* p) {
    json_t* argv = p->cmdline ? mr_json_loads_bytes(p->cmdline) : NULL;
    if (json_is_array(argv) && json_array_size(argv))
        return argv;
    json_decref(argv);
    argv = json_array();
    if (p->exe)
        json_array_append_new(argv, mr_json_bytes(p->exe));
    return argv;
}

char* mr_procs_report_label(const mr_process* p) {
    json_t* argv = command_of(p);
    char line[256] = "";
    size_t len = 0, i;
    json_t* a;
    json_array_foreach(argv, i, a) {
        if (len < 200)
            len += (size_t)snprintf(line + len, sizeof line - len, "%s%s", i ? " " : "",
                                    json_string_value(a));
    }
    json_decref(argv);
    if (len >= sizeof line)
        len = sizeof line - 1;
    if (!line[0])
        len = (size_t)snprintf(line, sizeof line, "%s", p->name);
    char* label;
    // snprintf may have cut a character in two: made valid again.
    char* text = mr_escape(line, len, MR_ESCAPE_UTF8);
    if (!text || asprintf(&label, "%s (pid %lld)", text, (long long)p->pid) < 0)
        label = NULL;
    free(text);
    return label;
}

// Bytes of a program's file name and of the arguments that tell it apart, at most, in a
// legend's name (a laptop's legend shows about 40 characters of one).
#define NAME_PROG 16
#define NAME_ARGS 22
#define ELLIPSIS "\xe2\x80\xa6"

static const char* file_name(const char* path) {
    const char* slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

static size_t char_start(const char* s, size_t i) {
    while (i > 0 && ((unsigned char)s[i] & 0xc0) == 0x80)
        i--;
    return i;
}

// s cut to about max bytes, keeping what differs from its nearest sibling, which starts at
// byte at (0: not known, then its start and end are kept): the path component or word
// holding that byte onwards, after as much of the start as fits, "run-3/data.csv" of
// "--input=/srv/a-long-path/run-3/data.csv". Malloc'd, or NULL.
static char* elide(const char* s, size_t at, size_t max) {
    size_t n = strlen(s);
    char* out = NULL;
    if (n <= max)
        return strdup(s);
    if (at < n) { // back to the start of its word or path component, if near
        size_t w = at;
        while (w > 0 && at - w < 12 && !strchr(" /=,:", s[w - 1]))
            w--;
        at = char_start(s, w > 0 && !strchr(" /=,:", s[w - 1]) ? at : w);
    }
    if (at == 0 || at >= n) {
        size_t head = char_start(s, max / 2), tail = n - (max - head);
        while (tail < n && ((unsigned char)s[tail] & 0xc0) == 0x80)
            tail++;
        return asprintf(&out, "%.*s" ELLIPSIS "%s", (int)head, s, s + tail) < 0 ? NULL : out;
    }
    if (n - at > max) { // the difference onwards is long: its first max bytes
        size_t end = char_start(s, at + max);
        return asprintf(&out, ELLIPSIS "%.*s" ELLIPSIS, (int)(end - at), s + at) < 0 ? NULL : out;
    }
    size_t head = char_start(s, max - (n - at));
    return asprintf(&out, "%.*s" ELLIPSIS "%s", head < 4 ? 0 : (int)head, s, s + at) < 0 ? NULL
                                                                                         : out;
}

typedef struct {
    json_t* argv;
    const char* prog;
    char* args;    // the arguments that tell it apart, joined by spaces
    size_t common; // bytes of args it shares at the start with the most alike sibling
} proc_words;

static int cmp_str(const void* a, const void* b) {
    return strcmp(*(const char* const*)a, *(const char* const*)b);
}

static bool seen_before(json_t* argv, size_t k) {
    for (size_t m = 1; m < k; m++)
        if (!strcmp(json_string_value(json_array_get(argv, m)),
                    json_string_value(json_array_get(argv, k))))
            return true;
    return false;
}

// w[i].args for the processes in group g (ng of them, the same program): the arguments not
// every one of them has (each once, in order), else all of its arguments. The arguments are
// counted over the group through one sorted list, so a make of many compilers costs no
// more than sorting their words.
static int distinguishing_args(proc_words* w, const size_t* g, size_t ng) {
    size_t nt = 0, k, at = 0;
    for (size_t m = 0; m < ng; m++)
        nt += json_array_size(w[g[m]].argv);
    const char** words = malloc((nt + 1) * sizeof *words);
    if (!words)
        return -ENOMEM;
    for (size_t m = 0; m < ng; m++)
        for (k = 1; k < json_array_size(w[g[m]].argv); k++)
            if (!seen_before(w[g[m]].argv, k))
                words[at++] = json_string_value(json_array_get(w[g[m]].argv, k));
    qsort(words, at, sizeof *words, cmp_str);
    int rc = 0;
    for (size_t m = 0; rc == 0 && m < ng; m++) {
        json_t* argv = w[g[m]].argv;
        size_t len = 0, cap = 1;
        for (k = 1; k < json_array_size(argv); k++)
            cap += strlen(json_string_value(json_array_get(argv, k))) + 1;
        char* line = calloc(cap, 1);
        if (!line) {
            rc = -ENOMEM;
            break;
        }
        for (int pass = 0; pass < 2 && !len; pass++)
            for (k = 1; k < json_array_size(argv); k++) {
                const char* a = json_string_value(json_array_get(argv, k));
                const char** first = bsearch(&a, words, at, sizeof *words, cmp_str);
                while (first && first > words && !strcmp(first[-1], a))
                    first--;
                size_t count = 0;
                while (first && first + count < words + at && !strcmp(first[count], a))
                    count++;
                if (seen_before(argv, k) || (pass == 0 && count >= ng))
                    continue;
                len += (size_t)snprintf(line + len, cap - len, "%s%s", len ? " " : "", a);
            }
        w[g[m]].args = line;
    }
    free(words);
    return rc;
}

static size_t common_start(const char* a, const char* b) {
    size_t n = 0;
    while (a[n] && a[n] == b[n])
        n++;
    return n;
}

int mr_procs_report_legend_names(const mr_capture_set* s, char** prog, char** args) {
    proc_words* w = calloc(s->n + 1, sizeof *w);
    size_t* g = calloc(s->n + 1, sizeof *g);
    bool* done = calloc(s->n + 1, sizeof *done);
    int rc = w && g && done ? 0 : -ENOMEM;
    for (size_t i = 0; rc == 0 && i < s->n; i++) {
        prog[i] = args[i] = NULL;
        w[i].argv = command_of(&s->procs[i]);
        const char* argv0 = json_string_value(json_array_get(w[i].argv, 0));
        w[i].prog = file_name(argv0 ? argv0 : s->procs[i].name);
    }
    for (size_t i = 0; rc == 0 && i < s->n; i++) {
        if (done[i])
            continue;
        size_t ng = 0;
        for (size_t j = i; j < s->n; j++)
            if (!done[j] && !strcmp(w[i].prog, w[j].prog)) {
                g[ng++] = j;
                done[j] = true;
            }
        if ((rc = distinguishing_args(w, g, ng)))
            break;
        for (size_t m = 0; m < ng; m++)
            for (size_t o = 0; o < ng; o++) {
                size_t c = o == m ? 0 : common_start(w[g[m]].args, w[g[o]].args);
                if (c > w[g[m]].common && w[g[m]].args[c])
                    w[g[m]].common = c;
            }
    }
    for (size_t i = 0; rc == 0 && i < s->n; i++) {
        char* p = elide(w[i].prog, 0, NAME_PROG);
        char* a = elide(w[i].args, w[i].common, NAME_ARGS);
        // A cut or the command itself may leave invalid UTF-8: made valid.
        if (!p || !a || !(prog[i] = mr_escape(p, strlen(p), MR_ESCAPE_UTF8)) ||
            !(args[i] = mr_escape(a, strlen(a), MR_ESCAPE_UTF8)))
            rc = -ENOMEM;
        free(p);
        free(a);
    }
    for (size_t i = 0; w && i < s->n; i++) {
        json_decref(w[i].argv);
        free(w[i].args);
        if (rc) {
            free(prog[i]);
            free(args[i]);
            prog[i] = args[i] = NULL;
        }
    }
    free(w);
    free(g);
    free(done);
    return rc;
}

#define SET_U(o, k, v) json_object_set_new(o, k, json_integer((json_int_t)(v)))

static json_t* process_object(const mr_capture_set* s, size_t i, const mr_proc_numbers* n) {
    const mr_process* p = &s->procs[i];
    json_t* o = json_object();
    json_object_set_new(o, "capture", mr_json_bytes(p->name));
    json_object_set_new(o, "status", json_string(n->truncated ? "truncated" : "complete"));
    SET_U(o, "pid", p->pid);
    SET_U(o, "ppid", p->ppid);
    json_object_set_new(o, "parent",
                        p->parent == MR_PROCESS_ROOT ? json_null()
                                                     : mr_json_bytes(s->procs[p->parent].name));
    SET_U(o, "depth", p->depth);
    json_object_set_new(o, "command", command_of(p));
    SET_U(o, "duration_ns", n->duration_ns);
    SET_U(o, "events", n->events);
    SET_U(o, "allocations", n->allocations);
    SET_U(o, "frees", n->frees);
    SET_U(o, "bytes_allocated", n->bytes_allocated);
    SET_U(o, "peak_bytes", n->peak_bytes);
    SET_U(o, "peak_time_ns", n->peak_ts);
    SET_U(o, "at_joint_peak_bytes", n->at_joint_peak);
    SET_U(o, "leaked_bytes", n->leaked_bytes);
    SET_U(o, "leaked_allocations", n->leaked_allocations);
    return o;
}

// Counts and bytes summed over the processes; the peak is the most they held at one moment,
// and the sum of each process's own peak (reached at different moments) is named so.
static json_t* total_object(const mr_capture_set* s, const mr_proc_numbers* nums,
                            const mr_procs_moment* joint) {
    mr_proc_numbers t = {0};
    size_t truncated = 0;
    for (size_t i = 0; i < s->n; i++) {
        const mr_proc_numbers* n = &nums[i];
        truncated += n->truncated;
        t.events += n->events;
        t.allocations += n->allocations;
        t.frees += n->frees;
        t.bytes_allocated += n->bytes_allocated;
        t.peak_bytes += n->peak_bytes;
        t.leaked_bytes += n->leaked_bytes;
        t.leaked_allocations += n->leaked_allocations;
    }
    json_t* o = json_object();
    SET_U(o, "processes", s->n);
    SET_U(o, "truncated", truncated);
    SET_U(o, "events", t.events);
    SET_U(o, "allocations", t.allocations);
    SET_U(o, "frees", t.frees);
    SET_U(o, "bytes_allocated", t.bytes_allocated);
    SET_U(o, "peak_bytes", joint->peak);
    SET_U(o, "peak_time_ns", (uint64_t)(joint->ts > 0 ? joint->ts : 0));
    SET_U(o, "sum_of_peaks_bytes", t.peak_bytes);
    SET_U(o, "leaked_bytes", t.leaked_bytes);
    SET_U(o, "leaked_allocations", t.leaked_allocations);
    return o;
}

#define GET_U(o, k) (unsigned long long)json_integer_value(json_object_get(o, k))

static void print_text(FILE* out, json_t* r) {
    json_t* procs = json_object_get(r, "processes");
    json_t* total = json_object_get(r, "total");
    char a[32], b[32], c[32];
    fprintf(out, "processes:    %llu\n", GET_U(total, "processes"));
    fprintf(out, "%-8s %-8s %10s %12s %10s %10s  %s\n", "pid", "ppid", "events", "allocated",
            "peak", "leaked", "command");
    size_t i, k;
    json_t *p, *arg;
    json_array_foreach(procs, i, p) {
        fprintf(out, "%-8llu %-8llu %10llu %12s %10s %10s  %*s", GET_U(p, "pid"), GET_U(p, "ppid"),
                GET_U(p, "events"), mt_units_format_bytes(GET_U(p, "bytes_allocated"), a, sizeof a),
                mt_units_format_bytes(GET_U(p, "peak_bytes"), b, sizeof b),
                mt_units_format_bytes(GET_U(p, "leaked_bytes"), c, sizeof c),
                2 * (int)GET_U(p, "depth"), "");
        json_array_foreach(json_object_get(p, "command"), k, arg) {
            if (k)
                fputc(' ', out);
            mr_escape_fputs_text(out, json_string_value(arg));
        }
        fputs(" [", out);
        mr_escape_fputs_text(out, json_string_value(json_object_get(p, "capture")));
        fprintf(out, "%s]\n",
                strcmp(json_string_value(json_object_get(p, "status")), "complete") ? ", truncated"
                                                                                    : "");
    }
    fprintf(out, "total:        %llu events, %llu allocations (%s), %llu frees\n",
            GET_U(total, "events"), GET_U(total, "allocations"),
            mt_units_format_bytes(GET_U(total, "bytes_allocated"), a, sizeof a),
            GET_U(total, "frees"));
    char when[32];
    mr_extent_format_time((int64_t)GET_U(total, "peak_time_ns"), false, when, sizeof when);
    fprintf(out, "peak:         %s at %s (the most the processes held at one moment)\n",
            mt_units_format_bytes(GET_U(total, "peak_bytes"), a, sizeof a), when);
    fprintf(out, "sum of peaks: %s (each process's own peak, reached at different moments)\n",
            mt_units_format_bytes(GET_U(total, "sum_of_peaks_bytes"), a, sizeof a));
    fprintf(out, "leaked:       %s in %llu blocks\n",
            mt_units_format_bytes(GET_U(total, "leaked_bytes"), a, sizeof a),
            GET_U(total, "leaked_allocations"));
    if (GET_U(total, "truncated"))
        fprintf(out,
                "truncated:    %llu captures (their process was killed or the tracer "
                "failed)\n",
                GET_U(total, "truncated"));
}

int mr_procs_report_summary_write(const mr_report_to* to, const mr_capture_set* s,
                                  const mr_proc_numbers* nums, const mr_procs_moment* joint) {
    json_t* r = json_object();
    json_t* procs = json_array();
    for (size_t i = 0; i < s->n; i++)
        json_array_append_new(procs, process_object(s, i, &nums[i]));
    json_object_set_new(r, "processes", procs);
    json_object_set_new(r, "total", total_object(s, nums, joint));
    int rc = mr_json_write_report(to, r, print_text);
    json_decref(r);
    return rc;
}
