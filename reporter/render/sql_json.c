// SPDX-License-Identifier: MIT
// SQL rows as JSON (sql_json.h).
#include "sql_json.h"

#include "json.h"

#include <errno.h>
#include <stdlib.h>

static json_t* json_value(const char* text, int type) {
    switch (type) {
    case MT_SQL_NULL:
        return json_null();
    case MT_SQL_INTEGER:
        return json_integer(strtoll(text, NULL, 10));
    case MT_SQL_FLOAT:
        return json_real(strtod(text, NULL));
    default:
        return mr_json_bytes(text);
    }
}

int mr_sql_json_row(FILE* out, size_t index, const mt_sql_row* r) {
    json_t* o = json_object();
    if (!o)
        return -ENOMEM;
    for (int i = 0; i < r->ncol; i++)
        json_object_set_new(o, r->names[i], json_value(r->values[i], r->types[i]));
    fputs(index == 0 ? "[\n  " : ",\n  ", out);
    json_dumpf(o, out, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref(o);
    return 0;
}

void mr_sql_json_end(FILE* out, size_t rows) {
    fputs(rows == 0 ? "[]\n" : "\n]\n", out);
}
