// SPDX-License-Identifier: MIT
// GOT rewriting for a tracer injected into a running process (inject.c): the loaded modules'
// heap calls are pointed at libmemtrace.so's hooks, and back. Never on the event path.
#ifndef MT_INJECT_H
#define MT_INJECT_H

// Points every loaded module's hooked GOT slots (and, through dlopen, those of modules loaded
// later) at our definitions. Returns 0 or a negative errno.
int mt_inject_patch_all(void);
// Writes back every slot's value from before mt_inject_patch_all.
void mt_inject_restore_all(void);

#endif
