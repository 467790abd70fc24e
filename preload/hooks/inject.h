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
// A dlopen with RTLD_DEEPBIND returned `handle`: the modules it loaded bind their references
// in their own scope first, so their heap calls reach libc's functions, not our hooks. Each
// of their slots whose name the module's scope resolves to the function one of our hooks
// wraps is pointed at that hook (left so for the process's life); a name it resolves
// elsewhere (an allocator of its own) is left alone. Called with the guard set. Returns 0 or
// a negative errno.
int mt_inject_patch_deepbind(void* handle);

#endif
