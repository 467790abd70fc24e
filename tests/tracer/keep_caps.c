// SPDX-License-Identifier: MIT
// A root program that becomes nobody but keeps one capability, as setpriv and daemons do:
// PR_SET_KEEPCAPS, setresuid to 65534, capset to keep CAP_SETGID (on its own thread: a
// thread's capabilities are its own), then setresgid to 65534, which needs it. glibc makes
// every thread take the new ids and aborts the process when one thread fails where the
// caller succeeded. Leaks 100 bytes; prints the ids it ends with and whether the successful
// setresgid left errno as it was; exits 0.
#include <errno.h>
#include <linux/capability.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

int main(void) {
    char* volatile leak = malloc(100);
    leak[0] = 1;
    if (prctl(PR_SET_KEEPCAPS, 1, 0, 0, 0) != 0 || setresuid(65534, 65534, 65534) != 0) {
        perror("keepcaps, setresuid");
        return 9;
    }
    struct __user_cap_header_struct head = {_LINUX_CAPABILITY_VERSION_3, 0};
    struct __user_cap_data_struct caps[2] = {{0}};
    caps[0].effective = caps[0].permitted = 1u << CAP_SETGID;
    if (syscall(SYS_capset, &head, caps) != 0) {
        perror("capset");
        return 9;
    }
    errno = EDOM; // a call that succeeds leaves errno as it was
    if (setresgid(65534, 65534, 65534) != 0) {
        perror("setresgid");
        return 9;
    }
    const char* kept = errno == EDOM ? "errno kept" : "errno changed";
    char line[64]; // not stdio: its buffer would be a second block left at exit
    int n = snprintf(line, sizeof line, "uid %d gid %d %s\n", (int)getuid(), (int)getgid(), kept);
    return write(STDOUT_FILENO, line, (size_t)n) == n ? 0 : 8;
}
