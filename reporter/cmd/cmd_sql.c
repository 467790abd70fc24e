// SPDX-License-Identifier: MIT
// memreport sql: SQL over a capture (memtrace/sql.h: its tables plus events, allocations
// and stacks), from the command line, a script on stdin or an interactive prompt, printed
// as an aligned table, CSV (RFC 4180) or JSON. The capture is opened read-only.
#include "capture_set.h"
#include "cmd.h"
#include "escape.h"
#include "opts.h"
#include "output_file.h"
#include "sql_json.h"

#include "memtrace/sql.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char sql_help[] =
    "usage: memreport sql CAPTURE [QUERY] [--csv | --json] [-o FILE] [-f] [--timeout SECONDS]\n"
    "                     [--max-memory MIB]\n"
    "Runs SQL over a capture, opened read-only. Besides the capture's tables:\n"
    "  events(seq, ts, kind, heap, tid, addr, size, callsite)  every event, in seq order;\n"
    "      conditions on seq, ts and heap decode only the chunks that can match, and\n"
    "      count(*) reads only the chunks' headers\n"
    "  allocations(seq, ts, size, tid, callsite, freed_ts, freed_tid, addr, heap)  each\n"
    "      allocation with its free (freed_ts NULL: live at the end, a leak)\n"
    "  stacks(callsite, depth, function, file, line, module)  the frames of each callsite,\n"
    "      depth 0 the allocating function; conditions on callsite walk only those\n"
    "Without QUERY, reads statements from stdin: on a terminal, a prompt that runs each\n"
    "statement once it ends with ';' (.tables, .schema, .quit); otherwise a script that\n"
    "stops at the first error.\n"
    "  --csv          CSV (RFC 4180) with a header line, instead of an aligned table\n"
    "  --json         a JSON array of objects per statement\n"
    "  -o, --output   write to FILE instead of stdout\n"
    "  -f, --force    overwrite FILE if it exists\n"
    "  --timeout SECONDS  stop a statement that runs longer (default 60; 0: never)\n"
    "  --max-memory MIB   stop a statement when SQLite holds more memory (default: half\n"
    "                 of the machine's; 0: no limit)\n"
    "A statement SQLite refuses (syntax, unknown table, any write) exits with 2. Statements\n"
    "may only read, as with sqlite3 --safe and stricter: anything else (ATTACH, VACUUM INTO,\n"
    "CREATE, a pragma that sets something) and any function but SQLite's core, date, math\n"
    "and JSON ones (no load_extension, no fts3_tokenizer) is refused, exit 2. A statement\n"
    "stopped by --timeout exits with 2, by --max-memory with 3.\n"
    "One capture only: a directory of a process tree's captures (memtrace -o DIR/) is\n"
    "refused; query each DIR/*.db on its own.\n";

enum format { FORMAT_TABLE, FORMAT_CSV, FORMAT_JSON };

// Rows of a table kept to size its columns; later rows are printed with those widths.
#define TABLE_SAMPLE_ROWS 1000

typedef struct printer {
    FILE* out;
    enum format format;
    size_t rows;      // rows of the current statement so far
    char** sample;    // FORMAT_TABLE: the first rows, escaped, ncol values each
    int* sample_type; // their types
    size_t* width;
    int ncol;
    bool sized; // the widths are fixed and the header printed
} printer;

// ---- table

static size_t display_width(const char* s) {
    size_t n = 0;
    for (; s && *s; s++)
        n += ((unsigned char)*s & 0xc0) != 0x80; // count UTF-8 lead bytes
    return n;
}

static void pad(FILE* out, size_t n) {
    while (n--)
        fputc(' ', out);
}

static void table_cell(printer* p, int i, const char* text, int type) {
    size_t w = display_width(text);
    size_t fill = p->width[i] > w ? p->width[i] - w : 0;
    bool number = type == MT_SQL_INTEGER || type == MT_SQL_FLOAT;
    if (i > 0)
        fputs("  ", p->out);
    if (number)
        pad(p->out, fill);
    fputs(text ? text : "", p->out);
    if (!number && i + 1 < p->ncol)
        pad(p->out, fill);
}

static void table_line(printer* p, char* const* text, const int* type) {
    for (int i = 0; i < p->ncol; i++)
        table_cell(p, i, text[i], type ? type[i] : MT_SQL_TEXT);
    fputc('\n', p->out);
}

static void free_sample(printer* p) {
    for (size_t i = 0; p->sample && i < p->rows * (size_t)p->ncol && !p->sized; i++)
        free(p->sample[i]);
    free(p->sample);
    free(p->sample_type);
    free(p->width);
    p->sample = NULL;
    p->sample_type = NULL;
    p->width = NULL;
}

// Sizes the columns by the header and the sampled rows, then prints them.
static void table_flush(printer* p, const mt_sql_row* r) {
    char** names = calloc((size_t)r->ncol, sizeof *names);
    for (int i = 0; names && i < r->ncol; i++) {
        names[i] = mr_escape(r->names[i], strlen(r->names[i]), MR_ESCAPE_TERMINAL);
        size_t w = display_width(names[i]);
        if (w > p->width[i])
            p->width[i] = w;
    }
    if (names) {
        table_line(p, names, NULL);
        for (int i = 0; i < r->ncol; i++) {
            if (i > 0)
                fputs("  ", p->out);
            for (size_t k = 0; k < p->width[i]; k++)
                fputc('-', p->out);
            free(names[i]);
        }
        fputc('\n', p->out);
        free(names);
    }
    for (size_t row = 0; row < p->rows; row++) {
        table_line(p, p->sample + row * (size_t)r->ncol, p->sample_type + row * (size_t)r->ncol);
        for (int i = 0; i < r->ncol; i++)
            free(p->sample[row * (size_t)r->ncol + i]);
    }
    p->sized = true;
}

static int table_row(printer* p, const mt_sql_row* r) {
    if (p->rows == 0) {
        p->ncol = r->ncol;
        p->sized = false;
        p->sample = calloc((size_t)TABLE_SAMPLE_ROWS * (size_t)r->ncol + 1, sizeof *p->sample);
        p->sample_type = calloc((size_t)TABLE_SAMPLE_ROWS * (size_t)r->ncol + 1, sizeof(int));
        p->width = calloc((size_t)r->ncol + 1, sizeof *p->width);
        if (!p->sample || !p->sample_type || !p->width)
            return -ENOMEM;
    }
    if (p->sized) {
        char** text = p->sample; // the sampled rows are printed: reuse their first slots
        for (int i = 0; i < r->ncol; i++)
            text[i] = r->values[i]
                          ? mr_escape(r->values[i], strlen(r->values[i]), MR_ESCAPE_TERMINAL)
                          : NULL;
        table_line(p, text, r->types);
        for (int i = 0; i < r->ncol; i++)
            free(text[i]);
    } else {
        for (int i = 0; i < r->ncol; i++) {
            char* t = r->values[i]
                          ? mr_escape(r->values[i], strlen(r->values[i]), MR_ESCAPE_TERMINAL)
                          : NULL;
            p->sample[p->rows * (size_t)r->ncol + i] = t;
            p->sample_type[p->rows * (size_t)r->ncol + i] = r->types[i];
            size_t w = display_width(t);
            if (w > p->width[i])
                p->width[i] = w;
        }
        if (p->rows + 1 == TABLE_SAMPLE_ROWS) {
            p->rows++;
            table_flush(p, r);
            return 0;
        }
    }
    p->rows++;
    return 0;
}

static void table_end(printer* p, const mt_sql_row* columns) {
    if (columns->ncol == 0)
        return;
    if (p->rows == 0) { // no rows: the header alone says which columns there were
        p->ncol = columns->ncol;
        p->width = calloc((size_t)columns->ncol, sizeof *p->width);
        if (!p->width)
            return;
    }
    if (!p->sized)
        table_flush(p, columns);
    free_sample(p);
}

// ---- CSV (RFC 4180: CRLF line ends, fields with , " CR LF quoted, " doubled)

static void csv_line(FILE* out, int n, const char* const* fields) {
    for (int i = 0; i < n; i++) {
        if (i > 0)
            fputc(',', out);
        mr_escape_fputs_csv(out, fields[i]);
    }
    fputs("\r\n", out);
}

// ---- the sink

static int on_row(void* ud, const mt_sql_row* r) {
    printer* p = ud;
    int rc = 0;
    switch (p->format) {
    case FORMAT_CSV:
        if (p->rows == 0)
            csv_line(p->out, r->ncol, r->names);
        csv_line(p->out, r->ncol, r->values);
        break;
    case FORMAT_JSON: // one array of objects per statement (render/sql_json.h)
        rc = mr_sql_json_row(p->out, p->rows, r);
        break;
    default:
        return table_row(p, r);
    }
    p->rows++;
    return rc;
}

static int on_end(void* ud, const mt_sql_row* columns) {
    printer* p = ud;
    if (columns->ncol > 0) {
        switch (p->format) {
        case FORMAT_CSV:
            if (p->rows == 0)
                csv_line(p->out, columns->ncol, columns->names);
            break;
        case FORMAT_JSON:
            mr_sql_json_end(p->out, p->rows);
            break;
        default:
            table_end(p, columns);
            break;
        }
    }
    p->rows = 0;
    return ferror(p->out) ? -EIO : 0;
}

// ---- running statements

typedef struct session {
    mt_sql* sql;
    const char* path;
    printer pr;
    unsigned timeout_s;
    int64_t max_memory_mib;
} session;

// Runs sql; on failure says why. Returns an exit code.
static int run(session* s, const char* sql) {
    char err[1024];
    mt_sql_sink sink = {on_row, on_end, &s->pr};
    err[0] = 0;
    int rc = mt_sql_exec(s->sql, sql, &sink, err, sizeof err);
    free_sample(&s->pr);
    s->pr.rows = 0;
    if (rc == 0)
        return MR_EXIT_OK;
    if (rc == -EIO && !err[0]) {
        mr_messages_error(s->path, "cannot write the output");
        return MR_EXIT_IO;
    }
    if (rc == -ETIME) {
        mr_messages_error(s->path, "query stopped after %u s (--timeout)", s->timeout_s);
        return MR_EXIT_BAD_INPUT;
    }
    if (rc == -ENOMEM && s->max_memory_mib > 0) {
        mr_messages_error(s->path,
                          "query stopped: out of memory (SQLite may hold %lld MiB: --max-memory)",
                          (long long)s->max_memory_mib);
        return MR_EXIT_IO;
    }
    mr_messages_error(s->path, "%s", err[0] ? err : strerror(-rc));
    return rc == -EIO || rc == -ENOMEM ? MR_EXIT_IO : MR_EXIT_BAD_INPUT;
}

static const char tables_sql[] =
    "SELECT name FROM (SELECT name FROM sqlite_schema WHERE type IN ('table', 'view')"
    " AND name NOT LIKE 'sqlite_%' UNION SELECT column1 FROM (VALUES ('events'),"
    " ('allocations'), ('stacks'))) ORDER BY 1";
static const char schema_sql[] =
    "SELECT sql || ';' FROM sqlite_schema WHERE sql IS NOT NULL"
    " UNION ALL SELECT '-- virtual table ' || t || '(' || (SELECT group_concat(name, ', ')"
    " FROM pragma_table_info(t)) || ')' FROM (SELECT column1 AS t FROM (VALUES ('events'),"
    " ('allocations'), ('stacks')))";

// A prompt's dot command. Returns 1 to quit, else the exit code of what it ran.
static int dot_command(session* s, const char* line) {
    char cmd[32] = "";
    sscanf(line, "%31s", cmd);
    if (!strcmp(cmd, ".quit") || !strcmp(cmd, ".exit"))
        return 1;
    // Listings print bare lines, whatever the output format.
    enum format saved = s->pr.format;
    s->pr.format = FORMAT_CSV;
    int rc;
    if (!strcmp(cmd, ".tables"))
        rc = run(s, tables_sql) ? MR_EXIT_BAD_INPUT : 0;
    else if (!strcmp(cmd, ".schema"))
        rc = run(s, schema_sql) ? MR_EXIT_BAD_INPUT : 0;
    else {
        fputs(".tables  list the tables\n.schema  their definitions\n.quit    leave\n", s->pr.out);
        rc = strcmp(cmd, ".help") ? MR_EXIT_USAGE : 0;
    }
    s->pr.format = saved;
    return rc;
}

static bool blank(const char* s) {
    return s[strspn(s, " \t\r\n")] == 0;
}

// Reads statements from stdin: with a prompt on a terminal (errors are shown and the
// prompt goes on), else as a script that stops at the first error.
static int read_statements(session* s, bool interactive) {
    char* line = NULL;
    size_t linecap = 0;
    char* buf = NULL;
    size_t len = 0;
    int rc = MR_EXIT_OK;
    for (;;) {
        if (interactive) {
            fputs(len ? "   ...> " : "memreport> ", stdout);
            fflush(stdout);
        }
        ssize_t n = getline(&line, &linecap, stdin);
        if (n < 0)
            break;
        if (len == 0 && line[strspn(line, " \t")] == '.') {
            int drc = dot_command(s, line + strspn(line, " \t"));
            if (drc == 1)
                break;
            fflush(s->pr.out);
            if (drc && !interactive) {
                rc = drc;
                break;
            }
            continue;
        }
        char* grown = realloc(buf, len + (size_t)n + 1);
        if (!grown) {
            mr_messages_error(s->path, "out of memory");
            rc = MR_EXIT_IO;
            break;
        }
        buf = grown;
        memcpy(buf + len, line, (size_t)n + 1);
        len += (size_t)n;
        if (!mt_sql_complete(buf))
            continue;
        int r = run(s, buf);
        fflush(s->pr.out);
        len = 0;
        if (r && !interactive) {
            rc = r;
            break;
        }
    }
    // A script's last statement may lack its ';'.
    if (rc == MR_EXIT_OK && len > 0 && !blank(buf))
        rc = run(s, buf);
    if (interactive)
        fputc('\n', stdout);
    free(line);
    free(buf);
    return rc;
}

// A statement's run time limit unless --timeout says otherwise: long enough for any query
// over a large capture, short enough that a runaway one (an endless recursive CTE) ends.
#define SQL_TIMEOUT_DEFAULT 60

// Half the machine's memory: a query that would eat it all stops with a message instead.
static long long default_max_memory_mib(void) {
    long pages = sysconf(_SC_PHYS_PAGES), size = sysconf(_SC_PAGESIZE);
    if (pages <= 0 || size <= 0)
        return 0;
    return (long long)((unsigned long long)pages * (unsigned long long)size / 2 >> 20);
}

static bool whole_number(const char* s, long long max, long long* out) {
    char* end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || end == s || *end || v < 0 || v > max || s[0] == '-' || s[0] == '+' || s[0] == ' ')
        return false;
    *out = v;
    return true;
}

int mr_cmd_sql(int argc, char** argv) {
    static const struct option opts[] = {{"csv", no_argument, NULL, 'c'},
                                         {"json", no_argument, NULL, 'j'},
                                         {"output", required_argument, NULL, 'o'},
                                         {"force", no_argument, NULL, 'f'},
                                         {"help", no_argument, NULL, 'h'},
                                         {"timeout", required_argument, NULL, 'T'},
                                         {"max-memory", required_argument, NULL, 'M'},
                                         {NULL, 0, NULL, 0}};
    mr_opts o = MR_OPTS_INIT;
    bool csv = false;
    long long timeout_s = SQL_TIMEOUT_DEFAULT, max_mib = default_max_memory_mib();
    int c;
    while ((c = getopt_long(argc, argv, "jo:fh", opts, NULL)) != -1) {
        if (c == 'c') {
            csv = true;
            continue;
        }
        if (c == 'T' || c == 'M') {
            long long* v = c == 'T' ? &timeout_s : &max_mib;
            if (!whole_number(optarg, c == 'T' ? UINT_MAX : INT64_MAX >> 20, v))
                return mr_opts_usage_error(sql_help, "sql: --%s takes a whole number, got '%s'",
                                           c == 'T' ? "timeout" : "max-memory", optarg);
            continue;
        }
        int orc = mr_opts_handle(&o, c, sql_help);
        if (orc != MR_OPT_NEXT)
            return orc;
    }
    if (csv && o.json)
        return mr_opts_usage_error(sql_help, "sql: --csv and --json exclude each other");
    int npos = argc - optind;
    if (npos < 1 || npos > 2)
        return mr_opts_usage_error(sql_help, "sql takes one capture and at most one query, got %d",
                                   npos);
    session s = {.path = argv[optind]};
    const char* query = npos == 2 ? argv[optind + 1] : NULL;
    if (mr_capture_set_wanted(1, argv + optind)) { // a process tree's directory
        mr_messages_error(s.path, "a directory: sql reads one capture (its events, allocations and "
                                  "stacks are one process's); name one of its captures");
        return MR_EXIT_USAGE;
    }
    char err[512];
    int rc = mt_sql_open(s.path, &s.sql, err, sizeof err);
    if (rc) {
        mr_messages_error(s.path, "%s", err);
        return (rc == -ENOENT || rc == -EACCES || rc == -EIO) ? MR_EXIT_IO : MR_EXIT_BAD_INPUT;
    }
    mr_output_file out;
    if ((rc = mr_output_file_open(&out, o.output, o.force))) {
        mt_sql_close(s.sql);
        return rc;
    }
    s.timeout_s = (unsigned)timeout_s;
    s.max_memory_mib = max_mib;
    mt_sql_set_limits(s.sql, s.timeout_s, (int64_t)max_mib << 20);
    s.pr = (printer){.out = out.fp,
                     .format = csv      ? FORMAT_CSV
                               : o.json ? FORMAT_JSON
                                        : FORMAT_TABLE};
    if (query)
        rc = run(&s, query);
    else
        rc = read_statements(&s, isatty(STDIN_FILENO));
    mt_sql_close(s.sql);
    if (rc) {
        mr_output_file_abort(&out);
        return rc;
    }
    return mr_output_file_commit(&out);
}
