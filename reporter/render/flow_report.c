// SPDX-License-Identifier: MIT
// The flow report (flow_report.h): built as one JSON document; DOT is printed from it, and
// SVG is that DOT piped through `dot -Tsvg` into the output file. Names in DOT go in
// HTML-like labels: escaped as every report escapes them (escape.h: invalid bytes and
// control characters as \xNN), then as HTML (& < > " ' and the backslash, which dot
// would read as an escape). Function names are shown as other reports show them
// (cxx_names.h); a box with a name shortened or cut has its lines whole in its tooltip.
#include "flow_report.h"

#include "cxx_names.h"
#include "escape.h"
#include "json.h"
#include "messages.h"
#include "output_file.h"

#include "memtrace/units.h"

#include <errno.h>
#include <math.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;

// ---- JSON

static json_t* u64_array(const uint64_t* v, size_t n) {
    json_t* a = json_array();
    for (size_t i = 0; i < n; i++)
        json_array_append_new(a, json_integer((json_int_t)v[i]));
    return a;
}

static json_t* line_json(const mr_flow_line* l) {
    json_t* o = json_object();
    json_object_set_new(o, "function", mr_json_bytes(l->function));
    json_object_set_new(o, "file", mr_json_bytes(l->file));
    json_object_set_new(o, "line", l->line ? json_integer(l->line) : json_null());
    return o;
}

static json_t* node_json(const mr_flow* g, size_t i) {
    const mr_flow_box* b = &g->boxes[i];
    json_t *o = json_object(), *lines = json_array(), *pct = json_array();
    json_object_set_new(o, "id", json_integer((json_int_t)i));
    for (size_t k = 0; k < b->nlines; k++)
        json_array_append_new(lines, line_json(&g->lines[b->lines[k]]));
    json_object_set_new(o, "lines", lines);
    json_object_set_new(o, "local", u64_array(b->local, g->nt));
    json_object_set_new(o, "cumulative", u64_array(b->cumulative, g->nt));
    for (size_t t = 0; t < g->nt; t++)
        json_array_append_new(
            pct,
            json_real(g->total[t] ? 100.0 * (double)b->cumulative[t] / (double)g->total[t] : 0.0));
    json_object_set_new(o, "percent", pct);
    return o;
}

static json_t* flow_json(const mr_flow_view* v) {
    const mr_flow* g = v->graph;
    json_t *o = json_object(), *moments = json_array(), *nodes = json_array(),
           *edges = json_array();
    json_object_set_new(o, "capture", mr_json_bytes(v->capture));
    json_object_set_new(o, "time_unit", json_string(v->steps ? "step" : "ns"));
    json_object_set_new(o, "min_share_percent", json_real(100.0 * v->min_share));
    for (size_t t = 0; t < g->nt; t++) {
        json_t* m = json_object();
        json_object_set_new(m, "at", mr_json_bytes(v->moments[t].name));
        json_object_set_new(m, "ts", json_integer((json_int_t)v->moments[t].ts));
        json_object_set_new(m, "total", json_integer((json_int_t)g->total[t]));
        json_object_set_new(m, "hidden_local", json_integer((json_int_t)g->hidden_local[t]));
        json_array_append_new(moments, m);
    }
    json_object_set_new(o, "moments", moments);
    for (size_t i = 0; i < g->nboxes; i++)
        json_array_append_new(nodes, node_json(g, i));
    json_object_set_new(o, "nodes", nodes);
    for (size_t i = 0; i < g->nlinks; i++) {
        json_t* e = json_object();
        json_object_set_new(e, "from", json_integer(g->links[i].from));
        json_object_set_new(e, "to", json_integer(g->links[i].to));
        json_object_set_new(e, "bytes", u64_array(g->links[i].bytes, g->nt));
        json_array_append_new(edges, e);
    }
    json_object_set_new(o, "edges", edges);
    return o;
}

// ---- DOT

#define U64(obj) ((uint64_t)json_integer_value(obj))

// Graphviz refuses a label or a quoted string of over 16384 bytes (its lexer's buffer): a
// name longer than LABEL_NAME_MAX is shown as its head and tail around an ellipsis, and kept
// whole in its node's tooltip, written as quoted strings of at most DOT_PART_MAX bytes
// joined by DOT's '+'.
#define LABEL_NAME_MAX 1000
#define DOT_PART_MAX 8000

// The start of the UTF-8 character holding s[i].
static size_t char_start(const char* s, size_t i) {
    while (i > 0 && ((unsigned char)s[i] & 0xc0) == 0x80)
        i--;
    return i;
}

static void put_html_bytes(FILE* out, const char* s, size_t n) {
    for (const char* p = s; p < s + n; p++) {
        switch (*p) {
        case '&':
            fputs("&amp;", out);
            break;
        case '<':
            fputs("&lt;", out);
            break;
        case '>':
            fputs("&gt;", out);
            break;
        case '"':
            fputs("&quot;", out);
            break;
        case '\'':
            fputs("&#39;", out);
            break;
        case '\\': // dot reads \\ in a label as one backslash
            fputs("&#92;", out);
            break;
        default:
            fputc(*p, out);
        }
    }
}

// A string from the document (valid UTF-8) for an HTML-like label. Returns true when it was
// too long and only its head and tail were written.
static bool put_html(FILE* out, const char* s) {
    char* t = mr_escape(s, strlen(s), MR_ESCAPE_TERMINAL);
    const char* v = t ? t : "?";
    size_t n = strlen(v);
    bool elided = n > LABEL_NAME_MAX;
    if (elided) {
        size_t head = char_start(v, LABEL_NAME_MAX / 2);
        size_t tail = char_start(v, n - LABEL_NAME_MAX / 2);
        put_html_bytes(out, v, head);
        fputs("\xe2\x80\xa6", out); // U+2026, an ellipsis
        put_html_bytes(out, v + tail, n - tail);
    } else {
        put_html_bytes(out, v, n);
    }
    free(t);
    return elided;
}

// A DOT quoted string written in parts: "..." + "..." (see DOT_PART_MAX).
typedef struct dot_string {
    FILE* out;
    size_t part; // bytes in the current part
} dot_string;

// Appends UTF-8 text, cut between characters only.
static void dot_string_put(dot_string* d, const char* s) {
    for (; *s; s++) {
        if (d->part >= DOT_PART_MAX && ((unsigned char)*s & 0xc0) != 0x80) {
            fputs("\" + \"", d->out);
            d->part = 0;
        }
        if (*s == '"' || *s == '\\') {
            fputc('\\', d->out);
            d->part++;
        }
        fputc(*s, d->out);
        d->part++;
    }
}

// A name from the document for dot_string_put, escaped as every report escapes it.
static void dot_string_name(dot_string* d, const char* s) {
    char* t = mr_escape(s, strlen(s), MR_ESCAPE_TERMINAL);
    dot_string_put(d, t ? t : "?");
    free(t);
}

// From blue (hue 240) through purple to red (hue 360) as the share grows from 0 to 1.
static void share_color(double share, char buf[8]) {
    double h = (240.0 + 120.0 * (share < 0   ? 0
                                 : share > 1 ? 1
                                             : share)) /
               60.0,
           s = 0.55, val = 0.95;
    int i = (int)floor(h) % 6;
    double f = h - floor(h), p = val * (1 - s), q = val * (1 - s * f), u = val * (1 - s * (1 - f));
    double rgb[6][3] = {{val, u, p}, {q, val, p}, {p, val, u},
                        {p, q, val}, {u, p, val}, {val, p, q}};
    snprintf(buf, 8, "#%02x%02x%02x", (int)(rgb[i][0] * 255), (int)(rgb[i][1] * 255),
             (int)(rgb[i][2] * 255));
}

static void moment_text(json_t* doc, json_t* m, char* buf, size_t len) {
    char b[32];
    const char* unit = json_string_value(json_object_get(doc, "time_unit"));
    if (!strcmp(unit, "step"))
        snprintf(b, sizeof b, "step %lld", (long long)json_integer_value(json_object_get(m, "ts")));
    else
        mt_units_format_duration((int64_t)json_integer_value(json_object_get(m, "ts")), b,
                                 sizeof b);
    char total[32];
    mt_units_format_bytes(U64(json_object_get(m, "total")), total, sizeof total);
    snprintf(buf, len, " (%s): %s live", b, total);
}

// The graph's title: the capture, then what each row of numbers is.
static void print_legend(FILE* out, json_t* doc) {
    json_t *moments = json_object_get(doc, "moments"), *m;
    size_t t;
    fputs("  graph [labelloc=t, fontsize=16, label=<", out);
    put_html(out, json_string_value(json_object_get(doc, "capture")));
    fputs("<br/>local / cumulative = share of the live bytes", out);
    json_array_foreach(moments, t, m) {
        char buf[96];
        moment_text(doc, m, buf, sizeof buf);
        fprintf(out, "<br/>%s", json_array_size(moments) > 1 ? "" : "at ");
        if (json_array_size(moments) > 1)
            fprintf(out, "row %zu: ", t + 1);
        put_html(out, json_string_value(json_object_get(m, "at")));
        put_html(out, buf);
    }
    fprintf(out, "<br/>hidden: lines below %.3g%% at every moment>];\n",
            json_real_value(json_object_get(doc, "min_share_percent")));
}

// The node's lines whole, one a line, for a node whose label shows a name shortened or
// elided.
static void put_tooltip(FILE* out, json_t* lines) {
    json_t* l;
    size_t k;
    dot_string d = {out, 0};
    fputs(", tooltip=\"", out);
    json_array_foreach(lines, k, l) {
        if (k)
            dot_string_put(&d, "\n"); // a real newline: dot keeps it in the tooltip
        dot_string_name(&d, json_string_value(json_object_get(l, "function")));
        json_t* file = json_object_get(l, "file");
        if (json_is_string(file)) {
            char line[32] = "";
            if (json_is_integer(json_object_get(l, "line")))
                snprintf(line, sizeof line, ":%lld",
                         (long long)json_integer_value(json_object_get(l, "line")));
            dot_string_put(&d, " (");
            dot_string_name(&d, json_string_value(file));
            dot_string_put(&d, line);
            dot_string_put(&d, ")");
        }
    }
    fputc('"', out);
}

static void print_node(FILE* out, json_t* n) {
    json_t *lines = json_object_get(n, "lines"), *l;
    json_t *local = json_object_get(n, "local"), *cum = json_object_get(n, "cumulative");
    json_t* pct = json_object_get(n, "percent");
    size_t k;
    bool elided = false;
    fprintf(out, "  n%lld [label=<<table border=\"1\" cellborder=\"0\" cellspacing=\"0\">",
            (long long)json_integer_value(json_object_get(n, "id")));
    json_array_foreach(lines, k, l) {
        fputs("<tr><td align=\"left\">", out);
        const char* fn = json_string_value(json_object_get(l, "function"));
        char* shortened = fn ? mr_cxx_names_display_dup(fn) : NULL;
        elided |= shortened && strcmp(shortened, fn) != 0;
        elided |= put_html(out, shortened ? shortened : fn);
        free(shortened);
        json_t* file = json_object_get(l, "file");
        if (json_is_string(file)) {
            fputs(" (", out);
            elided |= put_html(out, json_string_value(file));
            if (json_is_integer(json_object_get(l, "line")))
                fprintf(out, ":%lld", (long long)json_integer_value(json_object_get(l, "line")));
            fputc(')', out);
        }
        fputs("</td></tr>", out);
    }
    for (size_t t = 0; t < json_array_size(local); t++) {
        char a[32], b[32], color[8];
        double p = json_real_value(json_array_get(pct, t));
        share_color(p / 100.0, color);
        fprintf(out, "<tr><td bgcolor=\"%s\">%s / %s = %.1f%%</td></tr>", color,
                mt_units_format_bytes(U64(json_array_get(local, t)), a, sizeof a),
                mt_units_format_bytes(U64(json_array_get(cum, t)), b, sizeof b), p);
    }
    fputs("</table>>", out);
    if (elided)
        put_tooltip(out, lines);
    fputs("];\n", out);
}

static void print_edge(FILE* out, json_t* e, json_t* moments) {
    json_t* bytes = json_object_get(e, "bytes");
    double share = 0;
    fprintf(out, "  n%lld -> n%lld [label=\"",
            (long long)json_integer_value(json_object_get(e, "from")),
            (long long)json_integer_value(json_object_get(e, "to")));
    for (size_t t = 0; t < json_array_size(bytes); t++) {
        char a[32];
        uint64_t v = U64(json_array_get(bytes, t));
        uint64_t total = U64(json_object_get(json_array_get(moments, t), "total"));
        double s = total ? (double)v / (double)total : 0;
        share = s > share ? s : share;
        fprintf(out, "%s%s", t ? " / " : "", mt_units_format_bytes(v, a, sizeof a));
    }
    fprintf(out, "\", penwidth=%.2f];\n", 1.0 + 5.0 * share);
}

static void print_dot(FILE* out, json_t* doc) {
    json_t *nodes = json_object_get(doc, "nodes"), *edges = json_object_get(doc, "edges"), *x;
    size_t i;
    fputs("digraph flow {\n", out);
    print_legend(out, doc);
    fputs("  node [shape=plain, fontsize=12];\n  edge [fontsize=10];\n", out);
    json_array_foreach(nodes, i, x) print_node(out, x);
    json_array_foreach(edges, i, x) print_edge(out, x, json_object_get(doc, "moments"));
    fputs("}\n", out);
}

#undef U64

// ---- SVG

bool mr_flow_report_have_dot(void) {
    const char* path = getenv("PATH");
    if (!path)
        path = "/usr/bin:/bin";
    while (*path) {
        size_t n = strcspn(path, ":");
        char file[4096];
        snprintf(file, sizeof file, "%.*s/dot", (int)n, n ? path : ".");
        if (access(file, X_OK) == 0)
            return true;
        path += n + (path[n] == ':');
    }
    return false;
}

// Feeds the DOT text to `dot -Tsvg`, whose output goes to out. Returns 0 or an exit code.
static int run_dot(const char* text, size_t len, FILE* out) {
    int fds[2];
    if (pipe(fds)) {
        mr_messages_error("flow", "cannot run dot: %s", strerror(errno));
        return MR_EXIT_IO;
    }
    fflush(out);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, fds[0], 0);
    posix_spawn_file_actions_adddup2(&fa, fileno(out), 1);
    posix_spawn_file_actions_addclose(&fa, fds[1]);
    char* argv[] = {"dot", "-Tsvg", NULL};
    pid_t pid;
    int e = posix_spawnp(&pid, "dot", &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    close(fds[0]);
    if (e) {
        close(fds[1]);
        if (e == ENOENT)
            mr_messages_error("flow", MR_FLOW_NO_DOT);
        else
            mr_messages_error("flow", "cannot run dot: %s", strerror(e));
        return MR_EXIT_IO;
    }
    // dot may stop reading early (on a syntax error): a write then fails with EPIPE
    // instead of killing memreport.
    void (*old)(int) = signal(SIGPIPE, SIG_IGN);
    for (size_t done = 0; done < len;) {
        ssize_t w = write(fds[1], text + done, len - done);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            break;
        done += (size_t)w;
    }
    close(fds[1]);
    signal(SIGPIPE, old);
    int status;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        mr_messages_error("flow", "dot failed (%s %d)", WIFEXITED(status) ? "exit" : "signal",
                          WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
        return MR_EXIT_IO;
    }
    return MR_EXIT_OK;
}

static int write_svg(const mr_report_to* to, json_t* doc) {
    char* text = NULL;
    size_t len = 0;
    FILE* mem = open_memstream(&text, &len);
    if (!mem) {
        mr_messages_error("flow", "out of memory");
        return MR_EXIT_IO;
    }
    print_dot(mem, doc);
    fclose(mem);
    mr_output_file out;
    int rc = mr_output_file_open(&out, to->output, to->force);
    if (!rc) {
        rc = run_dot(text, len, out.fp);
        if (rc)
            mr_output_file_abort(&out);
        else
            rc = mr_output_file_commit(&out);
    }
    free(text);
    return rc;
}

int mr_flow_report_write(const mr_report_to* to, const mr_flow_view* v) {
    json_t* doc = flow_json(v);
    if (!doc) {
        mr_messages_error(v->capture, "out of memory");
        return MR_EXIT_IO;
    }
    int rc = v->svg && !to->json ? write_svg(to, doc) : mr_json_write_report(to, doc, print_dot);
    json_decref(doc);
    return rc;
}
