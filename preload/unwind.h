// SPDX-License-Identifier: MIT
// Stack capture: return addresses, leaf first, the tracer's own frames removed.
#ifndef MT_UNWIND_H
#define MT_UNWIND_H

#include "stackhash.h"

#include <stdbool.h>
#include <stdint.h>

void mt_unwind_init(int mode);
// fork: the rule table's lock must not be held by another thread when the child starts.
void mt_unwind_fork_lock(void);
void mt_unwind_fork_unlock(void);
// Fills up to `max` pcs; *truncated is set when the stack was deeper than `max`.
// The most frames a walk looks at (MEMTRACE_DEPTH is at most 1024, plus the tracer's own).
#define MT_UNWIND_MAX_FRAMES 1100

// pcs must hold MT_UNWIND_MAX_FRAMES entries (it is also the walk's scratch space: hooks
// keep their stack use small, since a program's threads may have small stacks). *hash gets the
// mt_stackhash state of the pcs returned.
int mt_unwind(uintptr_t* pcs, int max, bool* truncated, uintptr_t stack_hi, mt_stackhash* hash);

#endif
