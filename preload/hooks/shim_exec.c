// SPDX-License-Identifier: MIT
// The exec family. A successful exec replaces the image without running destructors, so the
// capture is finished first (every buffered event, names, status 'complete'); the new image
// starts a capture of its own under a free name (output.h). If the exec fails, this image
// goes on recording into a new capture. The call itself is unchanged: same arguments, same
// environment, same result and errno.
#include "bootstrap.h"
#include "core.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <sys/stat.h>
#include <unistd.h>

extern char** environ;

static inline void ensure_real(void) {
    if (MT_UNLIKELY(!mt_bootstrap_ready()))
        mt_bootstrap_resolve();
}

static int exec_failed(int rc) {
    int saved = errno;
    mt_core_after_failed_exec();
    errno = saved;
    return rc;
}

// Whether the kernel will refuse to run `path` before it replaces the image: no such file,
// not a regular file, not executable (or on a noexec mount). A shell's PATH search (dash,
// busybox) calls execve once per directory until one succeeds: finishing and restarting the
// capture at each miss split one image's events into as many captures. Only those answers
// count: a call a seccomp filter refuses (EPERM, ENOSYS) says nothing of the exec.
static bool exec_cannot_start(const char* path) {
    int saved = errno;
    struct stat st;
    bool cannot;
    if (stat(path, &st) != 0)
        cannot = errno == ENOENT || errno == ENOTDIR;
    else if (!S_ISREG(st.st_mode))
        cannot = true;
    else
        cannot = faccessat(AT_FDCWD, path, X_OK, AT_EACCESS) != 0 && errno == EACCES;
    errno = saved;
    return cannot;
}

MT_EXPORT int execve(const char* path, char* const argv[], char* const envp[]) {
    ensure_real();
    if (exec_cannot_start(path))
        return mt_real.execve(path, argv, envp);
    mt_core_before_exec();
    return exec_failed(mt_real.execve(path, argv, envp));
}

MT_EXPORT int execv(const char* path, char* const argv[]) {
    return execve(path, argv, environ);
}

MT_EXPORT int execvpe(const char* file, char* const argv[], char* const envp[]) {
    ensure_real();
    mt_core_before_exec();
    return exec_failed(mt_real.execvpe(file, argv, envp));
}

MT_EXPORT int execvp(const char* file, char* const argv[]) {
    return execvpe(file, argv, environ);
}

MT_EXPORT int fexecve(int fd, char* const argv[], char* const envp[]) {
    ensure_real();
    mt_core_before_exec();
    return exec_failed(mt_real.fexecve(fd, argv, envp));
}

// execl, execle, execlp: the list becomes an argv array (from the real malloc: untraced, and
// gone with the image when the exec succeeds), then `*envp` the argument after the NULL.
static char** arg_array(const char* first, va_list ap, char* const** envp) {
    va_list count;
    va_copy(count, ap);
    size_t argc = 1;
    while (va_arg(count, char*))
        argc++;
    va_end(count);
    char** args = mt_real.malloc((argc + 1) * sizeof *args);
    if (!args) {
        errno = ENOMEM;
        return NULL;
    }
    args[0] = (char*)first;
    for (size_t i = 1; i <= argc; i++)
        args[i] = va_arg(ap, char*);
    if (envp)
        *envp = va_arg(ap, char* const*);
    return args;
}

static int exec_list(int (*exec)(const char*, char* const[], char* const[]), const char* file,
                     char** args, char* const* envp) {
    if (!args)
        return -1;
    int rc = exec(file, args, envp);
    int saved = errno;
    mt_real.free(args);
    errno = saved;
    return rc;
}

MT_EXPORT int execl(const char* path, const char* arg, ...) {
    ensure_real();
    va_list ap;
    va_start(ap, arg);
    char** args = arg_array(arg, ap, NULL);
    va_end(ap);
    return exec_list(execve, path, args, environ);
}

MT_EXPORT int execlp(const char* file, const char* arg, ...) {
    ensure_real();
    va_list ap;
    va_start(ap, arg);
    char** args = arg_array(arg, ap, NULL);
    va_end(ap);
    return exec_list(execvpe, file, args, environ);
}

MT_EXPORT int execle(const char* path, const char* arg, ...) {
    ensure_real();
    va_list ap;
    va_start(ap, arg);
    char* const* envp = NULL;
    char** args = arg_array(arg, ap, &envp);
    va_end(ap);
    return exec_list(execve, path, args, envp);
}
