// SPDX-License-Identifier: MIT
// The JSON pieces every report over several processes (capture_set.h) shares: the process
// as the outermost frame of a stack ("COMMAND (pid N)", as the flame graph's root frames
// name it) and a process's identity. For render/ only (jansson).
#ifndef MR_PROCS_JSON_H
#define MR_PROCS_JSON_H

#include "capture_set.h"

#include <jansson.h>

// {"function": "COMMAND (pid N)", "file": null, "line": null, "module": null,
//  "inlined": false, "relevant": true, "process": true}, or NULL out of memory.
json_t* mr_procs_json_frame(const mr_process* p);

// {"capture": FILE NAME, "pid": N, "ppid": N, "process": "COMMAND (pid N)"}: the first
// keys of a process's entry in a report, or NULL out of memory.
json_t* mr_procs_json_process(const mr_process* p);

#endif
