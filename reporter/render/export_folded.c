// SPDX-License-Identifier: MIT
// Collapsed stacks (Brendan Gregg's flamegraph.pl input, `heaptrack_print -F`, inferno):
// "root;caller;leaf VALUE" per line. Callsites whose symbolized stacks read the same are
// merged into one line, so every line names a distinct stack.
#include "export.h"

#include "memtrace/vec.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

typedef struct line {
    char* text;
    uint64_t value;
} line;

// A name as one frame of a line: ';' separates frames and a newline ends the line, so
// both become look-alikes that cannot ('|' and a space).
static void put_name(char* dst, size_t* len, const char* name) {
    for (const char* c = name; *c; c++)
        dst[(*len)++] = *c == ';' ? '|' : (*c == '\n' || *c == '\r') ? ' ' : *c;
}

static char* stack_text(const mr_export_input* in, uint32_t leaf) {
    static const mr_symloc* locs[MR_EXPORT_MAX_LOCS];
    size_t n = mr_export_stack_locs(in, leaf, locs, MR_EXPORT_MAX_LOCS);
    if (n == 0)
        return strdup("(no stack)");
    size_t size = 1;
    for (size_t i = 0; i < n; i++)
        size += strlen(locs[i]->function) + 1;
    char* text = malloc(size);
    if (!text)
        return NULL;
    size_t len = 0;
    for (size_t i = 0; i < n; i++) {
        if (i)
            text[len++] = ';';
        put_name(text, &len, locs[i]->function);
    }
    text[len] = 0;
    return text;
}

static int by_text(const void* a, const void* b) {
    return strcmp(((const line*)a)->text, ((const line*)b)->text);
}

int mr_export_folded(FILE* out, const mr_export_input* in, char* err, size_t errlen) {
    line* lines = NULL;
    size_t n = 0, cap = 0;
    int rc = 0;
    for (size_t i = 0; i < in->prof->nrows && rc == 0; i++) {
        uint64_t v = mr_profile_row_value(&in->prof->rows[i], in->metric);
        if (v == 0)
            continue;
        char* text = stack_text(in, in->prof->rows[i].callsite);
        if (!text || mt_vec_grow(&lines, &cap, n + 1, sizeof *lines)) {
            free(text);
            rc = -ENOMEM;
            break;
        }
        lines[n++] = (line){text, v};
    }
    if (n > 1) // qsort must never see the NULL of an empty vector
        qsort(lines, n, sizeof *lines, by_text);
    for (size_t i = 0; i < n; i++) {
        uint64_t v = lines[i].value;
        while (i + 1 < n && !strcmp(lines[i].text, lines[i + 1].text)) {
            free(lines[i].text);
            v += lines[++i].value;
        }
        if (rc == 0)
            fprintf(out, "%s %llu\n", lines[i].text, (unsigned long long)v);
        free(lines[i].text);
    }
    free(lines);
    if (rc)
        snprintf(err, errlen, "out of memory");
    return rc;
}
