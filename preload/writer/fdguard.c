// SPDX-License-Identifier: MIT
// The tracer's file descriptors, kept out of the program's way (see fdguard.h).
//
// Our SQLite is a private static copy, so its unix VFS serves only the tracer: every file it
// opens is ours. Its system calls are replaced here by versions that take a descriptor far
// above the ones the program gets (the kernel hands out the lowest free number), remember
// which file it is (device, inode, path), and check that before every use. A program that
// closes every descriptor (close_range, closefrom, a loop up to the limit) and opens its own
// files can never have them written by SQLite: the check fails, the file is reopened by its
// path (no symlink followed, same inode required) and the operation goes to the new
// descriptor. Its locks are open-file-description locks, which only the closing of its own
// descriptor ends (a process-associated fcntl lock dies with any close of the file by the
// process: grep, tar or md5sum of the capture), taken again on the reopened file.
#include "fdguard.h"

#include "bootstrap.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_GUARDED 16 // capture, its -wal and -journal, the symbol cache and its sidecars
#define MAX_LOCKS 8    // SQLite's pending, reserved and shared ranges (and their pieces)

// A byte range SQLite holds locked on the file (l_type F_RDLCK or F_WRLCK), [start, end).
typedef struct held_lock {
    off_t start, end;
    short type;
} held_lock;

// SQLite's descriptor number (what our open returned) -> the file behind it now.
typedef struct guarded {
    int handle; // the number SQLite holds; -1: free slot
    int fd;     // the descriptor that really is the file (differs after a reopen)
    dev_t dev;
    ino_t ino;
    int flags; // open flags for a reopen (without O_CREAT/O_EXCL/O_TRUNC)
    held_lock locks[MAX_LOCKS];
    int nlocks;
} guarded;

static guarded table[MAX_GUARDED];
// Apart from the table: each path filled a page of it, so the scans of the table's handles
// (at every call) read a page a slot, and made it 16 page faults at start.
static char paths[MAX_GUARDED][4096];
static pthread_mutex_t table_lock = PTHREAD_MUTEX_INITIALIZER;
static _Atomic int high_base = -1;

// Room the tracer takes above the soft limit: the capture, its -wal and -journal, the /proc
// files, libunwind's pipe, the symbol cache.
#define ABOVE_LIMIT 64

// Whether the soft limit may be raised for a moment to put a descriptor at `base` or above.
static bool may_raise(const struct rlimit* rl, rlim_t base) {
    return rl->rlim_cur != RLIM_INFINITY &&
           (rl->rlim_max == RLIM_INFINITY || rl->rlim_max >= base + ABOVE_LIMIT);
}

int mt_fdguard_high_base(void) {
    int base = atomic_load(&high_base);
    if (base >= 0)
        return base;
    // At the soft limit, where the hard limit leaves room above it: numbers the kernel never
    // gives the program, which keeps every descriptor it may have (the limit bounds only new
    // numbers). Else below it (a program that uses every descriptor gets all but ours). At
    // most ~1000 either way: the kernel sizes a process's descriptor table to its highest fd.
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
        rl.rlim_cur = rl.rlim_max = 1024;
    if (rl.rlim_cur <= 1024 && may_raise(&rl, rl.rlim_cur))
        base = (int)rl.rlim_cur;
    else {
        rlim_t top = rl.rlim_cur > 1024 ? 1024 : rl.rlim_cur;
        base = top > 64 ? (int)top - 48 : 3;
    }
    atomic_store(&high_base, base);
    return base;
}

// F_DUPFD_CLOEXEC from `base`. Above the soft limit the kernel refuses it (EINVAL): the
// limit is raised for the call and put back, unless the program set one of its own meanwhile.
static int dup_from(int fd, int base) {
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur > (rlim_t)base ||
        !may_raise(&rl, (rlim_t)base))
        return fcntl(fd, F_DUPFD_CLOEXEC, base);
    struct rlimit raised = {(rlim_t)base + ABOVE_LIMIT, rl.rlim_max}, now;
    if (setrlimit(RLIMIT_NOFILE, &raised) != 0)
        return fcntl(fd, F_DUPFD_CLOEXEC, base);
    int high = fcntl(fd, F_DUPFD_CLOEXEC, base);
    int saved = errno;
    if (getrlimit(RLIMIT_NOFILE, &now) == 0 && now.rlim_cur == raised.rlim_cur &&
        now.rlim_max == raised.rlim_max)
        setrlimit(RLIMIT_NOFILE, &rl);
    errno = saved;
    return high;
}

int mt_fdguard_move_high(int fd) {
    if (fd < 0 || fd >= mt_fdguard_high_base())
        return fd;
    int high = dup_from(fd, mt_fdguard_high_base());
    if (high < 0)
        return fd; // table full up there: keep the low one rather than fail
    close(fd);
    return high;
}

// ---- the table

static guarded* find(int handle) {
    for (int i = 0; i < MAX_GUARDED; i++)
        if (table[i].handle == handle)
            return &table[i];
    return NULL;
}

static bool same_file(int fd, const guarded* g) {
    struct stat st;
    return fstat(fd, &st) == 0 && st.st_dev == g->dev && st.st_ino == g->ino;
}

// Its locks ended with the descriptor the program closed: SQLite still believes it holds them.
static void retake_locks(guarded* g) {
    for (int i = 0; i < g->nlocks; i++) {
        struct flock fl = {.l_type = g->locks[i].type,
                           .l_whence = SEEK_SET,
                           .l_start = g->locks[i].start,
                           .l_len = g->locks[i].end - g->locks[i].start};
        fcntl(g->fd, F_OFD_SETLK, &fl);
    }
}

// Reopens `g` by its path if the program closed it: 0 if it was open, 1 if reopened, -1 if it
// is gone for good.
static int reopen_if_closed(guarded* g) {
    if (same_file(g->fd, g))
        return 0;
    int again = open(paths[g - table], g->flags | O_NOFOLLOW | O_CLOEXEC);
    if (again >= 0 && same_file(again, g)) {
        g->fd = mt_fdguard_move_high(again);
        retake_locks(g);
        return 1;
    }
    if (again >= 0)
        close(again);
    g->fd = -1;
    return -1;
}

// The descriptor to use for SQLite's `handle`: itself if not ours, the checked (or reopened)
// file if ours, -1 with errno EBADF if ours and gone for good. A program that closed one of
// ours has likely closed them all: all are reopened, so the capture's lock is back at the
// next commit (which writes only the -wal) rather than at the next checkpoint.
static int resolve(int handle) {
    pthread_mutex_lock(&table_lock);
    guarded* g = find(handle);
    int fd = handle;
    if (g) {
        if (reopen_if_closed(g) > 0)
            for (int i = 0; i < MAX_GUARDED; i++)
                if (table[i].handle >= 0 && table[i].fd >= 0 && &table[i] != g)
                    reopen_if_closed(&table[i]);
        fd = g->fd;
    }
    pthread_mutex_unlock(&table_lock);
    if (fd < 0)
        errno = EBADF;
    return fd;
}

// `fd` moved high, to a number no entry uses as its handle: once the program has closed a
// file of ours, its handle's number is free in the kernel but still names that file here.
static int unique_handle(int fd) {
    int held[MAX_GUARDED], n = 0;
    fd = mt_fdguard_move_high(fd);
    while (fd >= 0 && find(fd) && n < MAX_GUARDED) {
        held[n++] = fd; // kept open meanwhile, so the next duplicate gets another number
        fd = dup_from(fd, mt_fdguard_high_base());
    }
    while (n > 0)
        close(held[--n]);
    return fd;
}

// ---- SQLite's system calls

static int guarded_open(const char* path, int flags, int mode) {
    // Never through a symlink, and never a file someone else put where ours should be.
    int fd = open(path, flags | O_CLOEXEC | O_NOFOLLOW, mode);
    if (fd < 0)
        return fd;
    struct stat st;
    if ((flags & O_CREAT) && fstat(fd, &st) == 0 && st.st_uid != geteuid()) {
        close(fd);
        errno = EACCES;
        return -1;
    }
    pthread_mutex_lock(&table_lock);
    fd = unique_handle(fd);
    if (fd < 0) {
        pthread_mutex_unlock(&table_lock);
        return -1;
    }
    guarded* g = find(-1);
    if (g && fstat(fd, &st) == 0 && strlen(path) < sizeof *paths) {
        g->handle = g->fd = fd;
        g->dev = st.st_dev;
        g->ino = st.st_ino;
        g->flags = flags & ~(O_CREAT | O_EXCL | O_TRUNC);
        g->nlocks = 0;
        strcpy(paths[g - table], path);
    }
    pthread_mutex_unlock(&table_lock);
    return fd;
}

static int guarded_close(int handle) {
    pthread_mutex_lock(&table_lock);
    guarded* g = find(handle);
    int fd = handle;
    if (g) {
        // Never close a number the program has taken over since.
        fd = same_file(g->fd, g) ? g->fd : -1;
        g->handle = g->fd = -1;
    }
    pthread_mutex_unlock(&table_lock);
    return fd >= 0 ? close(fd) : 0;
}

// Calls that write or lock check the file first (one fstat): a number the program took
// over is never written to. Calls that only read use the descriptor as it is, and check only
// when it is gone (EBADF): reading, even the program's file, changes nothing of the
// program's (pread never moves a file offset, and fails on pipes and sockets).
#define RESOLVE_OR_FAIL(fd, handle)                                                                \
    int fd = resolve(handle);                                                                      \
    if (fd < 0)                                                                                    \
        return -1;

static int current_fd(int handle) {
    pthread_mutex_lock(&table_lock);
    guarded* g = find(handle);
    int fd = g ? g->fd : handle;
    pthread_mutex_unlock(&table_lock);
    return fd;
}

#define READ_AND_RETRY(result, call_with_fd, handle)                                               \
    int fd_ = current_fd(handle);                                                                  \
    result = fd_ >= 0 ? call_with_fd : -1;                                                         \
    if (fd_ < 0 || (result < 0 && errno == EBADF)) {                                               \
        if ((fd_ = resolve(handle)) < 0)                                                           \
            return -1;                                                                             \
        result = call_with_fd;                                                                     \
    }

static int guarded_fstat(int handle, struct stat* st) {
    int rc;
    READ_AND_RETRY(rc, fstat(fd_, st), handle);
    return rc;
}

static int guarded_ftruncate(int handle, off_t len) {
    RESOLVE_OR_FAIL(fd, handle);
    return ftruncate(fd, len);
}

// Records what a successful F_SETLK did to `g`'s held ranges: [start, end) is released, then
// held with `type` unless that is F_UNLCK (the kernel's own merge and split, on at most a few
// ranges). A range that finds no room is not taken again at a reopen, nothing worse.
static void note_lock(guarded* g, off_t start, off_t end, short type) {
    held_lock kept[MAX_LOCKS];
    int n = 0;
    for (int i = 0; i < g->nlocks; i++) {
        held_lock h = g->locks[i];
        if (h.end <= start || h.start >= end) {
            if (n < MAX_LOCKS)
                kept[n++] = h;
            continue;
        }
        if (h.start < start && n < MAX_LOCKS)
            kept[n++] = (held_lock){h.start, start, h.type};
        if (h.end > end && n < MAX_LOCKS)
            kept[n++] = (held_lock){end, h.end, h.type};
    }
    if (type != F_UNLCK && n < MAX_LOCKS)
        kept[n++] = (held_lock){start, end, type};
    memcpy(g->locks, kept, (size_t)n * sizeof *kept);
    g->nlocks = n;
}

static int guarded_lock(int handle, int cmd, struct flock* fl) {
    RESOLVE_OR_FAIL(fd, handle);
    struct flock ofd = *fl;
    ofd.l_pid = 0; // required by the OFD commands
    int ofd_cmd = cmd == F_SETLK ? F_OFD_SETLK : cmd == F_SETLKW ? F_OFD_SETLKW : F_OFD_GETLK;
    int rc = fcntl(fd, ofd_cmd, &ofd);
    if (rc != 0)
        return rc;
    if (cmd == F_GETLK) {
        *fl = ofd;
        return 0;
    }
    if (fl->l_whence == SEEK_SET && fl->l_len >= 0) {
        off_t end = fl->l_len ? fl->l_start + fl->l_len : (off_t)INT64_MAX;
        pthread_mutex_lock(&table_lock);
        guarded* g = find(handle);
        if (g)
            note_lock(g, fl->l_start, end, fl->l_type);
        pthread_mutex_unlock(&table_lock);
    }
    return 0;
}

static int guarded_fcntl(int handle, int cmd, ...) {
    // Every fcntl command SQLite uses takes an int or a pointer: read it as glibc does.
    va_list ap;
    va_start(ap, cmd);
    void* arg = va_arg(ap, void*);
    va_end(ap);
    if (cmd == F_SETLK || cmd == F_SETLKW || cmd == F_GETLK)
        return guarded_lock(handle, cmd, arg);
    RESOLVE_OR_FAIL(fd, handle);
    return fcntl(fd, cmd, arg);
}

static int guarded_ioctl(int handle, int request, ...) {
    va_list ap;
    va_start(ap, request);
    void* arg = va_arg(ap, void*);
    va_end(ap);
    RESOLVE_OR_FAIL(fd, handle);
    return ioctl(fd, (unsigned long)request, arg);
}

static ssize_t guarded_read(int handle, void* buf, size_t n) {
    // Used by SQLite only where pread is not: a read that moves the offset must check first.
    RESOLVE_OR_FAIL(fd, handle);
    return read(fd, buf, n);
}

static ssize_t guarded_pread(int handle, void* buf, size_t n, off_t off) {
    ssize_t r;
    READ_AND_RETRY(r, pread(fd_, buf, n, off), handle);
    return r;
}

static ssize_t guarded_write(int handle, const void* buf, size_t n) {
    RESOLVE_OR_FAIL(fd, handle);
    return write(fd, buf, n);
}

static ssize_t guarded_pwrite(int handle, const void* buf, size_t n, off_t off) {
    RESOLVE_OR_FAIL(fd, handle);
    return pwrite(fd, buf, n, off);
}

static int guarded_fchmod(int handle, mode_t mode) {
    RESOLVE_OR_FAIL(fd, handle);
    return fchmod(fd, mode);
}

static int guarded_fchown(int handle, uid_t uid, gid_t gid) {
    RESOLVE_OR_FAIL(fd, handle);
    return fchown(fd, uid, gid);
}

static int guarded_fallocate(int handle, off_t off, off_t len) {
    RESOLVE_OR_FAIL(fd, handle);
    return posix_fallocate(fd, off, len);
}

static void* guarded_mmap(void* addr, size_t len, int prot, int flags, int handle, off_t off) {
    int fd = handle;
    if (!(flags & MAP_ANONYMOUS) && (fd = resolve(handle)) < 0)
        return MAP_FAILED;
    // SQLite's memory-mapped pages of the capture hold the program's addresses: the tracer's
    // own pages, never roots of the leak scan.
    return mt_own_pages(mmap(addr, len, prot, flags, fd, off), len);
}

void mt_fdguard_forget_all(void) {
    pthread_mutex_lock(&table_lock);
    for (int i = 0; i < MAX_GUARDED; i++) {
        if (table[i].handle >= 0 && same_file(table[i].fd, &table[i]))
            close(table[i].fd);
        table[i].handle = table[i].fd = -1;
    }
    pthread_mutex_unlock(&table_lock);
}

int mt_fdguard_install(void) {
    static int installed;
    if (installed)
        return 0;
    for (int i = 0; i < MAX_GUARDED; i++)
        table[i].handle = table[i].fd = -1;
    sqlite3_vfs* vfs = sqlite3_vfs_find("unix");
    if (!vfs || !vfs->xSetSystemCall)
        return -1;
    // pread64/pwrite64 are the same calls as pread/pwrite with a 64-bit off_t.
    static const struct {
        const char* name;
        sqlite3_syscall_ptr fn;
    } calls[] = {
        {"open", (sqlite3_syscall_ptr)guarded_open},
        {"close", (sqlite3_syscall_ptr)guarded_close},
        {"fstat", (sqlite3_syscall_ptr)guarded_fstat},
        {"ftruncate", (sqlite3_syscall_ptr)guarded_ftruncate},
        {"fcntl", (sqlite3_syscall_ptr)guarded_fcntl},
        {"ioctl", (sqlite3_syscall_ptr)guarded_ioctl},
        {"read", (sqlite3_syscall_ptr)guarded_read},
        {"pread", (sqlite3_syscall_ptr)guarded_pread},
        {"pread64", (sqlite3_syscall_ptr)guarded_pread},
        {"write", (sqlite3_syscall_ptr)guarded_write},
        {"pwrite", (sqlite3_syscall_ptr)guarded_pwrite},
        {"pwrite64", (sqlite3_syscall_ptr)guarded_pwrite},
        {"fchmod", (sqlite3_syscall_ptr)guarded_fchmod},
        {"fchown", (sqlite3_syscall_ptr)guarded_fchown},
        {"fallocate", (sqlite3_syscall_ptr)guarded_fallocate},
        {"mmap", (sqlite3_syscall_ptr)guarded_mmap},
    };
    for (size_t i = 0; i < sizeof calls / sizeof *calls; i++) {
        // A call this SQLite build does not use (NOTFOUND) needs no guard; anything
        // else must be replaced, or a descriptor could escape the check.
        int rc = vfs->xSetSystemCall(vfs, calls[i].name, calls[i].fn);
        if (rc != SQLITE_OK && rc != SQLITE_NOTFOUND)
            return -1;
    }
    installed = 1;
    return 0;
}
