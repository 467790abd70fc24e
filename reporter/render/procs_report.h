// SPDX-License-Identifier: MIT
// The reports over a process tree's captures (capture_set.h): `memreport summary DIR`,
// each process (pid, ppid, command, counts, peak, leaked) in tree order, indented under its
// parent, and the total over processes; and the command line of a process as one line,
// which the flame graph uses as the root frame of its stacks. Reads only the set's meta.
#ifndef MR_PROCS_REPORT_H
#define MR_PROCS_REPORT_H

#include "capture_set.h"
#include "procs_timeline.h"
#include "report.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

// The numbers of one process, from its capture's replay (replay.h).
typedef struct mr_proc_numbers {
    bool truncated;
    uint64_t events, allocations, frees, bytes_allocated, peak_bytes, leaked_bytes,
        leaked_allocations;
    int64_t peak_ts, duration_ns;
    uint64_t at_joint_peak; // live bytes when the processes together held the most
} mr_proc_numbers;

// Writes the report of s with nums[i] for s->procs[i], and `joint`, the most the processes
// held at one moment. Returns 0 or an exit code (after printing the reason).
int mr_procs_report_summary_write(const mr_report_to* to, const mr_capture_set* s,
                                  const mr_proc_numbers* nums, const mr_procs_moment* joint);

// "COMMAND (pid N)": the process's command line (its exe when the capture has none, its
// file name when neither), valid UTF-8, cut to about 200 bytes. Returns a malloc'd string
// or NULL (out of memory).
char* mr_procs_report_label(const mr_process* p);

// For a legend, what tells each process of s apart from the others besides its pid: its
// program's file name (prog[i]) and, when others run the same program, the arguments they
// do not all share (args[i]: "foo.c" of "cc1 foo.c", "bar.c" of "cc1 bar.c"; else all its
// arguments, "" when none), each cut in the middle to a few dozen bytes keeping where it
// differs from the most alike one, as valid UTF-8 (malloc'd) for s->procs[i]. Returns 0 or
// -ENOMEM (then both hold nothing).
int mr_procs_report_legend_names(const mr_capture_set* s, char** prog, char** args);

#endif
