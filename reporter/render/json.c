// SPDX-License-Identifier: MIT
// Capture strings as JSON, the tracer's JSON texts, HTML-safe JSON and the report writer
// (json.h). The escaping rule itself is base/escape.h's.
#include "json.h"

#include "escape.h"
#include "messages.h"
#include "output_file.h"
#include "sampled.h"

#include "memtrace/sampling.h"

#include <stdlib.h>
#include <string.h>

json_t* mr_json_bytes(const char* s) {
    if (!s)
        return json_null();
    char* e = mr_escape(s, strlen(s), MR_ESCAPE_UTF8);
    json_t* j = e ? json_string(e) : NULL;
    free(e);
    return j ? j : json_null();
}

void mr_json_add_thread(void* object, int64_t tid, const char* name) {
    char key[24];
    snprintf(key, sizeof key, "%lld", (long long)tid);
    json_object_set_new(object, key, mr_json_bytes(name));
}

json_t* mr_json_loads_bytes(const char* text) {
    if (!text)
        return NULL;
    char* e = mr_escape(text, strlen(text), MR_ESCAPE_JSON_TEXT);
    json_t* j = e ? json_loads(e, 0, NULL) : NULL;
    free(e);
    return j;
}

// < > & occur in JSON only inside strings, so replacing them by their \u escapes anywhere
// in the dumped text keeps it the same JSON.
static int put_html_safe(const char* buf, size_t n, void* data) {
    FILE* out = data;
    size_t start = 0;
    for (size_t i = 0; i < n; i++) {
        const char* e = buf[i] == '<'   ? "\\u003c"
                        : buf[i] == '>' ? "\\u003e"
                        : buf[i] == '&' ? "\\u0026"
                                        : NULL;
        if (!e)
            continue;
        fwrite(buf + start, 1, i - start, out);
        fputs(e, out);
        start = i + 1;
    }
    fwrite(buf + start, 1, n - start, out);
    return ferror(out) ? -1 : 0;
}

int mr_json_dump_html(const json_t* json, FILE* out) {
    return json_dump_callback(json, put_html_safe, out, JSON_COMPACT | JSON_ESCAPE_SLASH) ? -1 : 0;
}

int mr_json_write_compact(const json_t* json, const char* path, bool force) {
    mr_output_file out;
    int rc = mr_output_file_open(&out, path, force);
    if (rc)
        return rc;
    // A sampled capture's data says so, as every report's --json does (say_sampled): on a
    // shallow copy, the caller's document stays as it was.
    json_t* sampled = json_is_object(json) ? mr_json_sampled() : NULL;
    json_t* with = sampled ? json_copy((json_t*)json) : NULL;
    if (with)
        json_object_set_new(with, "sampled", sampled);
    else
        json_decref(sampled);
    json_dumpf(with ? with : json, out.fp, JSON_COMPACT);
    json_decref(with);
    fputc('\n', out.fp);
    return mr_output_file_commit(&out);
}

json_t* mr_json_sampled(void) {
    size_t n = mr_sampled_count();
    json_t* list = n ? json_array() : NULL;
    for (size_t i = 0; list && i < n; i++) {
        const char* path;
        uint64_t bytes;
        mr_sampled_get(i, &path, &bytes);
        json_array_append_new(list, json_pack("{s:o, s:s, s:I}", "capture", mr_json_bytes(path),
                                              "method", MT_SAMPLE_METHOD_POISSON_BYTES,
                                              "mean_interval_bytes", (json_int_t)bytes));
    }
    return list;
}

// Every report of a sampled capture says so (model/sampled.h): a "sampled" field, or its
// lines before the text.
static void say_sampled(FILE* fp, json_t* report, bool json) {
    if (!mr_sampled_count())
        return;
    if (json) {
        if (json_is_object(report))
            json_object_set_new(report, "sampled", mr_json_sampled());
        return;
    }
    for (size_t i = 0; i < mr_sampled_lines(); i++) {
        char line[4400];
        mr_sampled_line(i, line, sizeof line);
        fprintf(fp, "%s\n", line);
    }
}

int mr_json_write_report(const mr_report_to* to, json_t* report,
                         void (*print_text)(FILE*, json_t*)) {
    mr_output_file out;
    int rc = mr_output_file_open(&out, to->output, to->force);
    if (rc)
        return rc;
    say_sampled(out.fp, report, to->json);
    if (to->json) {
        json_dumpf(report, out.fp, JSON_INDENT(2));
        fputc('\n', out.fp);
    } else {
        print_text(out.fp, report);
    }
    return mr_output_file_commit(&out);
}

int mr_json_write_new_report(const mr_report_to* to, json_t* report, const char* capture,
                             void (*print_text)(FILE*, json_t*)) {
    if (!report) {
        mr_messages_error(capture, "out of memory");
        return MR_EXIT_IO;
    }
    int rc = mr_json_write_report(to, report, print_text);
    json_decref(report);
    return rc;
}
