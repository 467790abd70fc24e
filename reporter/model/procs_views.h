// SPDX-License-Identifier: MIT
// What the views of several processes (capture_set.h) add up: the totals of their
// profiles (profile.h), and their function views (functions.h) summed per function (a
// name and a file, whatever the process) or kept apart per process. Pure computation over
// what each process's own model built; names stay those of each process's symbols.
#ifndef MR_PROCS_VIEWS_H
#define MR_PROCS_VIEWS_H

#include "functions.h"
#include "profile.h"

#include <stddef.h>

// Adds p's totals (live at its moment, at the end, allocated, its peak and events) to
// *sum; its rows are not copied (sum->rows stays NULL). The peaks of processes add up as
// each process at its own peak.
void mr_procs_views_profile_add(mr_profile* sum, const mr_profile* p);

// The functions of parts[0..n) summed: one row per (name, file), by name then file as
// mr_functions_build sorts them. Returns 0 or -ENOMEM.
int mr_procs_views_functions_sum(const mr_functions* parts, size_t n, mr_functions* out);

// The functions of parts[0..n) one after the other, (*part_of)[i] the part of out->v[i]
// (malloc'd). Returns 0 or -ENOMEM.
int mr_procs_views_functions_split(const mr_functions* parts, size_t n, mr_functions* out,
                                   size_t** part_of);

#endif
