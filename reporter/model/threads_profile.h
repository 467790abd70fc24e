// SPDX-License-Identifier: MIT
// Profiles of the whole run per thread (rows per callsite and thread, or one thread's rows)
// at the peak or the end, without a live-block table over every event: the blocks live then
// come from the heap's checkpoints (the state at the peak or the last event: a checkpoint
// and the events after it), the allocations per row from one pass over the events that
// only counts them (decoded ahead on a second core by the capture's reader). What
// flamegraph --split-threads and top --thread ask. Used only where the checkpoints are
// (checkpoints.h): never with memreport --replay or --skip-corrupt, nor on a capture
// memreport may not write that has none stored; it never replaces what a replay gives.
#ifndef MR_THREADS_PROFILE_H
#define MR_THREADS_PROFILE_H

#include "profile.h"

#include "memtrace/capture.h"

#include <stddef.h>

// mr_profile_build_moments' shortcut for one query over the whole run at the peak or the
// end, by thread or of one thread, without observer or range_blocks. Returns 0 (*out
// filled as mr_profile_build gives it), 1 when the query needs a replay (other queries,
// no checkpoints to use, damaged ones with a note in err), or a negative errno with the
// reason in err.
int mr_threads_profile_answer(mt_capture* cap, const mr_query* q, mr_profile* out, char* err,
                              size_t errlen);

#endif
