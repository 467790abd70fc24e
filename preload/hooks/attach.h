// SPDX-License-Identifier: MIT
// Attaching to a running process (attach.c): the functions gdb calls, run by the debugger
// in the traced process, and what autostart.c asks.
#ifndef MT_ATTACH_H
#define MT_ATTACH_H

#include "core.h"

#include <stdbool.h>

// Starts a capture at `output` (absolute; numbered if it exists) and redirects every loaded
// module's heap calls to the hooks. `report`: the launcher's file to hear where the capture
// went ("" for none). `settings`: the MEMTRACE_* settings to record with, one "KEY=VALUE" a
// line (those settings.h passes on attach; the process's environment is never read).
// Returns 0, -EALREADY when already recording, -EINVAL for a setting it does not take, or a
// negative errno.
MT_EXPORT int memtrace_attach(const char* output, const char* report, const char* settings);
// Puts the modules' heap calls back and finishes the capture. 0, or -ENOENT if not recording.
MT_EXPORT int memtrace_detach(void);

#endif
