// SPDX-License-Identifier: MIT
// e2e truth: fork + exec. The parent does known work; a forked child does its own known
// work and ends with _exit (truth in $TRUTH_FILE.child); a second child execs the program
// named in argv[1] (e2e_leaks) with TRUTH_FILE=$TRUTH_FILE.exec. The parent's truth holds
// the children's pids. argv[2] == "noexec" skips the exec child.
#include "truth.h"

#include <sys/wait.h>

extern char** environ;
static void* volatile sink;

__attribute__((noinline)) static void child_work(void) {
    void* a = T_malloc(777);
    void* b = T_calloc(7, 111);
    sink = T_malloc(333);
    T_free(a, 777);
    sink = b; // leaked with the 333
}

static void exec_child(const char* prog) {
    // Build the environment without allocating: environ with TRUTH_FILE replaced.
    static char truth_env[600];
    static char* envp[512];
    const char* t = getenv("TRUTH_FILE");
    size_t n = 0;
    if (t) {
        size_t len = strlen(t);
        if (len + 20 > sizeof truth_env)
            _exit(90);
        memcpy(truth_env, "TRUTH_FILE=", 11);
        memcpy(truth_env + 11, t, len);
        memcpy(truth_env + 11 + len, ".exec", 6);
        envp[n++] = truth_env;
    }
    for (char** e = environ; *e && n < 510; e++)
        if (strncmp(*e, "TRUTH_FILE=", 11) != 0)
            envp[n++] = *e;
    envp[n] = NULL;
    char* argv[] = {(char*)prog, NULL};
    execve(prog, argv, envp);
    _exit(91);
}

static int wait_ok(pid_t pid) {
    int st;
    return waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

int main(int argc, char** argv) {
    if (argc < 2)
        t_fail(10, "usage: e2e_fork_exec EXEC_TARGET [noexec]");
    int with_exec = !(argc > 2 && strcmp(argv[2], "noexec") == 0);
    int base = t_baseline();
    void* keep = base ? NULL : T_malloc(4096);

    pid_t child = fork();
    if (child < 0)
        t_fail(11, "fork");
    if (child == 0) {
        t_reset();
        if (!base)
            child_work();
        _exit(t_write(".child") ? 12 : 0);
    }
    pid_t execd = -1;
    if (with_exec) {
        execd = fork();
        if (execd < 0)
            t_fail(13, "fork");
        if (execd == 0)
            exec_child(argv[1]);
    }
    int child_ok = wait_ok(child); // wait for both before judging either
    int exec_ok = !with_exec || wait_ok(execd);
    if (!child_ok || !exec_ok)
        t_fail(14, child_ok ? "the exec'd child failed" : "the forked child failed");
    if (!base) {
        char* s = T_malloc(100);
        T_free(keep, 4096);
        T_free(s, 100);
        sink = T_malloc(55); // leaked
    }
    t_extra("child_pid", child);
    t_extra("exec_pid", execd);
    return t_write("") ? 15 : 0;
}
