// SPDX-License-Identifier: MIT
// memtrace --pid and --detach (launcher_attach.c): the launcher's side of attaching to a
// running process through gdb.
#ifndef MT_LAUNCHER_ATTACH_H
#define MT_LAUNCHER_ATTACH_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

// The run's report file (MEMTRACE_REPORT) made where the process attached to can write it:
// owned by its user (when that is not ours: root attaching to another user's process), and
// in its filesystem when it has a mount namespace of its own (the launcher reaches it through
// `root`, the process's root directory, which stays open after the process is gone).
typedef struct mt_attach_report {
    int root;                 // AT_FDCWD, or the process's root directory (another namespace)
    char dir[PATH_MAX];       // the report's directory, as the process sees it
    char file[PATH_MAX + 16]; // the report file, as the process sees it
    // In another namespace, the report's directory held open: its mounts leave with the
    // namespace when the process ends, and the launcher reads the report after that.
    bool dir_held;
    int dir_fd;
} mt_attach_report;

// Creates the report for process `pid`. Returns 0 or -1 (errno set).
int mt_launcher_attach_report(pid_t pid, mt_attach_report* r);
// Opens the report file to read (O_RDONLY). Returns the fd or -1.
int mt_launcher_attach_open_report(const mt_attach_report* r);
// Removes it and closes the root.
void mt_launcher_attach_report_remove(mt_attach_report* r);
// `path`, as the process sees it, to open from here relative to r->root.
const char* mt_launcher_attach_in_root(const mt_attach_report* r, const char* path);

// Injects `lib` into process `pid`, records into `output` (absolute, or "" for
// memtrace.<name>.<pid>.db in the cwd) and stays until the process exits, a detach, or
// SIGINT/SIGTERM/SIGHUP (which detach). `report`: from mt_launcher_attach_report; `settings`:
// from mt_launcher_settings_for_attach (launcher_settings.h). `attached`: whether the recording
// started. Returns the exit code.
int mt_launcher_attach(pid_t pid, const char* lib, const char* output,
                       const mt_attach_report* report, const char* settings, bool* attached);
// Stops the recording in `pid` and finishes its capture. Returns the exit code.
int mt_launcher_attach_detach(pid_t pid);
// Whether the process has exited (a zombie too: it has no memory or namespaces left).
bool mt_launcher_attach_process_gone(pid_t pid);

#endif
