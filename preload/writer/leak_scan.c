// SPDX-License-Identifier: MIT
// The leak scan (see leak_scan.h). This process gathers the roots (the writable segments of
// every module but the tracer's, each thread's stack and static TLS) and the mappings, then
// scans as memcheck does (docs/leaks.md): from the roots through words that point at a
// block's start (reachable) or only inside it (possibly lost); then each block no root
// reaches, in address order, claims the unclaimed blocks it reaches as indirectly lost; those
// left are definitely lost. Where the calling thread is the program's last (a program's
// exit, most often), nothing else changes its memory: the scan runs here, every signal
// blocked, reading through process_vm_readv (a page the program made unreadable, or a file
// page past a truncated file's end, fails the read instead of raising a signal). Otherwise
// it runs in a copy of the process made with a raw clone: no atfork handler runs, its exit
// sends no signal, and a program's wait(-1) never sees it. The copy blocks every signal,
// calls nothing that locks or allocates (only memory prepared here and raw system calls),
// then exit_group.
#define UNW_LOCAL_ONLY
#include "leak_scan.h"

#include "bootstrap.h"
#include "python_frames.h"
#include "writer_heap.h"

#include "memtrace/schema.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <libunwind.h>
#include <link.h>
#include <poll.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

enum { UNREACHED = 0, POSSIBLE = 1, REACHABLE = 2, INDIRECT = 3, LEADER = 4 };

typedef struct range {
    uintptr_t lo, hi;
} range;

typedef struct mapping {
    uintptr_t lo, hi;
    bool readable, writable, anon, stack; // stack: the [stack] mapping
    bool named;                           // anon with a name: [heap], [stack], [vvar]...
    bool device;                          // a device's memory: never read (as memcheck)
    bool own;                             // the tracer's pages (mt_own_pages: VmFlags dd)
    bool resident;                        // some page in memory or swap
} mapping;

typedef struct ranges {
    range* r;
    size_t n, cap;
} ranges;

typedef struct scan_state {
    const mt_live_block* b;
    size_t n;
    uintptr_t lo, hi; // the blocks' span
    uint8_t* st;
    uint32_t* holder;
    uint32_t* stack; // mark stack: each block is pushed at most twice
    size_t top;
    bool glibc;    // the real allocator is glibc's: chunk headers are not pointers (below)
    bool pymalloc; // a CPython program: its arenas' free blocks are not read (scan_mapped)
    // In place (no copy): memory is read through window, and each block's preceding word
    // (its chunk header's size, for block_of) was read into heads beforehand.
    bool in_place;
    bool timed_out; // in place: past deadline, nothing more is read
    int read_error; // in place: a read failed otherwise than on an unreadable page (errno)
    pid_t pid;
    int64_t deadline;
    uintptr_t* window;
    uintptr_t* heads;
    uint64_t scanned;
    uint64_t* scanned_out;
} scan_state;

static int64_t clock_ns(clockid_t clock) {
    struct timespec ts;
    clock_gettime(clock, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int64_t now_ns(void) {
    return clock_ns(CLOCK_MONOTONIC);
}

static int64_t thread_cpu_ns(void) {
    return clock_ns(CLOCK_THREAD_CPUTIME_ID);
}

static int push_range(ranges* rs, uintptr_t lo, uintptr_t hi) {
    lo = (lo + 7) & ~(uintptr_t)7;
    if (hi <= lo)
        return 0;
    if (rs->n == rs->cap) {
        size_t cap = rs->cap ? rs->cap * 2 : 64;
        range* r = mt_writer_heap_realloc(rs->r, cap * sizeof *r);
        if (!r)
            return -ENOMEM;
        rs->r = r;
        rs->cap = cap;
    }
    rs->r[rs->n++] = (range){lo, hi};
    return 0;
}

static int own_data; // an address inside the tracer's own writable segment
// The scanning thread's callee-saved registers, as its program frame had them: a root.
static uintptr_t frame_regs[8];

// ---- the process's mappings, from /proc/self/smaps (read with plain system calls)

static char* read_maps(size_t* len) {
    int fd = open("/proc/self/smaps", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return NULL;
    size_t cap = 1 << 16, n = 0;
    char* buf = mt_writer_heap_malloc(cap);
    for (ssize_t k; buf; n += (size_t)k) {
        if (cap - n < 4096) {
            char* bigger = mt_writer_heap_realloc(buf, cap * 2);
            if (!bigger) {
                mt_writer_heap_free(buf);
                buf = NULL;
                break;
            }
            buf = bigger;
            cap *= 2;
        }
        k = read(fd, buf + n, cap - n - 1);
        if (k <= 0) {
            if (k < 0) {
                mt_writer_heap_free(buf);
                buf = NULL;
            }
            break;
        }
    }
    close(fd);
    if (buf)
        buf[n] = 0;
    *len = n;
    return buf;
}

// Device memory (a GPU's, a frame buffer) may hang or change what it is read from; /dev/zero
// (shared anonymous memory) and /dev/shm (POSIX shared memory, files of a tmpfs) are memory.
static bool is_device(const char* path) {
    return (!strncmp(path, "/dev/", 5) && strncmp(path, "/dev/zero", 9) &&
            strncmp(path, "/dev/shm/", 9)) ||
           !strncmp(path, "anon_inode:", 11);
}

static mapping* parse_maps(char* text, size_t* count) {
    size_t lines = 0;
    for (char* p = text; *p; p++)
        lines += *p == '\n';
    mapping* m = mt_writer_heap_malloc((lines + 1) * sizeof *m);
    if (!m)
        return NULL;
    size_t k = 0;
    for (char* line = text; *line;) {
        char* end = strchr(line, '\n');
        if (end)
            *end = 0;
        unsigned long lo, hi, inode;
        char perms[5];
        int path_at = 0;
        // A mapping's field ("Rss:    12 kB"): a name and a colon before any blank. Most
        // lines are such (about 25 a mapping): no sscanf for them, which cost a short
        // program's exit more than reading the file.
        size_t name_len = strcspn(line, ": ");
        if (line[name_len] == ':') {
            bool rss = (name_len == 3 && !strncmp(line, "Rss", 3)) ||
                       (name_len == 4 && !strncmp(line, "Swap", 4));
            if (k && name_len == 7 && !strncmp(line, "VmFlags", 7))
                m[k - 1].own = strstr(line, " dd") != NULL;
            else if (k && rss)
                m[k - 1].resident |= strtoul(line + name_len + 1, NULL, 10) > 0;
        } else if (sscanf(line, "%lx-%lx %4s %*s %*s %lu %n", &lo, &hi, perms, &inode, &path_at) >=
                   4) {
            const char* path = path_at ? line + path_at : "";
            m[k++] = (mapping){.lo = lo,
                               .hi = hi,
                               .readable = perms[0] == 'r',
                               .writable = perms[1] == 'w',
                               .anon = inode == 0 && (!*path || *path == '['),
                               .stack = !strcmp(path, "[stack]"),
                               .named = *path != 0,
                               .device = is_device(path)};
        }
        if (!end)
            break;
        line = end + 1;
    }
    *count = k;
    return m;
}

// Adds [lo, hi) where it is readable.
static int push_readable(ranges* rs, const mapping* m, size_t n, uintptr_t lo, uintptr_t hi) {
    for (size_t i = 0; i < n; i++) {
        if (!m[i].readable || m[i].hi <= lo || m[i].lo >= hi)
            continue;
        int rc = push_range(rs, lo > m[i].lo ? lo : m[i].lo, hi < m[i].hi ? hi : m[i].hi);
        if (rc)
            return rc;
    }
    return 0;
}

// ---- roots: modules' writable segments and static TLS offsets

typedef struct module_walk {
    ranges* roots;
    ranges* modules; // every module's writable segments, the tracer's own too, whole pages
    const mapping* maps;
    size_t nmaps;
    uintptr_t own;     // an address inside the tracer's own data
    uintptr_t tls_low; // the lowest static TLS block of this thread
    int rc;
} module_walk;

static int each_module(struct dl_phdr_info* info, size_t size, void* ud) {
    (void)size;
    module_walk* w = ud;
    bool own = false;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr)* ph = &info->dlpi_phdr[i];
        uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
        if (ph->p_type == PT_LOAD && w->own >= lo && w->own < lo + ph->p_memsz)
            own = true;
    }
    if (info->dlpi_tls_data && (uintptr_t)info->dlpi_tls_data < w->tls_low)
        w->tls_low = (uintptr_t)info->dlpi_tls_data;
    for (int i = 0; i < info->dlpi_phnum && !w->rc; i++) {
        const ElfW(Phdr)* ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_W))
            continue;
        uintptr_t lo = info->dlpi_addr + ph->p_vaddr, hi = lo + ph->p_memsz;
        w->rc = push_range(w->modules, lo & ~(uintptr_t)4095, (hi + 4095) & ~(uintptr_t)4095);
        if (!w->rc && !own) // the tracer's tables hold the program's addresses: never roots
            w->rc = push_readable(w->roots, w->maps, w->nmaps, lo, hi);
    }
    return w->rc;
}

static void sort_ranges(ranges* rs) {
    for (size_t i = 1; i < rs->n; i++)
        for (size_t j = i; j > 0 && rs->r[j - 1].lo > rs->r[j].lo; j--) {
            range t = rs->r[j];
            rs->r[j] = rs->r[j - 1];
            rs->r[j - 1] = t;
        }
}

// The parts of [lo, hi) outside the modules' segments (sorted), into parts (emptied first):
// a segment's bss past its file's last page is an anonymous mapping of its own.
static int outside_modules(ranges* parts, const ranges* modules, uintptr_t lo, uintptr_t hi) {
    int rc = 0;
    parts->n = 0;
    for (size_t i = 0; i < modules->n && lo < hi && !rc; i++) {
        const range* r = &modules->r[i];
        if (r->hi <= lo || r->lo >= hi)
            continue;
        if (r->lo > lo)
            rc = push_range(parts, lo, r->lo);
        lo = r->hi;
    }
    return rc || lo >= hi ? rc : push_range(parts, lo, hi);
}

// glibc's thread descriptor: its size and where it keeps the thread's tid (0 once the
// thread ended: a cached stack), from the symbols glibc exports for libthread_db.
static size_t pthread_size = 2304;
static size_t pthread_tid_offset;

static void find_pthread_layout(void) {
    const uint32_t* size = dlsym(RTLD_DEFAULT, "_thread_db_sizeof_pthread");
    const uint32_t* tid = dlsym(RTLD_DEFAULT, "_thread_db_pthread_tid"); // {bits, count, offset}
    if (size && *size >= 1024 && *size <= 65536)
        pthread_size = *size;
    if (tid && tid[0] == 32 && tid[2] + 4 <= pthread_size)
        pthread_tid_offset = tid[2];
}

// The thread descriptor at the top of a thread stack mapping (glibc puts it there): a word
// that points at itself, whose third word (header.self) does too. 0 if none.
static uintptr_t descriptor_in(const mapping* m) {
    uintptr_t lo = m->hi - pthread_size - (1 << 16);
    if (lo < m->lo)
        lo = m->lo;
    for (uintptr_t a = (m->hi - pthread_size) & ~(uintptr_t)63; a >= lo; a -= 64) {
        const uintptr_t* w = (const uintptr_t*)a;
        if (w[0] == a && w[2] == a)
            return a;
    }
    return 0;
}

// The stack pointer of a thread blocked in a system call, from /proc/self/task/TID/syscall
// ("nr args... sp pc"); 0 when it runs or cannot be read.
static uintptr_t blocked_sp(int tid) {
    char path[64], buf[256];
    snprintf(path, sizeof path, "/proc/self/task/%d/syscall", tid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    ssize_t k = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (k <= 0)
        return 0;
    buf[k] = 0;
    unsigned long w[9];
    long nr;
    if (sscanf(buf, "%ld %lx %lx %lx %lx %lx %lx %lx %lx", &nr, &w[0], &w[1], &w[2], &w[3], &w[4],
               &w[5], &w[6], &w[7]) != 9)
        return 0;
    return w[6];
}

static int thread_roots(ranges* roots, const mapping* maps, size_t nmaps, uintptr_t self_sp,
                        uintptr_t self_tp, uintptr_t tls_low, uintptr_t skip_tp) {
    int rc = 0;
    for (size_t i = 0; i < nmaps && !rc; i++) {
        const mapping* m = &maps[i];
        if (!m->readable || !m->writable || !m->anon)
            continue;
        bool guarded = i > 0 && maps[i - 1].hi == m->lo && !maps[i - 1].readable;
        uintptr_t tp = m->stack || !guarded ? 0 : descriptor_in(m);
        if (!m->stack && !tp)
            continue;
        if (tp == skip_tp && tp)
            continue;
        if (self_sp >= m->lo && self_sp < m->hi) {
            rc = push_range(roots, self_sp, m->hi);
            continue;
        }
        if (tp && pthread_tid_offset) {
            int tid = *(const int*)(tp + pthread_tid_offset);
            if (tid <= 0) // a stack glibc keeps for its next thread: no thread's
                continue;
            uintptr_t sp = blocked_sp(tid);
            // Below a stack pointer the frames are dead: from it (and its red zone) up.
            if (sp >= m->lo + 128 && sp < m->hi) {
                rc = push_range(roots, sp - 128, m->hi);
                continue;
            }
        }
        rc = push_range(roots, m->lo, m->hi); // its registers unknown: the whole stack
    }
    // This thread's static TLS and descriptor (another thread's lie in its stack mapping).
    if (!rc && tls_low < self_tp && self_tp - tls_low < ((uintptr_t)1 << 24))
        rc = push_readable(roots, maps, nmaps, tls_low, self_tp + pthread_size);
    return rc;
}

// ---- roots: the memory the program mapped itself

// glibc's arenas but the main one are heaps of at most 64 MiB, each at an address aligned to
// that size with its heap_info first: {arena, prev, size, mprotect_size}.
#define GLIBC_HEAP_MAX ((uintptr_t)64 << 20)

static bool glibc_heap_at(uintptr_t a, uintptr_t hi) {
    const uintptr_t* w = (const uintptr_t*)a;
    return a + 4 * sizeof *w <= hi && w[0] && w[2] && w[2] <= GLIBC_HEAP_MAX && w[3] >= w[2] &&
           w[3] <= GLIBC_HEAP_MAX;
}

// Adds [lo, hi) but the blocks inside it (glibc maps a large block by itself): a block is
// scanned when it is reached, as memcheck scans it.
static int push_between_blocks(ranges* rs, const mt_live_block* b, size_t n, uintptr_t lo,
                               uintptr_t hi) {
    size_t i = 0, j = n; // the first block that ends after lo
    while (i < j) {
        size_t mid = (i + j) / 2;
        if (b[mid].addr + b[mid].size <= lo)
            i = mid + 1;
        else
            j = mid;
    }
    int rc = 0;
    for (; i < n && b[i].addr < hi && !rc; i++) {
        if (b[i].addr > lo)
            rc = push_range(rs, lo, b[i].addr);
        if (b[i].addr + b[i].size > lo)
            lo = b[i].addr + b[i].size;
    }
    return rc || lo >= hi ? rc : push_range(rs, lo, hi);
}

// Adds [lo, hi) but glibc's heaps in it.
static int push_but_heaps(ranges* roots, const mt_live_block* b, size_t n, uintptr_t lo,
                          uintptr_t hi) {
    int rc = 0;
    for (uintptr_t a = (lo + GLIBC_HEAP_MAX - 1) & ~(GLIBC_HEAP_MAX - 1); a < hi && !rc;
         a += GLIBC_HEAP_MAX) {
        if (!glibc_heap_at(a, hi))
            continue;
        rc = push_between_blocks(roots, b, n, lo, a);
        lo = a + GLIBC_HEAP_MAX < hi ? a + GLIBC_HEAP_MAX : hi;
    }
    return rc || lo >= hi ? rc : push_between_blocks(roots, b, n, lo, hi);
}

// memcheck reads every writable mapping that is not its heap as a root: CPython's object
// arenas, a program's own pools. These are the anonymous ones but the threads' stacks (read
// from their stack pointers by thread_roots), glibc's heaps (their free chunks keep old
// pointers; their live blocks are scanned when reached), the modules' bss (roots already,
// or the tracer's) and the tracer's own pages.
static int anon_roots(ranges* roots, const mapping* maps, size_t nmaps, const ranges* modules,
                      const mt_live_block* b, size_t n) {
    ranges parts = {0};
    int rc = 0;
    for (size_t i = 0; i < nmaps && !rc; i++) {
        const mapping* m = &maps[i];
        if (!m->readable || !m->writable || !m->anon || m->named || m->own || !m->resident)
            continue;
        bool guarded = i > 0 && maps[i - 1].hi == m->lo && !maps[i - 1].readable;
        if (guarded && descriptor_in(m))
            continue;
        rc = outside_modules(&parts, modules, m->lo, m->hi);
        for (size_t k = 0; k < parts.n && !rc; k++)
            rc = push_but_heaps(roots, b, n, parts.r[k].lo, parts.r[k].hi);
    }
    mt_writer_heap_free(parts.r);
    return rc;
}

// memcheck reads every writable file mapping and shared memory too: a program's own mapped
// files and shared pools, but not a module's segments (roots already, or the tracer's) nor a
// device's memory.
static int file_roots(ranges* files, const mapping* maps, size_t nmaps, const ranges* modules) {
    ranges parts = {0};
    int rc = 0;
    for (size_t i = 0; i < nmaps && !rc; i++) {
        const mapping* m = &maps[i];
        if (!m->readable || !m->writable || m->anon || m->own || m->device || !m->resident)
            continue;
        rc = outside_modules(&parts, modules, m->lo, m->hi);
        for (size_t k = 0; k < parts.n && !rc; k++)
            rc = push_range(files, parts.r[k].lo, parts.r[k].hi);
    }
    mt_writer_heap_free(parts.r);
    return rc;
}

// Where this thread's stack holds the program's data: the frame of the program's code that
// called into libc (exit, or a detach's call) and those above it. The frames below are
// libc's and the tracer's, and their unwritten slots hold what earlier calls left (the hooks'
// own locals: the address of each block allocated), which memcheck, knowing them undefined,
// never counts. The callee-saved registers as that frame had them go into regs.
// The loaded module that holds an address: its load base and path ("" for the program).
typedef struct module {
    uintptr_t base;
    const char* name; // NULL: no module holds it
} module;

static int module_holds(struct dl_phdr_info* info, size_t size, void* data) {
    (void)size;
    module* m = data;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr)* ph = &info->dlpi_phdr[i];
        uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
        if (ph->p_type == PT_LOAD && m->base >= lo && m->base - lo < ph->p_memsz) {
            *m = (module){info->dlpi_addr, info->dlpi_name ? info->dlpi_name : ""};
            return 1;
        }
    }
    return 0;
}

static module module_of(uintptr_t a) {
    module m = {a, NULL};
    if (!dl_iterate_phdr(module_holds, &m))
        m = (module){0, NULL};
    return m;
}

static uintptr_t program_frame(uintptr_t* regs, int* nregs) {
    static const int saved[] = {UNW_X86_64_RBX, UNW_X86_64_RBP, UNW_X86_64_R12,
                                UNW_X86_64_R13, UNW_X86_64_R14, UNW_X86_64_R15};
    unw_context_t ctx;
    unw_cursor_t cur;
    *nregs = 0;
    if (unw_getcontext(&ctx) || unw_init_local(&cur, &ctx))
        return 0;
    module self = module_of((uintptr_t)&own_data);
    if (!self.name)
        return 0;
    for (int depth = 0; depth < 256 && unw_step(&cur) > 0; depth++) {
        unw_word_t ip, sp;
        if (unw_get_reg(&cur, UNW_REG_IP, &ip) || unw_get_reg(&cur, UNW_REG_SP, &sp))
            return 0;
        module m = module_of(ip - 1);
        if (!m.name)
            continue;
        const char* base = strrchr(m.name, '/');
        base = base ? base + 1 : m.name;
        if (m.base == self.base || !strncmp(base, "libc.so", 7) || !strncmp(base, "ld-linux", 8))
            continue;
        for (size_t i = 0; i < sizeof saved / sizeof *saved; i++) {
            unw_word_t v;
            if (!unw_get_reg(&cur, saved[i], &v))
                regs[(*nregs)++] = v;
        }
        return sp;
    }
    return 0;
}

// ---- the scan, in the copy or in place

#define WINDOW_BYTES ((size_t)16 << 10)

// This process's memory at [a, a + len) into buf, by the kernel: bytes read, fewer up to a
// page it could not read, or -1.
static ssize_t read_self(pid_t pid, void* buf, uintptr_t a, size_t len) {
    struct iovec local = {buf, len}, remote = {(void*)a, len};
    return (ssize_t)syscall(SYS_process_vm_readv, pid, &local, 1L, &remote, 1L, 0L);
}

// The next words of [*a, hi) (*a aligned to 8): their count (0 at the end), *w pointing at
// them, *a past them. In the copy, the memory itself; in place, a window's worth read
// through the kernel, a page it cannot read skipped (the copy died of its signal there).
static size_t fetch(scan_state* s, uintptr_t* a, uintptr_t hi, const uintptr_t** w) {
    while (*a + 8 <= hi) {
        size_t len = (hi - *a) & ~(uintptr_t)7;
        if (!s->in_place) {
            *w = (const uintptr_t*)*a;
            *a += len;
            return len / 8;
        }
        if (s->timed_out || s->read_error || now_ns() > s->deadline) {
            s->timed_out = !s->read_error;
            return 0;
        }
        uintptr_t page_end = (*a + 4096) & ~(uintptr_t)4095;
        if (len > WINDOW_BYTES)
            len = WINDOW_BYTES;
        ssize_t got = read_self(s->pid, s->window, *a, len);
        if (got < 8 && page_end - *a < len) // the kernel may refuse the whole read: this page
            got = read_self(s->pid, s->window, *a, page_end - *a);
        if (got >= 8) {
            *w = s->window;
            *a += (size_t)got & ~(size_t)7;
            return (size_t)got / 8;
        }
        if (got < 0 && errno != EFAULT) { // not the page: skipping it would make false leaks
            s->read_error = errno;
            return 0;
        }
        *a = page_end;
    }
    return 0;
}

// The word before block i (the size field of glibc's chunk header).
static uintptr_t head_of(const scan_state* s, size_t i) {
    return s->in_place ? s->heads[i] : *(const uintptr_t*)(s->b[i].addr - 8);
}

// The block a word points into, or -1.
static long block_of(const scan_state* s, uintptr_t p) {
    if (p < s->lo || p >= s->hi)
        return -1;
    size_t lo = 0, hi = s->n;
    while (hi - lo > 1) {
        size_t mid = (lo + hi) / 2;
        if (s->b[mid].addr <= p)
            lo = mid;
        else
            hi = mid;
    }
    const mt_live_block* b = &s->b[lo];
    if (p < b->addr || (p != b->addr && p - b->addr >= b->size))
        return -1;
    // glibc keeps pointers to chunk headers (the top chunk, its bins): the header of the
    // chunk after a block lies in the block's last bytes when the block fills its chunk.
    // Such a word is the allocator's, not the program's pointer into the block.
    if (s->glibc && p != b->addr && (p & 15) == 0 &&
        p == b->addr - 16 + (head_of(s, lo) & ~(uintptr_t)7))
        return -1;
    return (long)lo;
}

static void mark(scan_state* s, uintptr_t p, bool from_reachable) {
    long i = block_of(s, p);
    if (i < 0)
        return;
    uint8_t want = from_reachable && p == s->b[i].addr ? REACHABLE : POSSIBLE;
    if (want > s->st[i]) {
        s->st[i] = want;
        s->stack[s->top++] = (uint32_t)i;
    }
}

static void scan_words(scan_state* s, uintptr_t lo, uintptr_t hi, bool from_reachable) {
    lo = (lo + 7) & ~(uintptr_t)7;
    const uintptr_t* w;
    uintptr_t a = lo;
    for (size_t k; (k = fetch(s, &a, hi, &w)) != 0;)
        for (size_t i = 0; i < k; i++)
            mark(s, w[i], from_reachable);
    s->scanned += hi > lo ? hi - lo : 0;
}

static void drain(scan_state* s);

// ---- CPython's object arenas

// pymalloc carves its arenas into pools aligned to their size (16 KiB from 3.10, 4 KiB
// before), each a header of 48 bytes {count, freeblock, nextpool, prevpool, arenaindex,
// szidx, nextoffset, maxnextoffset} and blocks of (szidx + 1) * 16 bytes. The size of a pool
// whose header is at a, or 0: maxnextoffset is the pool's size less a block's.
static uintptr_t pool_at(uintptr_t a, uintptr_t hi) {
    static const uintptr_t sizes[] = {16384, 4096};
    for (size_t k = 0; k < 2; k++) {
        uintptr_t size = sizes[k];
        if (a % size || a + size > hi)
            continue;
        const uint32_t* h = (const uint32_t*)a;
        uint32_t block = (h[9] + 1) * 16, next = h[10];
        if (h[9] < 64 && h[11] == size - block && next >= 48 && next <= size &&
            (next - 48) % block == 0 && h[0] <= (size - 48) / block)
            return size;
    }
    return 0;
}

// Scans a pool's blocks but its free ones and those never used: their words are what freed
// objects left, which a conservative scan would take for pointers (and does under memcheck,
// whose allocator rarely gives the memory they point at to a new block).
static void scan_pool(scan_state* s, uintptr_t pool) {
    static uint8_t used[16384 / 16];
    const uint32_t* h = (const uint32_t*)pool;
    uint32_t block = (h[9] + 1) * 16, next = h[0] ? h[10] : 48; // an empty pool holds none
    size_t n = (next - 48) / block;
    memset(used, 1, n);
    uintptr_t f = *(const uintptr_t*)(pool + 8);
    for (size_t k = 0; f && k < n; k++) {
        if (f < pool + 48 || f >= pool + next || (f - pool - 48) % block)
            break;
        used[(f - pool - 48) / block] = 0;
        f = *(const uintptr_t*)f;
    }
    for (size_t i = 0; i < n; i++)
        if (used[i])
            scan_words(s, pool + 48 + i * block, pool + 48 + (i + 1) * block, true);
}

// Memory the program mapped itself: as any root, but for CPython's pools (pool_at).
static void scan_mapped(scan_state* s, uintptr_t lo, uintptr_t hi) {
    uintptr_t a = lo;
    while (a < hi) {
        uintptr_t size = s->pymalloc ? pool_at(a, hi) : 0;
        if (size) {
            scan_pool(s, a);
            a += size;
        } else {
            uintptr_t next = (a + 4096) & ~(uintptr_t)4095;
            scan_words(s, a, next < hi ? next : hi, true);
            a = next;
        }
        drain(s);
    }
}

// A mapped file's pages that are in memory: one never read is the file's content, and
// reading it would read the file.
static void scan_file(scan_state* s, uintptr_t lo, uintptr_t hi) {
    static unsigned char in_core[256];
    for (uintptr_t a = lo; a < hi; a += sizeof in_core * 4096) {
        uintptr_t end = hi - a > sizeof in_core * 4096 ? a + sizeof in_core * 4096 : hi;
        size_t pages = (end - a + 4095) / 4096;
        if (syscall(SYS_mincore, a, end - a, in_core) != 0)
            memset(in_core, 1, pages);
        for (size_t p = 0; p < pages; p++)
            if (in_core[p] & 1) {
                uintptr_t page = a + p * 4096;
                scan_words(s, page, page + 4096 < end ? page + 4096 : end, true);
            }
        drain(s);
    }
}

static void drain(scan_state* s) {
    while (s->top) {
        uint32_t i = s->stack[--s->top];
        const mt_live_block* b = &s->b[i];
        scan_words(s, b->addr, b->addr + b->size, s->st[i] == REACHABLE);
    }
}

// The unreached blocks that leader reaches become indirectly lost, held by the block whose
// word points at them; a leader met again was unreached, and is claimed too.
static void claim(scan_state* s, uint32_t leader) {
    s->st[leader] = LEADER;
    s->stack[s->top++] = leader;
    while (s->top) {
        uint32_t k = s->stack[--s->top];
        const mt_live_block* b = &s->b[k];
        uintptr_t a = (b->addr + 7) & ~(uintptr_t)7;
        const uintptr_t* w;
        for (size_t m; (m = fetch(s, &a, b->addr + b->size, &w)) != 0;)
            for (size_t i = 0; i < m; i++) {
                long j = block_of(s, w[i]);
                if (j < 0 || (uint32_t)j == leader || (s->st[j] != UNREACHED && s->st[j] != LEADER))
                    continue;
                bool fresh = s->st[j] == UNREACHED;
                s->st[j] = INDIRECT;
                s->holder[j] = k;
                if (fresh)
                    s->stack[s->top++] = (uint32_t)j;
            }
        s->scanned += b->size;
    }
}

static void scan(scan_state* s, const ranges* roots, const ranges* mapped, const ranges* files) {
    for (size_t i = 0; i < roots->n; i++) {
        scan_words(s, roots->r[i].lo, roots->r[i].hi, true);
        drain(s);
    }
    for (size_t i = 0; i < mapped->n; i++)
        scan_mapped(s, mapped->r[i].lo, mapped->r[i].hi);
    for (size_t i = 0; i < files->n; i++)
        scan_file(s, files->r[i].lo, files->r[i].hi);
    for (size_t i = 0; i < s->n; i++)
        if (s->st[i] == UNREACHED)
            claim(s, (uint32_t)i);
    static const uint8_t kind_of[] = {[UNREACHED] = MT_LEAK_DEFINITE,
                                      [POSSIBLE] = MT_LEAK_POSSIBLE,
                                      [REACHABLE] = MT_LEAK_REACHABLE,
                                      [INDIRECT] = MT_LEAK_INDIRECT,
                                      [LEADER] = MT_LEAK_DEFINITE};
    for (size_t i = 0; i < s->n; i++)
        s->st[i] = kind_of[s->st[i]];
    *s->scanned_out = s->scanned;
}

static _Noreturn void scan_in_copy(scan_state* s, const ranges* roots, const ranges* mapped,
                                   const ranges* files) {
    sigset_t all;
    sigfillset(&all);
    syscall(SYS_rt_sigprocmask, SIG_SETMASK, &all, NULL, sizeof(long));
    syscall(SYS_prctl, PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
    scan(s, roots, mapped, files);
    syscall(SYS_exit_group, 0);
    for (;;)
        ;
}

// ---- the parent's side

// By the loader's list of modules: dladdr would also search the module's symbols, most of
// a tiny program's exit in libc's case.
bool mt_leak_scan_reads_mapped(void) {
    static _Atomic int known; // 0: not yet, 1: libc's malloc, 2: another's
    int k = atomic_load_explicit(&known, memory_order_relaxed);
    if (!k) {
        uintptr_t fn;
        memcpy(&fn, &mt_real.malloc, sizeof fn); // ISO C has no cast from a function pointer
        module m = module_of(fn);
        k = m.name && strstr(m.name, "libc.so") ? 1 : 2;
        atomic_store_explicit(&known, k, memory_order_relaxed);
    }
    return k == 1;
}

static bool seccomp_filtered(void) {
    char buf[4096];
    int fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return false;
    ssize_t k = read(fd, buf, sizeof buf - 1);
    close(fd);
    buf[k > 0 ? k : 0] = 0;
    const char* p = strstr(buf, "\nSeccomp:");
    return p && strtol(p + 9, NULL, 10) == 2;
}

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif

// Sleeps until the copy may have ended: on a pidfd of it, which wakes the moment it exits,
// else (a kernel before 5.3) for a millisecond, which a tiny program's exit would wait in full.
static void await_copy(int pidfd, int64_t deadline) {
    int64_t left = deadline - now_ns();
    if (pidfd >= 0 && left > 0) {
        struct pollfd p = {.fd = pidfd, .events = POLLIN};
        struct timespec ts = {left / 1000000000, left % 1000000000};
        syscall(SYS_ppoll, &p, 1, &ts, NULL, 0);
        return;
    }
    struct timespec ms = {0, 1000000};
    nanosleep(&ms, NULL);
}

static int wait_copy(pid_t pid, int timeout_ms, int64_t* cpu_ns, char* why, size_t cap) {
    int status = 0;
    struct rusage ru = {0};
    int64_t deadline = now_ns() + (int64_t)timeout_ms * 1000000;
    int pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
    int rc = 0;
    for (;;) {
        pid_t r = (pid_t)syscall(SYS_wait4, pid, &status, __WALL | WNOHANG, &ru);
        if (r == pid) {
            *cpu_ns = ((int64_t)ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000000 +
                      ((int64_t)ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1000;
            break;
        }
        if (r < 0 && errno != EINTR) {
            snprintf(why, cap, "the scanning copy could not be waited for: %s", strerror(errno));
            rc = -ECHILD;
            break;
        }
        if (now_ns() > deadline) {
            syscall(SYS_kill, pid, SIGKILL);
            syscall(SYS_wait4, pid, &status, __WALL, NULL);
            snprintf(why, cap, "timeout: the scan took more than %d ms", timeout_ms);
            rc = -ETIMEDOUT;
            break;
        }
        await_copy(pidfd, deadline);
    }
    if (pidfd >= 0)
        close(pidfd);
    if (rc)
        return rc;
    if (WIFSIGNALED(status)) {
        snprintf(why, cap, "the scanning copy died of signal %d", WTERMSIG(status));
        return -EIO;
    }
    if (!WIFEXITED(status) || WEXITSTATUS(status)) {
        snprintf(why, cap, "the scanning copy failed");
        return -EIO;
    }
    return 0;
}

// Whether every task of the process is this thread or skip_tid (the writer thread, which
// never writes the program's memory): then nothing changes that memory while this thread
// scans it with its signals blocked.
static bool alone(pid_t skip_tid) {
    int fd = open("/proc/self/task", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return false;
    pid_t self = (pid_t)syscall(SYS_gettid);
    bool only = true;
    char buf[1024];
    for (long k; only && (k = syscall(SYS_getdents64, fd, buf, sizeof buf)) > 0;)
        for (long off = 0; only && off < k;) {
            const char* name = buf + off + 19; // struct linux_dirent64: d_name
            unsigned short reclen;
            memcpy(&reclen, buf + off + 16, sizeof reclen);
            off += reclen;
            if (name[0] == '.')
                continue;
            pid_t tid = (pid_t)atol(name);
            only = tid == self || (skip_tid > 0 && tid == skip_tid);
        }
    close(fd);
    return only;
}

// Sets s up to scan in place: the window, each block's preceding word. False where the
// kernel does not read this process's memory (process_vm_readv refused, or no memory).
static bool prepare_in_place(scan_state* s) {
    s->pid = getpid();
    uintptr_t probe = (uintptr_t)s, got = 0;
    if (read_self(s->pid, &got, (uintptr_t)&probe, sizeof probe) != sizeof probe || got != probe)
        return false;
    s->window = mt_real.mmap(NULL, WINDOW_BYTES, PROT_READ | PROT_WRITE,
                             MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    s->heads = mt_real.mmap(NULL, s->n * sizeof *s->heads, PROT_READ | PROT_WRITE,
                            MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (s->window == MAP_FAILED || s->heads == MAP_FAILED) {
        if (s->window != MAP_FAILED)
            mt_real.munmap(s->window, WINDOW_BYTES);
        if (s->heads != MAP_FAILED)
            mt_real.munmap(s->heads, s->n * sizeof *s->heads);
        s->window = s->heads = NULL;
        return false;
    }
    // Many heads a call; a head the kernel cannot read stays 0 (no chunk's size).
    enum { BATCH = 512 };
    struct iovec local[BATCH], remote[BATCH];
    for (size_t i = 0; i < s->n;) {
        size_t k = s->n - i < BATCH ? s->n - i : BATCH;
        for (size_t j = 0; j < k; j++) {
            local[j] = (struct iovec){&s->heads[i + j], sizeof *s->heads};
            remote[j] = (struct iovec){(void*)(s->b[i + j].addr - 8), sizeof *s->heads};
        }
        long got_bytes = syscall(SYS_process_vm_readv, s->pid, local, (long)k, remote, (long)k, 0L);
        size_t done = got_bytes > 0 ? (size_t)got_bytes / sizeof *s->heads : 0;
        i += done < k ? done + 1 : k; // past the head that failed
    }
    s->in_place = true;
    return true;
}

static void release_in_place(scan_state* s) {
    if (s->window)
        mt_real.munmap(s->window, WINDOW_BYTES);
    if (s->heads)
        mt_real.munmap(s->heads, s->n * sizeof *s->heads);
}

__attribute__((noinline)) int mt_leak_scan_run(const mt_live_block* blocks, size_t n,
                                               pthread_t skip, pid_t skip_tid, int timeout_ms,
                                               mt_leak_scan* out, char* why, size_t cap) {
    int64_t t0 = now_ns();
    memset(out, 0, sizeof *out);
    if (!n) { // nothing to classify: no copy to make
        out->ns = now_ns() - t0;
        return 0;
    }
    if (seccomp_filtered()) {
        snprintf(why, cap, "a seccomp filter is in force: no copy of the process is made");
        return -EPERM;
    }
    find_pthread_layout();
    size_t text_len, nmaps = 0;
    char* text = read_maps(&text_len);
    mapping* maps = text ? parse_maps(text, &nmaps) : NULL;
    mt_writer_heap_free(text);
    ranges roots = {0}, modules = {0};
    int rc = maps ? 0 : -ENOMEM;
    module_walk w = {&roots, &modules, maps, nmaps, (uintptr_t)&own_data, UINTPTR_MAX, 0};
    if (!rc) {
        dl_iterate_phdr(each_module, &w);
        rc = w.rc;
        sort_ranges(&modules);
    }
    int nregs = 0;
    volatile uintptr_t here = (uintptr_t)&here;
    uintptr_t sp = rc ? 0 : program_frame(frame_regs, &nregs);
    if (!rc && nregs)
        rc = push_range(&roots, (uintptr_t)frame_regs, (uintptr_t)(frame_regs + nregs));
    if (!rc)
        rc = thread_roots(&roots, maps, nmaps, sp ? sp : here, (uintptr_t)pthread_self(), w.tls_low,
                          (uintptr_t)skip);
    scan_state s = {.b = blocks,
                    .n = n,
                    .glibc = mt_leak_scan_reads_mapped(),
                    .pymalloc = mt_python_frames_status() != NULL};
    // Beside another allocator its own mappings would be read as roots, free memory and all.
    ranges mapped = {0}, files = {0};
    if (!rc && s.glibc)
        rc = anon_roots(&mapped, maps, nmaps, &modules, blocks, n);
    if (!rc)
        rc = file_roots(&files, maps, nmaps, &modules);
    size_t len = (64 + n * 5 + 4095) & ~(size_t)4095;
    void* shared = MAP_FAILED;
    if (!rc) {
        shared = mt_real.mmap(NULL, len ? len : 4096, PROT_READ | PROT_WRITE,
                              MAP_SHARED | MAP_ANONYMOUS, -1, 0);
        s.stack = mt_real.mmap(NULL, (2 * n + 1) * sizeof *s.stack, PROT_READ | PROT_WRITE,
                               MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (shared == MAP_FAILED || s.stack == MAP_FAILED)
            rc = -ENOMEM;
    }
    if (rc) {
        snprintf(why, cap, "no memory for the scan");
        goto out;
    }
    s.scanned_out = shared; // the copy's count of bytes scanned comes back here
    s.holder = (uint32_t*)((char*)shared + 64);
    s.st = (uint8_t*)shared + 64 + n * 4;
    memset(s.holder, 0xff, n * 4);
    if (n) {
        s.lo = blocks[0].addr;
        for (size_t i = 0; i < n; i++)
            if (blocks[i].addr + (blocks[i].size ? blocks[i].size : 1) > s.hi)
                s.hi = blocks[i].addr + (blocks[i].size ? blocks[i].size : 1);
    }
    for (size_t i = 0; i < roots.n; i++)
        out->roots_bytes += roots.r[i].hi - roots.r[i].lo;
    for (size_t i = 0; i < mapped.n; i++)
        out->roots_bytes += mapped.r[i].hi - mapped.r[i].lo;
    for (size_t i = 0; i < files.n; i++)
        out->roots_bytes += files.r[i].hi - files.r[i].lo;
    // CPython's pools are read as they lie (scan_pool): only in a copy.
    if (!s.pymalloc && alone(skip_tid) && prepare_in_place(&s)) {
        sigset_t all, old;
        sigfillset(&all);
        syscall(SYS_rt_sigprocmask, SIG_SETMASK, &all, &old, sizeof(long));
        int64_t c0 = thread_cpu_ns();
        s.deadline = t0 + (int64_t)timeout_ms * 1000000;
        scan(&s, &roots, &mapped, &files);
        out->cpu_ns = thread_cpu_ns() - c0;
        syscall(SYS_rt_sigprocmask, SIG_SETMASK, &old, NULL, sizeof(long));
        release_in_place(&s);
        out->in_place = true;
        if (s.read_error) {
            snprintf(why, cap, "the process's memory could not be read: %s",
                     strerror(s.read_error));
            rc = -EIO;
        } else if (s.timed_out) {
            snprintf(why, cap, "timeout: the scan took more than %d ms", timeout_ms);
            rc = -ETIMEDOUT;
        }
        goto out;
    }
    // Exit signal 0: no SIGCHLD for the program, and only a wait with __WALL sees it.
    long pid = syscall(SYS_clone, 0L, NULL, NULL, NULL, NULL);
    if (pid == 0)
        scan_in_copy(&s, &roots, &mapped, &files);
    if (pid < 0) {
        rc = -errno;
        snprintf(why, cap, "no copy of the process could be made: %s", strerror(errno));
        goto out;
    }
    rc = wait_copy((pid_t)pid, timeout_ms, &out->cpu_ns, why, cap);
out:
    if (s.stack && s.stack != MAP_FAILED)
        mt_real.munmap(s.stack, (2 * n + 1) * sizeof *s.stack);
    mt_writer_heap_free(roots.r);
    mt_writer_heap_free(modules.r);
    mt_writer_heap_free(mapped.r);
    mt_writer_heap_free(files.r);
    mt_writer_heap_free(maps);
    if (rc) {
        if (shared != MAP_FAILED)
            mt_real.munmap(shared, len ? len : 4096);
        return rc;
    }
    out->map = shared;
    out->map_len = len ? len : 4096;
    out->kind = s.st;
    out->holder = s.holder;
    out->n = n;
    out->scanned_bytes = *s.scanned_out;
    out->ns = now_ns() - t0;
    return 0;
}

void mt_leak_scan_release(mt_leak_scan* s) {
    if (s->map)
        mt_real.munmap(s->map, s->map_len);
    memset(s, 0, sizeof *s);
}
