// SPDX-License-Identifier: MIT
// memtrace --pid and --detach (launcher_attach.c): the launcher's side of attaching to a
// running process through gdb.
#ifndef MT_LAUNCHER_ATTACH_H
#define MT_LAUNCHER_ATTACH_H

#include <stddef.h>
#include <sys/types.h>

// Injects `lib` into process `pid`, records into `output` (absolute, or "" for
// memtrace.<name>.<pid>.db in the cwd) and stays until the process exits, a detach, or
// SIGINT/SIGTERM/SIGHUP (which detach). `report`: the run's report file; `settings`: from
// mt_launcher_attach_settings (launcher_settings.h). Returns the exit code.
int mt_launcher_attach(pid_t pid, const char* lib, const char* output, const char* report,
                       const char* settings);
// Stops the recording in `pid` and finishes its capture. Returns the exit code.
int mt_launcher_detach(pid_t pid);

#endif
