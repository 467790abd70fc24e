// SPDX-License-Identifier: MIT
// The exit watcher (see exit_watch.h): a task that shares the program's memory (CLONE_VM)
// but is no child of it. While the program runs it sleeps in one system call and touches
// nothing of the program's: every signal blocked, its own copy of the descriptor table with
// every descriptor closed (a pipe the program closes must reach EOF), raw system
// calls only (errno is a thread's), and the main thread's thread pointer, whose storage lasts
// as long as the memory. It is made by a short-lived task that ends at once, so it belongs to
// init (or a subreaper), and no wait() of the program, not even one with __WALL (strace,
// gdb, init systems), ever sees it. The tracer kills it through a pidfd when it finishes the
// capture itself, so it outlives the program only when the program ended unseen. Then it
// finishes the capture, or is ended by a timer if a lock the program's threads died holding
// stops it (the capture stays truncated, as without it).
#include "exit_watch.h"

#include "bootstrap.h"
#include "config.h"
#include "fdguard.h"
#include "output.h"
#include "writer.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#if defined(__x86_64__)
#include <asm/prctl.h>
#define HAVE_WATCHER 1
static long raw_syscall(long n, long a, long b, long c, long d, long e) {
    long ret;
    register long r10 __asm__("r10") = d;
    register long r8 __asm__("r8") = e;
    __asm__ volatile("syscall"
                     : "=a"(ret)
                     : "a"(n), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8)
                     : "rcx", "r11", "memory");
    return ret;
}
static void set_thread_pointer(void* tp) {
    raw_syscall(SYS_arch_prctl, ARCH_SET_FS, (long)tp, 0, 0, 0);
}
#elif defined(__aarch64__)
#define HAVE_WATCHER 1
static long raw_syscall(long n, long a, long b, long c, long d, long e) {
    register long x8 __asm__("x8") = n;
    register long x0 __asm__("x0") = a;
    register long x1 __asm__("x1") = b;
    register long x2 __asm__("x2") = c;
    register long x3 __asm__("x3") = d;
    register long x4 __asm__("x4") = e;
    __asm__ volatile("svc 0" : "+r"(x0) : "r"(x8), "r"(x1), "r"(x2), "r"(x3), "r"(x4) : "memory");
    return x0;
}
static void set_thread_pointer(void* tp) {
    __asm__ volatile("msr tpidr_el0, %0" ::"r"(tp));
}
#else
#define HAVE_WATCHER 0
#endif

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif
#ifndef SYS_pidfd_send_signal
#define SYS_pidfd_send_signal 424
#endif
#ifndef SYS_close_range
#define SYS_close_range 436
#endif

// SQLite's finish needs a thread's stack (writer.c: TRACER_STACK); pages are taken on use.
// The task that makes the watcher needs little, at the top of the same mapping.
#define WATCH_STACK (1 << 20)
#define MAKER_STACK (64 << 10)
// Long enough to write every buffer the program left (64 of them at most: core.h).
#define FINISH_SECONDS 10

static void* main_tp;
static _Atomic int watcher_fd = -1; // a pidfd of the watcher; -1: none
static pid_t watched;               // the process the watcher was started for
static pid_t made;                  // the maker's word: the watcher's pid, or 0
static int watched_pidfd;           // the maker's pidfd of `watched`, the watcher's copy
static char* stack;
void mt_exit_watch_note_main(void) {
#if HAVE_WATCHER
    main_tp = __builtin_thread_pointer();
#endif
}

void mt_exit_watch_forget(void) {
    int fd = atomic_exchange(&watcher_fd, -1);
    if (fd >= 0)
        close(fd); // the child's copy; the parent's watcher is not the child's
}

#if HAVE_WATCHER
// Past the end of the program, on the main thread's storage: an end that a lock held by a
// thread that died keeps waiting is cut by SIGALRM's default action.
static void finish_within_bound(void) {
    struct sigaction dfl = {.sa_handler = SIG_DFL};
    sigaction(SIGALRM, &dfl, NULL);
    sigset_t alrm;
    sigemptyset(&alrm);
    sigaddset(&alrm, SIGALRM);
    sigprocmask(SIG_UNBLOCK, &alrm, NULL);
    alarm(FINISH_SECONDS);
    mt_writer_finish_orphaned(watched);
}

static int watch(void* unused) {
    (void)unused;
    set_thread_pointer(main_tp);
    // A session of its own: a kill of the program's process group (timeout -s KILL, a test
    // harness ending a job) must not take the watcher with it. Its own name: ps and pgrep -x
    // must not count it as a second copy of the program.
    raw_syscall(SYS_setsid, 0, 0, 0, 0, 0);
    raw_syscall(SYS_prctl, PR_SET_NAME, (long)"memtrace-watch", 0, 0, 0);
    // Every descriptor but the pidfd, the tracer's too: a program's may sit above the
    // tracer's base (one that raised its limit), and the tracer's files are reopened by path
    // when needed (fdguard.c, procfile.c, output.c).
    int pidfd = watched_pidfd;
    if (pidfd > 0)
        raw_syscall(SYS_close_range, 0, (unsigned)pidfd - 1, 0, 0, 0);
    raw_syscall(SYS_close_range, (unsigned)pidfd + 1, ~0U, 0, 0, 0);
    struct pollfd ended = {.fd = (int)pidfd, .events = POLLIN};
    // Readable once every thread of the process has ended; nothing else wakes it (the
    // signals are blocked), and the tracer kills it when it has no more use.
    while (raw_syscall(SYS_ppoll, (long)&ended, 1, 0, 0, 0) != 1)
        ;
    finish_within_bound();
    return 0;
}
#endif

#if HAVE_WATCHER
// The pidfd is opened here, while the program waits for this task: a watcher first run once
// a short program has ended and been reaped would find no process to open.
static int make_watcher(void* unused) {
    (void)unused;
    watched_pidfd = (int)raw_syscall(SYS_pidfd_open, watched, 0, 0, 0, 0);
    if (watched_pidfd >= 0)
        made = clone(watch, stack + WATCH_STACK - MAKER_STACK, CLONE_VM, NULL);
    return 0;
}
#endif

void mt_exit_watch_start(void) {
#if HAVE_WATCHER
    // Where orphans come back to the program (it is pid 1, or a subreaper), the watcher
    // would be a child it can wait for: none then.
    int subreaper = 0;
    if (!mt_cfg.exit_watch || !main_tp || atomic_load(&watcher_fd) >= 0 || getpid() == 1 ||
        prctl(PR_GET_CHILD_SUBREAPER, &subreaper) != 0 || subreaper)
        return;
    if (!stack) {
        long p = syscall(SYS_mmap, NULL, (size_t)WATCH_STACK, PROT_READ | PROT_WRITE,
                         MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK, -1, 0);
        if (p == -1 || (p > -4096 && p < 0))
            return;
        stack = mt_own_pages((char*)p, WATCH_STACK); // no root of the leak scan
    }
    watched = getpid();
    made = 0;
    int saved = errno;
    // The tasks inherit this mask: no handler of the program's ever runs on them.
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int maker = clone(make_watcher, stack + WATCH_STACK, CLONE_VM, NULL);
    if (maker > 0)
        while (waitpid(maker, NULL, __WALL) < 0 && errno == EINTR)
            ;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    long fd = maker > 0 && made > 0 ? syscall(SYS_pidfd_open, made, 0) : -1;
    if (fd >= 0) {
        atomic_store(&watcher_fd, mt_fdguard_move_high((int)fd));
        mt_output_report_watcher(made);
    } else if (made > 0) {
        kill(made, SIGKILL); // not yet reaped by anyone: still the watcher
    }
    errno = saved;
#endif
}

// Whether descriptor `fd` is still the pidfd of our watcher. A program that closes every
// descriptor (closefrom, a daemon's start) closes ours too; one with thousands open may then
// get its number for a file of its own, even a pidfd of its own child, which a kill and a
// close here would hit. Where /proc cannot tell, the watcher is left be: it ends by itself
// once the program has ended, finding the capture finished. Little stack and no stdio: this
// runs in the fatal-signal handler too, on whatever alternate stack the program gave it.
static bool still_our_watcher(int fd) {
    char path[40] = "/proc/self/fdinfo/", digits[12], info[192];
    size_t len = strlen(path), n = 0;
    for (unsigned v = (unsigned)fd; n == 0 || v; v /= 10)
        digits[n++] = (char)('0' + v % 10);
    while (n)
        path[len++] = digits[--n];
    path[len] = 0;
    int f = open(path, O_RDONLY | O_CLOEXEC);
    ssize_t got = f >= 0 ? read(f, info, sizeof info - 1) : -1;
    if (f >= 0)
        close(f);
    if (got <= 0)
        return false;
    info[got] = 0;
    const char* pid = strstr(info, "\nPid:");
    return pid && strtol(pid + 5, NULL, 10) == made;
}

void mt_exit_watch_stop(void) {
    // A vfork child shares our memory: the watcher is its parent's.
    if (atomic_load(&watcher_fd) < 0 || getpid() != watched)
        return;
    int fd = atomic_exchange(&watcher_fd, -1);
    if (fd < 0)
        return;
    int saved = errno;
    if (!still_our_watcher(fd)) {
        errno = saved;
        return;
    }
    // Ended before this returns: it holds the capture's lock, which a reader checks next.
    if (syscall(SYS_pidfd_send_signal, fd, SIGKILL, NULL, 0) == 0) {
        struct pollfd gone = {.fd = fd, .events = POLLIN};
        while (poll(&gone, 1, 1000) < 0 && errno == EINTR)
            ;
    }
    close(fd);
    errno = saved;
}
