// SPDX-License-Identifier: MIT
// memreport plumbing: errors, capture opening, atomic output files, progress.
#include "util.h"

#include "symbols.h"

#include "memtrace/schema.h"

#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <sqlite3.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

void mr_error(const char* what, const char* fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    if (what)
        fprintf(stderr, "memreport: %s: ", what);
    else
        fputs("memreport: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

int mr_open_capture(const char* path, mt_capture** out) {
    char err[512];
    int rc = mt_capture_open(path, out, err, sizeof err);
    if (rc == 0)
        return MR_EXIT_OK;
    mr_error(path, "%s", err);
    return (rc == -ENOENT || rc == -EACCES || rc == -EIO) ? MR_EXIT_IO : MR_EXIT_BAD_INPUT;
}

int mr_output_open(mr_output* o, const char* path, bool force) {
    memset(o, 0, sizeof *o);
    if (strcmp(path, "-") == 0) {
        o->fp = stdout;
        return MR_EXIT_OK;
    }
    if (!force && access(path, F_OK) == 0) {
        mr_error(path, "already exists (use -f to overwrite)");
        return MR_EXIT_IO;
    }
    o->path = strdup(path);
    if (!o->path || asprintf(&o->tmp, "%s.tmp.XXXXXX", path) < 0) {
        free(o->path);
        o->path = NULL;
        mr_error(path, "out of memory");
        return MR_EXIT_IO;
    }
    int fd = mkstemp(o->tmp);
    if (fd < 0 || !(o->fp = fdopen(fd, "w"))) {
        mr_error(path, "cannot write: %s", strerror(errno));
        if (fd >= 0)
            close(fd);
        free(o->path);
        free(o->tmp);
        memset(o, 0, sizeof *o);
        return MR_EXIT_IO;
    }
    // mkstemp creates 0600; outputs are ordinary files.
    mode_t mask = umask(0);
    umask(mask);
    fchmod(fd, 0666 & ~mask);
    return MR_EXIT_OK;
}

int mr_output_commit(mr_output* o) {
    if (!o->tmp) {
        int bad = fflush(o->fp) != 0 || ferror(o->fp);
        if (bad)
            mr_error("<stdout>", "write failed: %s", strerror(errno));
        return bad ? MR_EXIT_IO : MR_EXIT_OK;
    }
    int rc = MR_EXIT_OK;
    if (ferror(o->fp) | (fclose(o->fp) != 0)) {
        mr_error(o->path, "write failed: %s", strerror(errno));
        unlink(o->tmp);
        rc = MR_EXIT_IO;
    } else if (rename(o->tmp, o->path) != 0) {
        mr_error(o->path, "cannot rename into place: %s", strerror(errno));
        unlink(o->tmp);
        rc = MR_EXIT_IO;
    }
    free(o->path);
    free(o->tmp);
    memset(o, 0, sizeof *o);
    return rc;
}

void mr_output_abort(mr_output* o) {
    if (o->tmp) {
        if (o->fp)
            fclose(o->fp);
        unlink(o->tmp);
    }
    free(o->path);
    free(o->tmp);
    memset(o, 0, sizeof *o);
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
    default:
        fputs(help, stderr);
        return MR_EXIT_USAGE;
    }
}

const char* mr_opts_input(int argc, char** argv, const char* help) {
    if (optind != argc - 1) {
        fputs(help, stderr);
        return NULL;
    }
    return argv[optind];
}

int mr_parse_count(const char* option, const char* value, size_t* out) {
    char* end;
    long long v = strtoll(value, &end, 10);
    if (*end || end == value || v < 0) {
        mr_error(NULL, "%s: not a count: '%s'", option, value);
        return MR_EXIT_USAGE;
    }
    *out = (size_t)v;
    return MR_EXIT_OK;
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

int mr_write_report(const mr_opts* o, json_t* report, void (*print_text)(FILE*, json_t*)) {
    mr_output out;
    int rc = mr_output_open(&out, o->output, o->force);
    if (rc)
        return rc;
    if (o->json) {
        json_dumpf(report, out.fp, JSON_INDENT(2));
        fputc('\n', out.fp);
    } else {
        print_text(out.fp, report);
    }
    return mr_output_commit(&out);
}

bool mr_progress_enabled(void) {
    return isatty(STDERR_FILENO);
}

void mr_progress(const char* label, double fraction) {
    static struct timespec last;
    if (!mr_progress_enabled())
        return;
    if (fraction < 0) {
        fputs("\r\033[K", stderr);
        return;
    }
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    if ((now.tv_sec - last.tv_sec) * 1000000000L + (now.tv_nsec - last.tv_nsec) < 100000000L)
        return;
    last = now;
    fprintf(stderr, "\r%s: %3.0f%%", label, fraction * 100.0);
}

char* mr_path_with_ext(const char* path, const char* ext) {
    const char* slash = strrchr(path, '/');
    const char* base = slash ? slash + 1 : path;
    const char* dot = strrchr(base, '.');
    size_t keep = dot && dot != base ? (size_t)(dot - path) : strlen(path);
    size_t n = strlen(ext);
    char* out = malloc(keep + n + 1);
    if (out) {
        memcpy(out, path, keep);
        memcpy(out + keep, ext, n + 1);
    }
    return out;
}

int mr_capture_default_heap(mt_capture* cap) {
    sqlite3_stmt* st;
    int heap = MT_HEAP_LIBC;
    if (sqlite3_prepare_v2(mt_capture_db(cap),
                           "SELECT (SELECT count(*) FROM heap WHERE id=?1),"
                           " (SELECT count(*) FROM heap WHERE id=?2 AND kind='npu')",
                           -1, &st, NULL) != SQLITE_OK)
        return heap;
    sqlite3_bind_int(st, 1, MT_HEAP_LIBC);
    sqlite3_bind_int(st, 2, MT_HEAP_NPU);
    if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_int(st, 0) == 0 &&
        sqlite3_column_int(st, 1) == 1)
        heap = MT_HEAP_NPU;
    sqlite3_finalize(st);
    return heap;
}
