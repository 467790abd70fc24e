// SPDX-License-Identifier: MIT
// Stack capture: return addresses, leaf first, the tracer's own frames removed.
#ifndef MT_UNWIND_H
#define MT_UNWIND_H

#include <stdbool.h>
#include <stdint.h>

#include "stackhash.h"

void mt_unwind_init(int mode);
// fork: the rule table's lock must not be held by another thread when the child starts.
void mt_unwind_fork_lock(void);
void mt_unwind_fork_unlock(void);
// Fills up to `max` pcs; *truncated is set when the stack was deeper than `max`.
// pcs must hold max + 1 entries. *hash gets the mt_stackhash state of the pcs returned.
int mt_unwind(uintptr_t* pcs, int max, bool* truncated, uintptr_t stack_hi,
              mt_stackhash* hash);

#endif
