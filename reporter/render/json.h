// SPDX-License-Identifier: MIT
// The JSON renderer's shared pieces, the one public header of memreport that exposes
// jansson: strings from a capture as JSON (made valid UTF-8 by escape.h's rule), the
// tracer's JSON texts read back, JSON embedded in HTML, and a report written as indented
// JSON or as text. Commands never build JSON themselves: they hand the model's results to
// a report renderer (render/*_report.h) that uses these.
#ifndef MR_JSON_H
#define MR_JSON_H

#include "report.h"

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

// A JSON string holding s made valid UTF-8 (MR_ESCAPE_UTF8); JSON null for NULL.
json_t* mr_json_bytes(const char* s);
// Sets object[tid as decimal text] = mr_json_bytes(name): an mt_capture_threads callback.
void mr_json_add_thread(void* object, int64_t tid, const char* name);

// Parses a JSON text written by the tracer, whose strings may hold raw bytes that are not
// UTF-8 (meta 'cmdline'); such bytes read as \xNN. NULL when malformed.
json_t* mr_json_loads_bytes(const char* text);

// Writes JSON that is safe inside an HTML <script> element: compact, with < > & written as
// \u003c \u003e \u0026 (valid JSON, so "</script>" or "<!--" in a name never reach the
// HTML parser). Returns 0, or -1 on a write error.
int mr_json_dump_html(const json_t* json, FILE* out);

// The sampled captures this run opened (model/sampled.h) as a JSON array of {capture,
// method, mean_interval_bytes}; NULL when none was sampled.
json_t* mr_json_sampled(void);
// Writes a report where `to` says (an existing file only with force, output.h): as JSON
// indented by 2, else through print_text, which reads the same document. A report of a
// sampled capture gets the field "sampled" (mr_json_sampled), or its lines first in text.
// Returns 0 or an exit code (after printing the reason).
int mr_json_write_report(const mr_report_to* to, json_t* report,
                         void (*print_text)(FILE*, json_t*));
// The same for a report just built, which it frees: NULL (out of memory when building)
// is said as "memreport: CAPTURE: out of memory" and exit 3.
int mr_json_write_new_report(const mr_report_to* to, json_t* report, const char* capture,
                             void (*print_text)(FILE*, json_t*));
// Writes json on one line to the file `path` (refused if it exists, unless force), as
// `plot --data` does; an object gets the field "sampled" when a sampled capture was opened
// (mr_json_sampled). Returns an exit code.
int mr_json_write_compact(const json_t* json, const char* path, bool force);

#endif
