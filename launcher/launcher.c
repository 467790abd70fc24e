// SPDX-License-Identifier: MIT
// memtrace: runs a program under libmemtrace.so (the one beside this executable, or in
// ../lib/memtrace when installed), passes its exit status through, and says on stderr
// where the capture went, as heaptrack does.
#include "launcher_attach.h"
#include "launcher_settings.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define USAGE_LINE                                                                                 \
    "usage: memtrace [-o FILE | -o DIR/] [-f] [--delay DURATION] [--python-malloc] [--]\n"         \
    "                PROGRAM [ARGS...]\n"                                                          \
    "       memtrace --pid PID [-o FILE] [-f] | --detach PID\n"
static const char usage[] = USAGE_LINE
    "Runs PROGRAM with every heap call recorded into a capture file (SQLite).\n"
    "  --pid PID     attach to the running process PID (through gdb) and record from now on,\n"
    "                until it exits, Ctrl-C here or memtrace --detach PID (which leave it\n"
    "                running, untraced); frees of blocks allocated before are ignored.\n"
    "                Settings below: as set here, not the process's; START, SIGNAL,\n"
    "                DELAY_MS (--delay) and bad values are refused\n"
    "  --detach PID  stop recording in PID and finish its capture\n"
    "  -o FILE       capture path (%p becomes the pid); default memtrace.<program>.<pid>.db\n"
    "  -o DIR/       one capture per process of the tree in DIR (a path ending in '/', or an\n"
    "                existing directory): DIR/<pid>.<program>.db, each recording its parent's\n"
    "                pid; DIR is created (mode 0700) if missing, and refused if it is a\n"
    "                symlink, not yours, or writable by group or others. Read them all with\n"
    "                memreport summary DIR\n"
    "  -f, --force   overwrite FILE if it exists (never through a symlink; not for DIR/)\n"
    "  --delay DURATION\n"
    "                record nothing until DURATION (10s, 500ms, 2m) after the start; frees\n"
    "                of blocks allocated before then are ignored\n"
    "  --python-malloc\n"
    "                run Python with PYTHONMALLOC=malloc: every object is a malloc event of\n"
    "                the libc heap, no heap 'python' (the setting ..._PYTHONMALLOC=1 below)\n"
    "  -h, --help    this help\n"
    "  --version     print the version\n"
    "Captures are created private (mode 0600) and never overwrite an existing file: a\n"
    "process whose name is taken (an exec'd program, a forked child) writes NAME.<pid>.db\n"
    "or NAME.2.db, ...; every capture this run wrote is listed at the end.\n"
    "\n"
    "Settings (environment variables, default in brackets):\n";
// After the settings, which the table of settings.c gives (launcher_settings.h).
static const char usage_end[] =
    "\n"
    "Explore the capture with: memreport view CAPTURE (one HTML page: timeline, flame graph,\n"
    "tables); or read it with memreport summary|stacks|leaks|stats|plot|flamegraph CAPTURE\n"
    "('memreport --help' lists every command).\n"
    "Documentation: README.md and docs/ (docs/tracing.md: tracing and every setting), in\n"
    "the source and in share/doc/memtrace/ when installed.\n";

static int find_library(char* out, size_t len) {
    char self[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0)
        return -1;
    self[n] = 0;
    char* dir = dirname(self);
    static const char* const candidates[] = {"/libmemtrace.so", "/../lib/memtrace/libmemtrace.so",
                                             "/../lib/libmemtrace.so"};
    for (size_t i = 0; i < sizeof candidates / sizeof *candidates; i++) {
        snprintf(out, len, "%s%s", dir, candidates[i]);
        if (access(out, R_OK) == 0)
            return 0;
    }
    return -1;
}

// PROGRAM as execvp would find it, for the diagnosis of a run that wrote no capture.
static int find_program(const char* prog, char* out, size_t len) {
    if (strchr(prog, '/')) {
        snprintf(out, len, "%s", prog);
        return access(out, X_OK);
    }
    const char* path = getenv("PATH");
    for (const char* p = path ? path : "/usr/bin:/bin"; *p;) {
        size_t n = strcspn(p, ":");
        snprintf(out, len, "%.*s/%s", (int)n, p, prog);
        if (n && access(out, X_OK) == 0)
            return 0;
        p += n + (p[n] == ':');
    }
    return -1;
}

// 1: an ELF executable without a program interpreter, which the dynamic loader (and so
// LD_PRELOAD) never runs; 0: anything else.
static int is_static_elf(const char* path) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    Elf64_Ehdr eh;
    int is_static = 0;
    if (pread(fd, &eh, sizeof eh, 0) == (ssize_t)sizeof eh &&
        !memcmp(eh.e_ident, ELFMAG, SELFMAG) && eh.e_ident[EI_CLASS] == ELFCLASS64 &&
        eh.e_phentsize == sizeof(Elf64_Phdr)) {
        is_static = 1;
        for (int i = 0; i < eh.e_phnum; i++) {
            Elf64_Phdr ph;
            if (pread(fd, &ph, sizeof ph, (off_t)(eh.e_phoff + (Elf64_Off)i * sizeof ph)) !=
                (ssize_t)sizeof ph)
                break;
            if (ph.p_type == PT_INTERP)
                is_static = 0;
        }
    }
    close(fd);
    return is_static;
}

// -o DIR/: the directory (out, absolute, without its trailing slashes) made ready for one
// capture per process and given back with one '/' at its end, the tracer's sign of a
// directory. The tracer checks it again for each process (output.c); this says why first.
static int prepare_dir(const char* output, char* out, size_t len) {
    size_t n = strlen(out);
    while (n > 1 && out[n - 1] == '/')
        out[--n] = 0;
    struct stat st;
    const char* why = NULL;
    if (lstat(out, &st) != 0) {
        if (errno != ENOENT || mkdir(out, 0700) != 0) {
            fprintf(stderr, "memtrace: cannot create directory %s: %s\n", output, strerror(errno));
            return -1;
        }
    } else if (S_ISLNK(st.st_mode)) {
        why = "is a symlink; captures go only into a real directory";
    } else if (!S_ISDIR(st.st_mode)) {
        why = "is not a directory";
    } else if (st.st_uid != geteuid()) {
        why = "is not your directory; another user could read or replace the captures";
    } else if (st.st_mode & (S_IWGRP | S_IWOTH)) {
        why = "is writable by group or others, who could read or replace the captures";
    }
    if (why) {
        fprintf(stderr, "memtrace: %s %s\n", output, why);
        return -1;
    }
    if (n + 2 > len) {
        fprintf(stderr, "memtrace: %s: path too long\n", output);
        return -1;
    }
    strcat(out, "/");
    return 0;
}

// The -o path, absolute (the program may chdir before its capture is created); an existing
// file is refused unless `force`. A path ending in '/' or an existing directory (not a
// symlink to one) takes one capture per process (prepare_dir).
static int prepare_output(const char* output, int force, char* out, size_t len) {
    char cwd[PATH_MAX];
    int n = output[0] == '/' || !getcwd(cwd, sizeof cwd) ? snprintf(out, len, "%s", output)
                                                         : snprintf(out, len, "%s/%s", cwd, output);
    if (n < 0 || (size_t)n >= len - 1) {
        fprintf(stderr, "memtrace: %s: path too long\n", output);
        return -1;
    }
    if (strstr(out, "%p"))
        return 0; // a name per process: nothing exists yet
    struct stat st;
    bool is_dir = lstat(out, &st) == 0 && S_ISDIR(st.st_mode);
    if (out[n - 1] == '/' || is_dir)
        return prepare_dir(output, out, len);
    if (lstat(out, &st) != 0)
        return 0;
    if (!force) {
        fprintf(stderr, "memtrace: %s exists; use -f to overwrite it\n", output);
        return -1;
    }
    // unlink removes a symlink itself, never its target.
    if (unlink(out) != 0) {
        fprintf(stderr, "memtrace: cannot remove %s: %s\n", output, strerror(errno));
        return -1;
    }
    return 0;
}

// The file where every traced process of this run says what it wrote (MEMTRACE_REPORT).
static int make_report(char* dir, size_t dirlen, char* file, size_t filelen) {
    const char* tmp = getenv("TMPDIR");
    snprintf(dir, dirlen, "%s/memtrace.XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(dir))
        return -1;
    snprintf(file, filelen, "%s/captures", dir);
    int fd = open(file, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0) {
        rmdir(dir);
        return -1;
    }
    close(fd);
    return 0;
}

// `path` as the user would write it from here: relative below the cwd, absolute elsewhere.
static const char* relative_to_cwd(const char* path) {
    static char cwd[PATH_MAX];
    size_t n = getcwd(cwd, sizeof cwd) ? strlen(cwd) : 0;
    if (n > 1 && !strncmp(path, cwd, n) && path[n] == '/')
        return path + n + 1;
    return path;
}

// Why the capture of process `pid` was not finished (its tracer had no last word): the
// program's own status where the launcher knows it (`main_pid`, `main_status`).
static void why_unfinished(char* out, size_t len, long pid, pid_t main_pid, int main_status) {
    if (pid == main_pid && WIFSIGNALED(main_status))
        snprintf(out, len, "process %ld was killed by signal %d (%s)", pid, WTERMSIG(main_status),
                 strsignal(WTERMSIG(main_status)));
    else if (pid == main_pid)
        snprintf(out, len,
                 "process %ld ended without running its exit handlers (a raw exit_group system "
                 "call, as Go programs make)",
                 pid);
    else
        snprintf(out, len, "process %ld ended without finishing it (killed, or a raw exit_group)",
                 pid);
}

// Whether process `pid` still runs (one of the tree the program left behind).
static bool still_runs(long pid) {
    return pid > 0 && pid <= INT_MAX && (kill((pid_t)pid, 0) == 0 || errno == EPERM);
}

enum { MAX_LINES = 4096 };
static char lines[MAX_LINES][PATH_MAX + 64];

// The report's lines ("+pid path", "-pid why", ".pid path", "~pid watcher") into lines[];
// how many.
static int read_report(const mt_attach_report* r) {
    int fd = mt_launcher_attach_open_report(r);
    FILE* f = fd >= 0 ? fdopen(fd, "r") : NULL;
    if (!f) {
        if (fd >= 0)
            close(fd);
        return 0;
    }
    int n = 0;
    while (n < MAX_LINES && fgets(lines[n], sizeof lines[n], f))
        if (strchr(lines[n], ' ') && strchr("+-.~", lines[n][0]))
            lines[n][strcspn(lines[n], "\n")] = 0, n++;
    fclose(f);
    return n;
}

// Whether process `pid` has a ".pid path" line among the n lines.
static bool finished_pid(const char* pid, size_t pidlen, int n) {
    for (int k = 0; k < n; k++)
        if (lines[k][0] == '.' && !strncmp(lines[k] + 1, pid, pidlen) &&
            lines[k][pidlen + 1] == ' ')
            return true;
    return false;
}

// Whether task `pid` runs: not gone, not a zombie (init may be slow to reap, or never).
static bool task_runs(long pid) {
    char path[64], stat[256];
    snprintf(path, sizeof path, "/proc/%ld/stat", pid);
    FILE* f = fopen(path, "re");
    size_t n = f ? fread(stat, 1, sizeof stat - 1, f) : 0;
    if (f)
        fclose(f);
    stat[n] = 0;
    const char* end = strrchr(stat, ')');
    return end && end[1] == ' ' && end[2] != 'Z' && end[2] != 'X';
}

// A process that ended without the tracer's exit handler (a raw exit_group, a signal) has
// its capture finished by its exit watcher (preload/writer/exit_watch.h), named by a
// "~pid watcher" line: waits for those still at work, at most a little longer than a
// watcher may take.
static void wait_for_exit_watchers(const mt_attach_report* r) {
    for (int waited_ms = 0; waited_ms < 12000; waited_ms += 10) {
        int n = read_report(r);
        bool busy = false;
        for (int i = 0; i < n && !busy; i++) {
            const char* text = strchr(lines[i], ' ') + 1;
            size_t pidlen = (size_t)(text - lines[i] - 2);
            busy = lines[i][0] == '~' && !finished_pid(lines[i] + 1, pidlen, n) &&
                   !still_runs(strtol(lines[i] + 1, NULL, 10)) && task_runs(strtol(text, NULL, 10));
        }
        if (!busy)
            return;
        struct timespec ms10 = {0, 10000000};
        nanosleep(&ms10, NULL);
    }
}

// A process that had a mount namespace of its own has exited: the kernel detaches that
// namespace's mounts a moment after the process is a zombie, and until then its captures
// still look reachable from here. Waits for them to go, at most a second (a namespace that
// other processes share keeps its mounts).
static void wait_for_namespace_end(const mt_attach_report* r, pid_t ns_pid, int n) {
    if (!mt_launcher_attach_process_gone(ns_pid))
        return; // detached: it runs on, and so does its namespace
    struct timespec ms10 = {0, 10000000};
    for (int tries = 0; tries < 100; tries++) {
        bool reachable = false;
        for (int i = 0; i < n && !reachable; i++)
            reachable = lines[i][0] == '+' &&
                        faccessat(r->root, mt_launcher_attach_in_root(r, strchr(lines[i], ' ') + 1),
                                  F_OK, 0) == 0;
        if (!reachable)
            return;
        nanosleep(&ms10, NULL);
    }
}

// What the report says of line i's process: why it failed (NULL: it did not), whether its
// capture `text` was finished, and whether any capture of it exists.
static void process_state(const mt_attach_report* r, int n, int i, const char** why, bool* finished,
                          bool* has_capture) {
    const char* text = strchr(lines[i], ' ') + 1;
    size_t pidlen = (size_t)(text - lines[i] - 2);
    *why = NULL;
    *finished = *has_capture = false;
    for (int k = 0; k < n; k++) {
        if (strncmp(lines[k] + 1, lines[i] + 1, pidlen + 1) != 0)
            continue;
        const char* said = strchr(lines[k], ' ') + 1;
        if (lines[k][0] == '.')
            *finished |= !strcmp(said, text);
        else if (lines[k][0] == '-')
            *why = said;
        else if (lines[k][0] == '+' &&
                 faccessat(r->root, mt_launcher_attach_in_root(r, said), F_OK, 0) == 0)
            *has_capture = true;
    }
}

// At a terminal, a run that finished more than SAID_ONE_BY_ONE captures, all in one directory
// (a build traced with -o DIR/), has them said in one line; the others are said each. The
// directory's length, or 0 to say each. Scripts (stderr not a terminal) get every line.
#define SAID_ONE_BY_ONE 8
static size_t one_directory(const mt_attach_report* r, int n, pid_t ns_pid) {
    if (ns_pid || !isatty(STDERR_FILENO))
        return 0;
    const char* first = NULL;
    size_t dirlen = 0;
    int finished_ok = 0;
    for (int i = 0; i < n; i++) {
        const char* text = strchr(lines[i], ' ') + 1;
        const char* why;
        bool finished, has_capture;
        if (lines[i][0] != '+' ||
            faccessat(r->root, mt_launcher_attach_in_root(r, text), F_OK, 0) != 0)
            continue;
        process_state(r, n, i, &why, &finished, &has_capture);
        if (!finished || why)
            continue;
        const char* slash = strrchr(text, '/');
        size_t len = slash ? (size_t)(slash - text) + 1 : 0;
        if (!first) {
            first = text;
            dirlen = len;
        } else if (len != dirlen || strncmp(text, first, len) != 0) {
            return 0;
        }
        finished_ok++;
    }
    return finished_ok > SAID_ONE_BY_ONE && dirlen ? dirlen : 0;
}

// Says which captures the run wrote ("+pid path" lines of the report) and what went wrong
// ("-pid why"): a capture whose process then failed is named as incomplete, with the reason;
// one never finished (no ".pid path" line: the process and its exit watcher were killed, or
// the watcher gave up) as truncated, or as still being written by a process that runs.
// `ns_pid`: the process attached to, whose files are in a mount namespace of its own (0: ours).
// `main_pid` and `main_status`: the program the launcher ran and its wait status (0: none).
// Returns how many captures exist.
static int tell_captures(const mt_attach_report* r, pid_t ns_pid, pid_t main_pid, int main_status) {
    wait_for_exit_watchers(r);
    int n = read_report(r), written = 0, main_images = 0;
    if (ns_pid)
        wait_for_namespace_end(r, ns_pid, n);
    const char* last = NULL; // the capture written (in lines), to say how to look at it
    // The finished capture of the program's last image: a wrapper (a pyenv shim, env, a
    // script that ends in exec) runs the program the user means last, in the same process.
    const char* main_last = NULL;
    size_t condensed = one_directory(r, n, ns_pid); // the directory's length, or 0
    int said_together = 0;
    const char* together = NULL; // the first of them, as shown: its directory is theirs
    for (int i = 0; i < n; i++) {
        char* text = strchr(lines[i], ' ') + 1;
        size_t pidlen = (size_t)(text - lines[i] - 2);
        const char* why; // this process's failure, if any
        bool has_capture, finished;
        process_state(r, n, i, &why, &finished, &has_capture);
        if (lines[i][0] == '+' &&
            faccessat(r->root, mt_launcher_attach_in_root(r, text), F_OK, 0) == 0) {
            written++;
            char where[PATH_MAX + 160] = "";
            if (ns_pid)
                snprintf(where, sizeof where,
                         ", in process %d's mount namespace (from here /proc/%d/root%s, while "
                         "it runs)",
                         (int)ns_pid, (int)ns_pid, text);
            const char* shown = ns_pid ? text : relative_to_cwd(text);
            long pid = strtol(lines[i] + 1, NULL, 10);
            if (main_pid && pid == main_pid) { // the last image's, if it was finished
                main_images++;
                main_last = finished && !why && !ns_pid ? shown : NULL;
            }
            char unfinished[256];
            if (why) {
                fprintf(stderr, "memtrace: incomplete capture written to %s%s (%s)\n", shown, where,
                        why);
            } else if (finished && condensed) {
                if (!said_together++)
                    together = shown;
                last = shown;
            } else if (finished) {
                fprintf(stderr, "memtrace: capture written to %s%s\n", shown, where);
                if (!ns_pid)
                    last = shown;
            } else if (still_runs(pid)) {
                fprintf(stderr,
                        "memtrace: capture still being written to %s%s: process %ld runs on\n",
                        shown, where, pid);
            } else {
                why_unfinished(unfinished, sizeof unfinished, pid, main_pid, main_status);
                fprintf(stderr,
                        "memtrace: truncated capture written to %s%s: %s; the events after its "
                        "last commit (MEMTRACE_COMMIT_MS, 10 ms by default) are missing\n",
                        shown, where, unfinished);
            }
        } else if (lines[i][0] == '+' && ns_pid) {
            // Its namespace ended with it: the mounts the capture was on are gone from its root.
            fprintf(stderr,
                    "memtrace: capture written to %s in process %d's mount namespace, which "
                    "ended with it: not reachable from here%s\n",
                    text, (int)ns_pid, why ? " (incomplete)" : "");
        } else if (lines[i][0] == '-' && !has_capture) {
            fprintf(stderr, "memtrace: process %.*s: %s\n", (int)pidlen, lines[i] + 1, text);
        }
    }
    if (said_together) {
        const char* slash = strrchr(together, '/'); // none: they are in the working directory
        int dir = slash ? (int)(slash - together + 1) : 2;
        if (!slash)
            together = "./";
        fprintf(stderr,
                "memtrace: %d captures written to %.*s, one a process: memreport summary %.*s "
                "shows them as one run, its processes as a tree\n",
                said_together, dir, together, dir, together);
    }
    // One finished capture: the way in is the page that shows all of it. Said to a person at a
    // terminal only: scripts read "capture written to" as the last line.
    if (written == 1 && last && isatty(STDERR_FILENO))
        fprintf(stderr, "memtrace: explore it in a browser: memreport view %s\n", last);
    else if (main_images > 1 && main_last && isatty(STDERR_FILENO))
        fprintf(stderr,
                "memtrace: the program ran in process %d as %d images (exec); explore the "
                "last in a browser: memreport view %s\n",
                (int)main_pid, main_images, main_last);
    return written;
}

// Whether any traced process of the run said anything (a capture, or why not).
static bool heard_of_any(const char* report) {
    struct stat st;
    return stat(report, &st) == 0 && st.st_size > 0;
}

static void explain_no_capture(const char* prog) {
    char path[PATH_MAX];
    struct stat st;
    if (find_program(prog, path, sizeof path) != 0)
        return; // the exec failed and said so
    if (is_static_elf(path))
        fprintf(stderr,
                "memtrace: %s is statically linked: LD_PRELOAD cannot trace it; no capture "
                "written\n",
                prog);
    else if (stat(path, &st) == 0 && (st.st_mode & (S_ISUID | S_ISGID)))
        fprintf(stderr,
                "memtrace: %s is set-user-ID or set-group-ID: the loader ignores LD_PRELOAD; "
                "no capture written\n",
                prog);
    else
        fprintf(stderr, "memtrace: no capture written: %s did not load libmemtrace.so\n", prog);
}

// A usage error: what is wrong, then the usage line (the full help is one --help away).
static int usage_error(const char* what, const char* arg) {
    fprintf(stderr, "memtrace: %s%s%s%s\n" USAGE_LINE "('memtrace --help' for the options)\n", what,
            arg ? " '" : "", arg ? arg : "", arg ? "'" : "");
    return 1;
}

// Puts lib first in LD_PRELOAD, keeping what was there. Returns 0 or -1.
static int prepend_preload(const char* lib) {
    const char* old = getenv("LD_PRELOAD");
    char* preload;
    if (asprintf(&preload, "%s%s%s", lib, old && *old ? ":" : "", old ? old : "") < 0)
        return -1;
    setenv("LD_PRELOAD", preload, 1);
    free(preload);
    return 0;
}

// A process id argument: 0 when it is not one.
static pid_t parse_pid(const char* s) {
    char* end;
    long v = strtol(s, &end, 10);
    return *s && !*end && v > 0 && v <= INT_MAX ? (pid_t)v : 0;
}

// --delay DURATION: 10s, 500ms, 2m, 1h, or plain seconds; -1 when not one.
static long parse_delay_ms(const char* s) {
    char* end;
    double v = strtod(s, &end);
    double unit = !strcmp(end, "ms")           ? 1
                  : !*end || !strcmp(end, "s") ? 1000
                  : !strcmp(end, "m")          ? 60000
                  : !strcmp(end, "h")          ? 3600000
                                               : -1;
    if (end == s || unit < 0 || !(v >= 0) || v * unit > 2e9)
        return -1;
    return (long)(v * unit + 0.5);
}

// memtrace --pid: the capture path made ready as for a program (-o), the report file
// created, and the run's captures told at the end.
static int attach_to(pid_t pid, const char* output, int force) {
    char lib[PATH_MAX], out_path[PATH_MAX] = "", settings[4096];
    if (mt_launcher_settings_for_attach(settings, sizeof settings) != 0)
        return 1; // before -f removes anything
    const char* env_output = getenv("MEMTRACE_OUTPUT");
    if (!output && env_output && *env_output)
        output = env_output;
    if (find_library(lib, sizeof lib) != 0) {
        fputs("memtrace: cannot find libmemtrace.so beside this program\n", stderr);
        return 1;
    }
    if (output && prepare_output(output, force, out_path, sizeof out_path) != 0)
        return 1;
    static mt_attach_report report;
    if (mt_launcher_attach_report(pid, &report) != 0) {
        fprintf(stderr, "memtrace: cannot create a temporary directory: %s\n", strerror(errno));
        return 1;
    }
    bool attached = false;
    int rc = mt_launcher_attach(pid, lib, out_path, &report, settings, &attached);
    signal(SIGPIPE, SIG_IGN); // as run_traced: the status is worth more than the message
    signal(SIGXFSZ, SIG_IGN);
    if (attached) // else the launcher has said why, as the process's report line would
        tell_captures(&report, report.root == AT_FDCWD ? 0 : pid, 0, 0);
    mt_launcher_attach_report_remove(&report);
    return rc;
}

// The traced program, once forked (pass_on).
static volatile pid_t traced_pid;

// The launcher stands between the program and the one who started it. A signal that a
// process sent the launcher (`kill PID`, a supervisor or a test harness stopping what it
// started) is meant for the program: passed on, so that it ends (or reloads, or dumps) as
// it would untraced, and the launcher then tells the captures and exits as it did. Not
// passed on: what the kernel sent (^C, ^\ and a hangup from the terminal reached the
// program itself, in the same process group), and what the program sent, to its parent or
// to its whole process group (kill(0, sig)): taken, so it neither kills the launcher nor
// goes anywhere else. A signal sent to the whole process group from outside reaches the
// program twice, directly and passed on (two pending at once are one).
static void pass_on(int sig, siginfo_t* info, void* context) {
    (void)context;
    int saved = errno;
    bool from_a_process = info->si_code <= 0; // SI_USER, SI_QUEUE, SI_TKILL: kill(2) and kin
    if (traced_pid > 0 && from_a_process && info->si_pid != traced_pid)
        kill(traced_pid, sig);
    errno = saved;
}

static const int passed[] = {SIGHUP, SIGINT, SIGQUIT, SIGTERM, SIGUSR1, SIGUSR2, SIGALRM};

static void passed_signals(sigset_t* set) {
    sigemptyset(set);
    for (size_t i = 0; i < sizeof passed / sizeof *passed; i++)
        sigaddset(set, passed[i]);
}

static void pass_signals_on(pid_t pid) {
    traced_pid = pid;
    struct sigaction sa = {.sa_sigaction = pass_on, .sa_flags = SA_SIGINFO | SA_RESTART};
    sigemptyset(&sa.sa_mask);
    for (size_t i = 0; i < sizeof passed / sizeof *passed; i++)
        sigaction(passed[i], &sa, NULL);
}

// memtrace PROGRAM: runs prog_argv with libmemtrace.so preloaded, waits for it, tells the
// captures it wrote, and exits as it did.
static int run_traced(char** prog_argv, const char* output, int force) {
    if (mt_launcher_settings_check() != 0)
        return 1; // before -f removes anything
    // Static, as the launcher runs once: a program may be run with a small stack limit
    // (ulimit -s 32 KiB), which the launcher has too.
    static char lib[PATH_MAX];
    if (find_library(lib, sizeof lib) != 0) {
        fputs("memtrace: cannot find libmemtrace.so beside this program\n", stderr);
        return 1;
    }
    static char out_path[PATH_MAX];
    if (output) {
        if (prepare_output(output, force, out_path, sizeof out_path) != 0)
            return 1;
        setenv("MEMTRACE_OUTPUT", out_path, 1);
    }
    static char report_dir[PATH_MAX], report[PATH_MAX + 16];
    if (make_report(report_dir, sizeof report_dir, report, sizeof report) != 0) {
        fprintf(stderr, "memtrace: cannot create a temporary directory: %s\n", strerror(errno));
        return 1;
    }
    setenv("MEMTRACE_REPORT", report, 1);
    const char* python_malloc = getenv("MEMTRACE_PYTHONMALLOC");
    if (python_malloc && !strcmp(python_malloc, "1")) // the tracer leaves CPython's as they are
        setenv("PYTHONMALLOC", "malloc", 1);
    if (prepend_preload(lib) != 0)
        return 1;
    // Started with SIGCHLD ignored (a parent's, kept across exec), the kernel would reap the
    // program at once and its status be lost: the launcher waits with the default action,
    // and the program starts with what it would have had untraced.
    struct sigaction chld_dfl = {.sa_handler = SIG_DFL}, chld_given;
    sigaction(SIGCHLD, &chld_dfl, &chld_given);
    // Held from the fork until pass_on is in place: one sent to the launcher in between
    // would kill it and leave the program running, orphaned.
    sigset_t held, old_mask;
    passed_signals(&held);
    sigprocmask(SIG_BLOCK, &held, &old_mask);
    pid_t launcher = getpid();
    // The launcher itself must not be traced by a preload it inherited.
    pid_t pid = fork();
    if (pid < 0) {
        perror("memtrace: fork");
        return 1;
    }
    if (pid == 0) {
        // SIGKILL, which the launcher cannot pass on, reaches the program too: killing the
        // launcher's pid left it running, orphaned. (Kept across exec; a set-user-ID
        // program drops it.)
        if (prctl(PR_SET_PDEATHSIG, SIGKILL) == 0 && getppid() != launcher)
            raise(SIGKILL); // the launcher was killed before the call
        sigaction(SIGCHLD, &chld_given, NULL);
        sigprocmask(SIG_SETMASK, &old_mask, NULL);
        execvp(prog_argv[0], prog_argv);
        fprintf(stderr, "memtrace: cannot run %s: %s\n", prog_argv[0], strerror(errno));
        _exit(127);
    }
    pass_signals_on(pid);
    // Its stderr a pipe nobody reads or a file at the size limit (ulimit -f), naming the
    // captures must not kill the launcher (the program's status would be lost); the program
    // has its own dispositions.
    signal(SIGPIPE, SIG_IGN);
    signal(SIGXFSZ, SIG_IGN);
    sigprocmask(SIG_SETMASK, &old_mask, NULL);
    // Waited for without reaping first: once reaped, its pid may be another process's, which
    // pass_on must not signal.
    siginfo_t ended;
    while (waitid(P_PID, (id_t)pid, &ended, WEXITED | WNOWAIT) < 0 && errno == EINTR)
        ;
    traced_pid = 0;
    int status;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    static mt_attach_report here = {.root = AT_FDCWD};
    snprintf(here.file, sizeof here.file, "%s", report);
    if (tell_captures(&here, 0, pid, status) == 0 && !heard_of_any(report))
        explain_no_capture(prog_argv[0]);
    unlink(report);
    rmdir(report_dir);
    if (WIFSIGNALED(status)) {
        // Die the same way, so the caller sees the same status.
        signal(WTERMSIG(status), SIG_DFL);
        raise(WTERMSIG(status));
        return 128 + WTERMSIG(status);
    }
    return WEXITSTATUS(status);
}

int main(int argc, char** argv) {
    const char* output = NULL;
    int force = 0;
    pid_t attach_pid = 0;
    int i = 1;
    for (; i < argc; i++) {
        if (!strcmp(argv[i], "--")) {
            i++;
            break;
        } else if (!strcmp(argv[i], "--pid") || !strcmp(argv[i], "--detach")) {
            pid_t pid = i + 1 < argc ? parse_pid(argv[i + 1]) : 0;
            if (!pid)
                return usage_error(argv[i][2] == 'p' ? "--pid needs a process id"
                                                     : "--detach needs a process id",
                                   i + 1 < argc ? argv[i + 1] : NULL);
            if (argv[i][2] == 'd')
                return mt_launcher_attach_detach(pid);
            attach_pid = pid;
            i++;
        } else if (!strcmp(argv[i], "-o")) {
            if (i + 1 >= argc)
                return usage_error("-o needs a FILE", NULL);
            output = argv[++i];
        } else if (!strcmp(argv[i], "-f") || !strcmp(argv[i], "--force")) {
            force = 1;
        } else if (!strcmp(argv[i], "--delay")) {
            long ms = i + 1 < argc ? parse_delay_ms(argv[i + 1]) : -1;
            if (ms < 0)
                return usage_error("--delay needs a DURATION (10s, 500ms, 2m)",
                                   i + 1 < argc ? argv[i + 1] : NULL);
            // The tracer starts stopped and its writer thread starts recording at the time.
            char v[32];
            snprintf(v, sizeof v, "%ld", ms);
            setenv("MEMTRACE_DELAY_MS", v, 1);
            i++;
        } else if (!strcmp(argv[i], "--python-malloc")) {
            setenv("MEMTRACE_PYTHONMALLOC", "1", 1);
        } else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            fputs(usage, stdout);
            mt_launcher_settings_print(stdout);
            fputs(usage_end, stdout);
            return 0;
        } else if (!strcmp(argv[i], "--version")) {
            printf("memtrace %s\n", MEMTRACE_VERSION_STRING);
            return 0;
        } else if (argv[i][0] == '-') {
            return usage_error("unknown option", argv[i]);
        } else {
            break;
        }
    }
    if (attach_pid)
        return i < argc ? usage_error("--pid takes no PROGRAM", argv[i])
                        : attach_to(attach_pid, output, force);
    if (i >= argc) {
        return usage_error("no PROGRAM to run", NULL);
    }
    return run_traced(argv + i, output, force);
}
