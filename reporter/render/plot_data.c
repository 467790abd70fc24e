// SPDX-License-Identifier: MIT
// A plot's --data JSON (plot_data.h), written as it goes; jansson only quotes the names.
#include "plot_data.h"

#include <errno.h>
#include <jansson.h>
#include <stdlib.h>

static void put_points(FILE* fp, const char* name, const mr_points* p, bool last) {
    fprintf(fp, "    \"%s\": [", name);
    for (size_t i = 0; i < p->n; i++)
        fprintf(fp, "%s[%lld, %llu]", i ? ", " : "", (long long)p->v[i].x,
                (unsigned long long)p->v[i].y);
    fprintf(fp, "]%s\n", last ? "" : ",");
}

void mr_plot_data_write(FILE* fp, const mr_plot_data* d) {
    fprintf(fp, "{\n  \"unit\": \"%s\",\n  \"scale\": %llu,\n  \"total_steps\": %lld,\n", d->unit,
            (unsigned long long)d->scale, (long long)d->total_steps);
    fputs("  \"regions\": [", fp);
    for (size_t i = 0; i < d->nregions; i++) {
        // A name that is not UTF-8 has no JSON string: it is written as "".
        json_t* name = json_string(d->regions[i].name);
        char* q = name ? json_dumps(name, JSON_ENCODE_ANY) : NULL;
        fprintf(fp, "%s\n    {\"name\": %s, \"start\": %lld, \"label_drawn\": %s}", i ? "," : "",
                q ? q : "\"\"", (long long)d->regions[i].start,
                d->regions[i].label_drawn ? "true" : "false");
        free(q);
        json_decref(name);
    }
    fputs(d->nregions ? "\n  ],\n" : "],\n", fp);
    fputs("  \"series\": {\n", fp);
    for (size_t i = 0; i < d->nseries; i++)
        put_points(fp, d->series[i].name, d->series[i].points, i + 1 == d->nseries);
    fputs("  }\n}\n", fp);
}

int mr_plot_data_attr_int(const char* attrs, const char* key, int64_t* out) {
    json_t* j = attrs ? json_loads(attrs, 0, NULL) : NULL;
    json_t* v = json_object_get(j, key);
    int rc = json_is_integer(v) ? 0 : -EPROTO;
    if (!rc)
        *out = json_integer_value(v);
    json_decref(j);
    return rc;
}
