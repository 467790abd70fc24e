// SPDX-License-Identifier: MIT
// The JSON pieces of the reports over several processes (procs_json.h).
#include "procs_json.h"

#include "json.h"
#include "procs_report.h"

#include <stdlib.h>

// The label as a JSON string (json_null() when out of memory: the report says "null").
static json_t* label_json(const mr_process* p) {
    char* label = mr_procs_report_label(p);
    json_t* s = label ? mr_json_bytes(label) : json_null();
    free(label);
    return s;
}

json_t* mr_procs_json_frame(const mr_process* p) {
    json_t* f = json_object();
    json_object_set_new(f, "function", label_json(p));
    json_object_set_new(f, "file", json_null());
    json_object_set_new(f, "line", json_null());
    json_object_set_new(f, "module", json_null());
    json_object_set_new(f, "inlined", json_false());
    json_object_set_new(f, "relevant", json_true());
    json_object_set_new(f, "process", json_true());
    return f;
}

json_t* mr_procs_json_process(const mr_process* p) {
    json_t* o = json_object();
    json_object_set_new(o, "capture", mr_json_bytes(p->name));
    json_object_set_new(o, "pid", json_integer((json_int_t)p->pid));
    json_object_set_new(o, "ppid", json_integer((json_int_t)p->ppid));
    json_object_set_new(o, "process", label_json(p));
    return o;
}
