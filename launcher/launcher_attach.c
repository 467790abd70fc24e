// SPDX-License-Identifier: MIT
// memtrace --pid PID / --detach PID: gdb attaches to the process, dlopen's libmemtrace.so in it
// and calls memtrace_attach (or memtrace_detach), then lets it go on. The launcher waits
// meanwhile, like heaptrack -p: until the process exits, someone detaches, or it is
// interrupted (then it detaches). Every gdb run has a time limit. The process records with
// the launcher's MEMTRACE_* settings (as heaptrack -p uses its own), passed in the call.
#include "launcher_attach.h"

#include "launcher_settings.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define GDB_TIMEOUT_S 120

static bool have_gdb(void) {
    const char* path = getenv("PATH");
    char file[PATH_MAX];
    for (const char* p = path ? path : "/usr/bin:/bin"; *p;) {
        size_t n = strcspn(p, ":");
        snprintf(file, sizeof file, "%.*s/gdb", (int)n, p);
        if (n && access(file, X_OK) == 0)
            return true;
        p += n + (p[n] == ':');
    }
    return false;
}

// Runs gdb on `pid` with the commands `cmds` (NULL-terminated); its output (stdout and
// stderr) into out. Returns gdb's exit status, or -1 (could not run, or timed out: killed).
static int run_gdb(pid_t pid, const char* const* cmds, char* out, size_t outlen) {
    char pidstr[32];
    snprintf(pidstr, sizeof pidstr, "%d", (int)pid);
    const char* argv[64];
    int n = 0;
    // No init files, no debuginfod downloads, symbols only for the libraries named.
    const char* fixed[] = {"gdb",
                           "-nx",
                           "-batch",
                           "-iex",
                           "set debuginfod enabled off",
                           "-iex",
                           "set auto-solib-add off",
                           "-iex",
                           "set language c",
                           "-p",
                           pidstr};
    for (size_t i = 0; i < sizeof fixed / sizeof *fixed; i++)
        argv[n++] = fixed[i];
    for (; *cmds && n < 60; cmds++) {
        argv[n++] = "-ex";
        argv[n++] = *cmds;
    }
    argv[n] = NULL;
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0)
        return -1;
    pid_t child = fork();
    if (child < 0)
        return -1;
    if (child == 0) {
        // Its own process group: a Ctrl-C meant for the launcher (which then detaches) must
        // not interrupt gdb in the middle of a call in the process.
        setpgid(0, 0);
        dup2(fds[1], STDOUT_FILENO);
        dup2(fds[1], STDERR_FILENO);
        int null = open("/dev/null", O_RDONLY);
        if (null >= 0)
            dup2(null, STDIN_FILENO);
        unsetenv("DEBUGINFOD_URLS");
        execvp("gdb", (char* const*)argv);
        _exit(127);
    }
    close(fds[1]);
    fcntl(fds[0], F_SETFL, O_NONBLOCK);
    size_t got = 0;
    int status = -1;
    struct timespec start, now, tick = {0, 20 * 1000 * 1000};
    clock_gettime(CLOCK_MONOTONIC, &start);
    for (;;) {
        char buf[4096];
        ssize_t r;
        while ((r = read(fds[0], buf, sizeof buf)) > 0) {
            size_t k = (size_t)r < outlen - 1 - got ? (size_t)r : outlen - 1 - got;
            memcpy(out + got, buf, k);
            got += k;
        }
        pid_t w = waitpid(child, &status, WNOHANG);
        if (w == child)
            break;
        clock_gettime(CLOCK_MONOTONIC, &now);
        if (now.tv_sec - start.tv_sec > GDB_TIMEOUT_S) {
            kill(child, SIGKILL);
            waitpid(child, NULL, 0);
            status = -1;
            break;
        }
        nanosleep(&tick, NULL);
    }
    ssize_t r;
    char buf[4096];
    while ((r = read(fds[0], buf, sizeof buf)) > 0 && got < outlen - 1) {
        size_t k = (size_t)r < outlen - 1 - got ? (size_t)r : outlen - 1 - got;
        memcpy(out + got, buf, k);
        got += k;
    }
    out[got] = 0;
    close(fds[0]);
    return status < 0 ? -1 : WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// The value of gdb's last "$N = VALUE" line: 0 when there is one, -1 otherwise.
static int last_value(const char* out, char* value, size_t len) {
    const char* found = NULL;
    for (const char* p = out; (p = strstr(p, "$")); p++)
        if ((p == out || p[-1] == '\n') && strstr(p, " = ") && strchr(p, '\n') > strstr(p, " = "))
            found = strstr(p, " = ") + 3;
    if (!found)
        return -1;
    snprintf(value, len, "%.*s", (int)strcspn(found, "\n"), found);
    return 0;
}

// Why gdb could not do it, on one line, for the user.
static void explain_gdb_failure(pid_t pid, const char* out) {
    if (strstr(out, "ptrace: Operation not permitted"))
        fprintf(stderr,
                "memtrace: cannot attach to process %d: ptrace is not permitted (a process of "
                "another user needs root or CAP_SYS_PTRACE; one of your own needs "
                "/proc/sys/kernel/yama/ptrace_scope 0)\n",
                (int)pid);
    else if (strstr(out, "No such process"))
        fprintf(stderr, "memtrace: no process %d\n", (int)pid);
    else {
        fprintf(stderr, "memtrace: gdb failed on process %d:\n", (int)pid);
        mt_launcher_settings_fputs_escaped(out, stderr);
    }
}

static bool printable_path(const char* s) {
    return !strpbrk(s, "\"\\\n");
}

static volatile sig_atomic_t interrupted;
static void on_interrupt(int sig) {
    (void)sig;
    interrupted = 1;
}

// The process's state letter from /proc/PID/stat (R, S, Z, ...); 0 if there is none.
static char process_state(pid_t pid) {
    char path[64], stat[256];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    ssize_t n = read(fd, stat, sizeof stat - 1);
    close(fd);
    stat[n > 0 ? n : 0] = 0;
    const char* end = strrchr(stat, ')'); // the name may hold spaces and parentheses
    return end && end[1] == ' ' ? end[2] : 0;
}

bool mt_launcher_attach_process_gone(pid_t pid) {
    if (kill(pid, 0) != 0 && errno == ESRCH)
        return true;
    char state = process_state(pid);
    return !state || state == 'Z' || state == 'X';
}

// A zombie has no memory to attach to, and gdb's "ptrace: Operation not permitted" about it
// told root it needed root.
static bool refuse_zombie(pid_t pid) {
    char state = process_state(pid);
    if (state != 'Z' && state != 'X')
        return false;
    fprintf(stderr,
            "memtrace: process %d is a zombie: it has exited and waits for its parent to reap "
            "it; there is nothing left to attach to\n",
            (int)pid);
    return true;
}

// ---- the report file

// The process's filesystem user and group ("Uid:" and "Gid:" lines, the fourth number).
static int process_fs_ids(pid_t pid, uid_t* uid, gid_t* gid) {
    char path[64], line[256];
    snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
    FILE* f = fopen(path, "r");
    if (!f)
        return -1;
    int found = 0;
    unsigned long r, e, s, fs;
    while (fgets(line, sizeof line, f)) {
        if (sscanf(line, "Uid: %lu %lu %lu %lu", &r, &e, &s, &fs) == 4)
            *uid = (uid_t)fs, found |= 1;
        else if (sscanf(line, "Gid: %lu %lu %lu %lu", &r, &e, &s, &fs) == 4)
            *gid = (gid_t)fs, found |= 2;
    }
    fclose(f);
    return found == 3 ? 0 : -1;
}

static bool other_mount_namespace(pid_t pid) {
    char path[64];
    struct stat ours, theirs;
    snprintf(path, sizeof path, "/proc/%d/ns/mnt", (int)pid);
    return stat("/proc/self/ns/mnt", &ours) == 0 && stat(path, &theirs) == 0 &&
           (ours.st_ino != theirs.st_ino || ours.st_dev != theirs.st_dev);
}

const char* mt_launcher_attach_in_root(const mt_attach_report* r, const char* path) {
    if (r->root == AT_FDCWD)
        return path;
    while (*path == '/')
        path++;
    return *path ? path : ".";
}

int mt_launcher_attach_report(pid_t pid, mt_attach_report* r) {
    r->root = AT_FDCWD;
    char made[PATH_MAX + 64];
    size_t prefix = 0;
    const char* tmp = getenv("TMPDIR");
    if (other_mount_namespace(pid)) {
        char root[64];
        snprintf(root, sizeof root, "/proc/%d/root", (int)pid);
        r->root = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (r->root < 0)
            r->root = AT_FDCWD; // not ours to reach: it reports nothing, the launcher says so
        else
            prefix = strlen(root), tmp = NULL; // our TMPDIR may not be there
        snprintf(made, sizeof made, "%s/tmp/memtrace.XXXXXX", r->root == AT_FDCWD ? "" : root);
    }
    if (r->root == AT_FDCWD)
        snprintf(made, sizeof made, "%s/memtrace.XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(made))
        goto fail;
    snprintf(r->dir, sizeof r->dir, "%s", made + prefix);
    snprintf(r->file, sizeof r->file, "%s/captures", r->dir);
    int fd = openat(r->root, mt_launcher_attach_in_root(r, r->file),
                    O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0) {
        unlinkat(r->root, mt_launcher_attach_in_root(r, r->dir), AT_REMOVEDIR);
        goto fail;
    }
    // Root attaching to another user's process: the file is that user's to append to, in a
    // directory only we may change (so it cannot be swapped for a link to one of ours).
    uid_t uid;
    gid_t gid;
    if (geteuid() == 0 && process_fs_ids(pid, &uid, &gid) == 0 && uid != 0) {
        if (fchown(fd, uid, gid) == 0)
            fchmodat(r->root, mt_launcher_attach_in_root(r, r->dir), 0711, 0);
    }
    close(fd);
    if (r->root != AT_FDCWD) {
        r->dir_fd = openat(r->root, mt_launcher_attach_in_root(r, r->dir),
                           O_PATH | O_DIRECTORY | O_CLOEXEC);
        r->dir_held = r->dir_fd >= 0;
    }
    return 0;
fail:
    if (r->root != AT_FDCWD) {
        int e = errno;
        close(r->root);
        r->root = AT_FDCWD;
        errno = e;
    }
    return -1;
}

int mt_launcher_attach_open_report(const mt_attach_report* r) {
    if (r->dir_held)
        return openat(r->dir_fd, "captures", O_RDONLY | O_CLOEXEC);
    return openat(r->root, mt_launcher_attach_in_root(r, r->file), O_RDONLY | O_CLOEXEC);
}

void mt_launcher_attach_report_remove(mt_attach_report* r) {
    if (r->dir_held)
        close(r->dir_fd);
    r->dir_held = false;
    unlinkat(r->root, mt_launcher_attach_in_root(r, r->file), 0);
    unlinkat(r->root, mt_launcher_attach_in_root(r, r->dir), AT_REMOVEDIR);
    if (r->root != AT_FDCWD)
        close(r->root);
    r->root = AT_FDCWD;
}

// Whether the report file says the process detached ("=PID detached").
static bool detached_by_someone(const mt_attach_report* report, pid_t pid) {
    int fd = mt_launcher_attach_open_report(report);
    FILE* f = fd >= 0 ? fdopen(fd, "r") : NULL;
    if (!f) {
        if (fd >= 0)
            close(fd);
        return false;
    }
    char line[PATH_MAX + 64], want[64];
    snprintf(want, sizeof want, "=%d detached", (int)pid);
    bool found = false;
    while (!found && fgets(line, sizeof line, f))
        found = !strncmp(line, want, strlen(want));
    fclose(f);
    return found;
}

int mt_launcher_attach(pid_t pid, const char* lib, const char* output,
                       const mt_attach_report* report, const char* settings, bool* attached) {
    if (!have_gdb()) {
        fputs("memtrace: --pid needs gdb (Debian: apt-get install gdb)\n", stderr);
        return 1;
    }
    if (refuse_zombie(pid))
        return 1;
    char path[PATH_MAX];
    if (output[0]) {
        snprintf(path, sizeof path, "%s", output);
    } else {
        // memtrace.<name>.<pid>.db in the cwd, as for a program run by memtrace.
        char comm_path[64], comm[64] = "process", cwd[PATH_MAX];
        snprintf(comm_path, sizeof comm_path, "/proc/%d/comm", (int)pid);
        FILE* f = fopen(comm_path, "r");
        if (f && fgets(comm, sizeof comm, f))
            comm[strcspn(comm, "\n")] = 0;
        if (f)
            fclose(f);
        // As mt_config_program_part names a process: the name is the process's to choose.
        for (char* c = comm; *c; c++)
            if (!isalnum((unsigned char)*c) && !strchr("._+-", *c))
                *c = '_';
        if (!getcwd(cwd, sizeof cwd))
            snprintf(cwd, sizeof cwd, "/tmp");
        if (snprintf(path, sizeof path, "%.*s/memtrace.%s.%d.db", PATH_MAX - 128, cwd, comm,
                     (int)pid) >= (int)sizeof path)
            return 1;
    }
    if (!printable_path(path) || !printable_path(lib) || !printable_path(report->file)) {
        fprintf(stderr,
                "memtrace: %s: a path with quotes, backslashes or newlines cannot be "
                "passed to gdb\n",
                path);
        return 1;
    }
    // From now on an interruption means "detach once attached", never a half-done attach.
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_interrupt;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
    char load[PATH_MAX + 128], attach[3 * PATH_MAX + 8192], lines[4096];
    snprintf(load, sizeof load, "print (void*)((void*(*)(const char*, int))dlopen)(\"%s\", 2)",
             lib);
    // The settings' line ends as gdb's C string escapes (their values were checked: digits
    // and words only).
    size_t o = 0;
    for (const char* c = settings; *c && o + 3 < sizeof lines; c++) {
        if (*c == '\n')
            lines[o++] = '\\', lines[o++] = 'n';
        else
            lines[o++] = *c;
    }
    lines[o] = 0;
    snprintf(attach, sizeof attach,
             "print (int)((int(*)(const char*, const char*, const char*))memtrace_attach)(\"%s\", "
             "\"%s\", \"%s\")",
             path, report->file, lines);
    const char* cmds[] = {"sharedlibrary libc\\.so", load, "sharedlibrary libmemtrace", attach,
                          NULL};
    static char out[65536];
    int rc = run_gdb(pid, cmds, out, sizeof out);
    char value[256];
    if (rc != 0 || last_value(out, value, sizeof value) != 0 || strstr(value, "(void *) 0x0")) {
        explain_gdb_failure(pid, out);
        return 1;
    }
    int result = atoi(value);
    if (result == -EALREADY) {
        fprintf(stderr, "memtrace: process %d: already recording\n", (int)pid);
        return 1;
    }
    if (result == -EINVAL) {
        fprintf(stderr, "memtrace: process %d: its libmemtrace.so does not take these settings\n",
                (int)pid);
        return 1;
    }
    if (result != 0) { // the process creates the capture, as its own user
        fprintf(stderr, "memtrace: process %d: cannot record into %s: %s\n", (int)pid, path,
                strerror(-result));
        return 1;
    }
    *attached = true;
    fprintf(stderr,
            "memtrace: attached to process %d; recording until it exits, Ctrl-C here or "
            "memtrace --detach %d\n",
            (int)pid, (int)pid);
    // Known from the report's root, opened before the attach: the process may be gone now.
    if (report->root != AT_FDCWD || other_mount_namespace(pid))
        fprintf(stderr,
                "memtrace: process %d has a mount namespace of its own: its capture %s is in "
                "that namespace's filesystem (from here /proc/%d/root%s, while it runs)\n",
                (int)pid, path, (int)pid, path);
    struct timespec tick = {0, 50 * 1000 * 1000};
    while (!interrupted && !mt_launcher_attach_process_gone(pid) &&
           !detached_by_someone(report, pid))
        nanosleep(&tick, NULL);
    if (interrupted && !mt_launcher_attach_process_gone(pid))
        return mt_launcher_attach_detach(pid);
    return 0;
}

int mt_launcher_attach_detach(pid_t pid) {
    if (!have_gdb()) {
        fputs("memtrace: --detach needs gdb (Debian: apt-get install gdb)\n", stderr);
        return 1;
    }
    if (refuse_zombie(pid))
        return 1;
    const char* cmds[] = {"sharedlibrary libmemtrace",
                          "print (int)((int(*)(void))memtrace_detach)()", NULL};
    static char out[65536];
    int rc = run_gdb(pid, cmds, out, sizeof out);
    char value[256];
    if (rc != 0 || last_value(out, value, sizeof value) != 0) {
        if (strstr(out, "memtrace_detach"))
            fprintf(stderr, "memtrace: process %d: not attached (no libmemtrace.so in it)\n",
                    (int)pid);
        else
            explain_gdb_failure(pid, out);
        return 1;
    }
    if (atoi(value) != 0) {
        fprintf(stderr, "memtrace: process %d: not recording\n", (int)pid);
        return 1;
    }
    fprintf(stderr, "memtrace: detached from process %d\n", (int)pid);
    return 0;
}
