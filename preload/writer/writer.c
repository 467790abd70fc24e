// SPDX-License-Identifier: MIT
// The writer thread (see writer.h). Runs with the guard set for its whole life, so SQLite's
// and libdw's allocations pass through untraced, and with all signals blocked. Nothing here
// runs inside a hook except mt_writer_mark's queue push and mt_writer_fail's one line (the
// event path calls both through what lifecycle registered: record/core_internal.h).
#include "writer.h"

#include "bootstrap.h"
#include "clock.h"
#include "config.h"
#include "core.h"
#include "exit_watch.h"
#include "fdguard.h"
#include "leak_scan.h"
#include "live_set.h"
#include "maps.h"
#include "mmap_track.h"
#include "output.h"
#include "procfile.h"
#include "python_frames.h"
#include "python_heap.h"
#include "recording.h"
#include "sampling.h"
#include "say.h"
#include "trie.h"
#include "write_signals.h"
#include "writer_heap.h"
#include "writer_rows.h"

#include "memtrace/capture.h"
#include "memtrace/codec.h"
#include "memtrace/schema.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define BATCH 4096

static mt_capture_writer* cw;
static pthread_t writer_thread;
static bool writer_running;
static bool writer_joinable; // writer_thread exists and nobody joined or detached it yet
static _Atomic int stop_requested;
static _Atomic int pause_requested; // mt_writer_step_aside: the thread ends, the capture goes on
static _Atomic pid_t writer_tid;    // its task, which leaves the thread group after the join
static pid_t writer_pid;            // the process the writer thread belongs to
static uint8_t* scratch;
static mt_event* sortbuf;
static int64_t last_commit, last_sample;
static uint64_t events_written;
// Every block live in the capture, for the leak scan at the end (MEMTRACE_LEAKS; not when
// sampled: the scan needs every block). NULL when not kept.
static mt_live_set* live;
static int64_t settle_at; // when settle_seq becomes safe for mt_live_set_settle
static uint64_t settle_seq;
static long page_size;
static bool failed;
// Taken when the capture starts, not when the writer gets to them: the program may chdir,
// or rewrite its argv (as servers that set their process title do).
static char capture_path[4096], start_cwd[4096], start_cmdline[16384];
static pid_t start_ppid;
static bool forked_here; // start_ppid and start_cwd were taken at the fork (mt_writer_forget)
// A forked child's parent's capture (its file name), so a tree of captures can be rebuilt
// even when the parent's pid has several (images before and after an exec).
static char parent_capture[4096];
static pthread_mutex_t sqlite_lock = PTHREAD_MUTEX_INITIALIZER; // see mt_writer_fork_lock

typedef struct pending_mark {
    struct pending_mark* next;
    int what;
    int64_t ts;
    uint32_t tid;
    char name[];
} pending_mark;

static pthread_mutex_t mark_lock = PTHREAD_MUTEX_INITIALIZER;
static pending_mark *marks_head, *marks_tail;
// Written since the last commit, in order: freed by the commit, queued again by a rewind.
static pending_mark *marks_written, *marks_written_tail;
// Set by the program's first mark: reports place events against marks by time, and an event
// made just after a mark, rounded down, would fall before it. From then on times are kept in
// ns. A thread's events after its mark are committed after this is set, so the writer sees
// it before it converts them.
static _Atomic bool exact_times;
static bool exact_times_noted; // meta time_resolution_ns says 1

// Threads waiting in mt_writer_fork_lock. The writer lets them in between two pieces of its
// work (let_forks_in): a fork waits for one chunk or one commit, never for a whole drain.
static _Atomic int forks_waiting;

void mt_writer_fork_lock(void) {
    atomic_fetch_add(&forks_waiting, 1);
    pthread_mutex_lock(&sqlite_lock);
    atomic_fetch_sub(&forks_waiting, 1);
    pthread_mutex_lock(&mark_lock);
}

void mt_writer_fork_unlock(void) {
    pthread_mutex_unlock(&mark_lock);
    pthread_mutex_unlock(&sqlite_lock);
}

// ---- failures: report once, keep what was committed, stop tracing

void mt_writer_fail(const char* what, const char* why) {
    static _Atomic int reported;
    atomic_store(&mt_state, MT_STATE_STOPPED);
    mt_core_buffers_release_waiters();
    if (atomic_exchange(&reported, 1))
        return;
    char line[512];
    size_t n = 0;
    const char* parts[] = {"memtrace: ", what, ": ", why, "; the program continues untraced\n"};
    for (size_t i = 0; i < sizeof parts / sizeof *parts; i++)
        for (const char* p = parts[i]; p && *p && n < sizeof line; p++)
            line[n++] = *p;
    // Under the launcher, it says so at the end; the program's stderr stays the program's.
    // Attached to a running process (memtrace --pid), never its stderr: the launcher
    // reports what memtrace_attach returns.
    line[n - 1] = 0;
    if (!mt_output_report_failure(line + strlen("memtrace: ")) && !atomic_load(&mt_core_attached)) {
        line[n - 1] = '\n';
        mt_say(line, n);
    }
}

void mt_writer_fail_sqlite(const char* what) {
    if (failed)
        return;
    failed = true;
    char why[512];
    int n = snprintf(why, sizeof why, "%s", cw ? mt_capture_writer_error(cw) : "unknown error");
    // A write past the process's file size limit fails with EFBIG, which SQLite reports as
    // a bare "disk I/O error" (its errno is gone by then): name the limit.
    struct rlimit fsize;
    if (getrlimit(RLIMIT_FSIZE, &fsize) == 0 && fsize.rlim_cur != RLIM_INFINITY && n > 0 &&
        (size_t)n < sizeof why)
        snprintf(why + n, sizeof why - (size_t)n,
                 " (the file size limit, ulimit -f, is %llu bytes)",
                 (unsigned long long)fsize.rlim_cur);
    mt_writer_fail(what, why);
}

// ---- meta

static void write_meta(void) {
    char buf[16384];
    mt_capture_writer_meta_text(cw, "tool_version", "memtrace " MEMTRACE_VERSION_STRING);
    mt_capture_writer_meta_int(cw, "pid", getpid());
    mt_capture_writer_meta_int(cw, "ppid", start_ppid);
    if (parent_capture[0])
        mt_capture_writer_meta_text(cw, "parent_capture", parent_capture);
    ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
    buf[n > 0 ? n : 0] = 0;
    mt_capture_writer_meta_text(cw, "exe", buf);
    mt_capture_writer_meta_text(cw, "cmdline", start_cmdline);
    if (start_cwd[0])
        mt_capture_writer_meta_text(cw, "cwd", start_cwd);
    if (gethostname(buf, sizeof buf) == 0)
        mt_capture_writer_meta_text(cw, "hostname", buf);
    struct timespec rt;
    clock_gettime(CLOCK_REALTIME, &rt);
    mt_capture_writer_meta_int(cw, "start_realtime_ns",
                               (int64_t)rt.tv_sec * 1000000000 + rt.tv_nsec - mt_clock_now());
    mt_capture_writer_meta_int(cw, "page_size", page_size);
    mt_capture_writer_meta_text(cw, "unwinder", mt_config_unwind_name(mt_cfg.unwind));
    mt_capture_writer_meta_int(cw, "depth", mt_cfg.depth);
    mt_capture_writer_meta_int(cw, "sample_ms", mt_cfg.sample_ms);
    mt_capture_writer_meta_int(cw, "commit_ms", mt_cfg.commit_ms);
    mt_capture_writer_meta_int(cw, "follow_fork", mt_cfg.follow_fork);
    mt_capture_writer_meta_int(cw, "time_resolution_ns", mt_cfg.time_ns > 1 ? mt_cfg.time_ns : 1);
    mt_capture_writer_set_time_unit(cw, mt_cfg.time_ns);
    if (atomic_load(&mt_core_attached)) // memtrace --pid: blocks from before may be freed
        mt_capture_writer_meta_int(cw, "attached", 1);
    if (mt_sampling) { // readers weigh each allocation by its probability (capture-format.md)
        mt_capture_writer_meta_int(cw, "sample_bytes", mt_cfg.sample_bytes);
        mt_capture_writer_meta_text(cw, "sample_method", "poisson-bytes");
    }
    mt_capture_writer_heap(cw, MT_HEAP_LIBC, "libc", "native", "ns");
    mt_capture_writer_counter_track(cw, MT_TRACK_RSS, MT_HEAP_LIBC, "RSS", "bytes");
    mt_capture_writer_counter_track(cw, MT_TRACK_VSZ, MT_HEAP_LIBC, "VSZ", "bytes");
    if (mt_cfg.mmap)
        mt_capture_writer_heap(cw, MT_HEAP_MMAP, "mmap", "mmap", "ns");
    if (mt_python_heap_on())
        mt_capture_writer_heap(cw, MT_HEAP_PYTHON, "python", "python", "ns");
    if (mt_python_heap_status()) // the CPython seen, and whether its allocators are recorded
        mt_capture_writer_meta_text(cw, "python_allocators", mt_python_heap_status());
}

// ---- events

// A raw time in ns since the start, rounded down to the resolution (MEMTRACE_TIME_NS):
// monotonic, so events and marks keep their order.
static int64_t to_ns(int64_t raw, bool exact) {
    int64_t ns = mt_clock_to_ns(raw), q = !exact && mt_cfg.time_ns > 1 ? mt_cfg.time_ns : 1;
    int64_t r = ns % q;
    return ns - (r < 0 ? r + q : r);
}

// Heap MT_HEAP_POOL's row, written with its first chunk and again when the program names it
// anew (memtrace_report_heap_name): the version of the name written, 0 before any.
static uint64_t pool_row_version;

static void pool_heap_row(void) {
    char name[MT_POOL_NAME_MAX];
    uint64_t v = mt_core_pool_name(name);
    if (v == pool_row_version || failed)
        return;
    if (mt_capture_writer_heap(cw, MT_HEAP_POOL, name, "pool", "ns"))
        mt_writer_fail_sqlite("cannot write the pool heap");
    pool_row_version = v;
}

static int by_seq(const void* a, const void* b) {
    uint64_t x = ((const mt_event*)a)->seq, y = ((const mt_event*)b)->seq;
    return x < y ? -1 : x > y;
}

// A program killed by SIGKILL leaves its writer thread wherever it was; the exit watcher then
// finishes the capture on the same memory (mt_writer_finish_orphaned). It can go on from any
// point of the writer's work but a few: inside SQLite, whose connection is then half-way
// through a statement, and in updates of the writer's own state made of several stores.
// Those run between begin_unresumable and end_unresumable: from there the watcher goes back
// to the last commit (rewind_to_commit). The rest leaves everything it needs to be done
// again (a piece, below) until the step that marks it done.
static _Atomic int unresumable;

static void begin_unresumable(void) {
    atomic_fetch_add(&unresumable, 1);
}

static void end_unresumable(void) {
    atomic_fetch_sub(&unresumable, 1);
}

// Where not even going back to the last commit helps: inside the clock's calibration (a
// point half written would misplace every time after it), and once the capture is being
// finished for good (its last rows, names and status: stop_on_this_thread).
static _Atomic int unrewindable;

// The events being written: b->ev[b->taken, to), and the heaps whose chunk of them is stored
// already. The buffer itself is never changed until the piece is done.
typedef struct piece {
    mt_buffer* _Atomic b;
    uint32_t to; // 0: not yet chosen (b->committed then)
    unsigned stored;
} piece;
static piece cur_piece;
static mt_event* heapbuf; // one heap's events of a piece with several

// The buffers the writer took events from since its last commit, each as it was then
// (taken_committed), the drained ones not yet recycled: a writer killed inside SQLite loses
// its connection's uncommitted rows, and the exit watcher writes these events again
// (rewind_to_commit). At most KEEP_DRAINED drained ones: a drain that outgrows it commits.
#define KEEP_DRAINED 32
static mt_buffer* uncommitted;
static unsigned drained_uncommitted;
static uint64_t commits; // commit_all's commits settled (meta `commits`)

// Empties the list, each buffer as committed as it is now; `recycle`: the drained ones go
// back to the pool. Without: a new capture (or a fork child's, whose buffers hold the
// parent's events) has no commit to go back to, its drained buffers left as a child's
// queued ones are.
static void end_uncommitted(bool recycle) {
    while (uncommitted) {
        mt_buffer* b = uncommitted;
        uncommitted = b->uncommitted_next;
        b->uncommitted = false;
        b->taken_committed = b->taken;
        if (recycle && b->drained)
            mt_core_recycle(b);
    }
    drained_uncommitted = 0;
}

static void note_uncommitted(mt_buffer* b) {
    if (b->uncommitted)
        return;
    b->uncommitted = true;
    b->uncommitted_next = uncommitted;
    uncommitted = b;
}

static void store_chunk(int heap, const mt_event* ev, size_t n) {
    mt_chunk_header h;
    size_t len = mt_capture_writer_encode_chunk(cw, heap, ev, n, scratch, &h);
    begin_unresumable();
    if (!len || mt_capture_writer_insert_chunk(cw, &h, scratch, len) != 0)
        mt_writer_fail_sqlite("cannot write events");
    else
        cur_piece.stored |= 1u << heap;
    end_unresumable();
}

// Writes the piece as one chunk per heap. A signal handler that allocates inside a realloc
// can leave a buffer slightly out of seq order; chunks must be sorted.
static void write_piece(void) {
    mt_buffer* b = atomic_load(&cur_piece.b);
    note_uncommitted(b);
    uint32_t from = b->taken, to = cur_piece.to;
    // Past MEMTRACE_MAX_MB, events still in buffers are cut too: the file stops growing.
    size_t n = to > from && !failed && !(atomic_load(&mt_events_off) & MT_OFF_FULL) ? to - from : 0;
    memcpy(sortbuf, b->ev + from, n * sizeof *sortbuf);
    bool sorted = true, exact = atomic_load(&exact_times);
    size_t others = 0; // events of the mmap (MEMTRACE_MMAP=1), python and pool heaps
    bool pool = false;
    for (size_t i = 0; i < n; i++) {
        sortbuf[i].ts = to_ns(sortbuf[i].ts, exact);
        mt_trie_use(sortbuf[i].callsite); // a fork child's stack from before the fork
        // The leak scan reads the libc heap's blocks alone (scan_leaks): a python process's
        // objects, most of its events, would cost the writer 60 % more CPU for nothing.
        if (live && sortbuf[i].heap == MT_HEAP_LIBC)
            mt_live_set_apply(live, &sortbuf[i]);
        if (i > 0 && sortbuf[i - 1].seq >= sortbuf[i].seq)
            sorted = false;
        others += sortbuf[i].heap != MT_HEAP_LIBC;
        pool |= sortbuf[i].heap == MT_HEAP_POOL;
    }
    if (pool) {
        begin_unresumable();
        pool_heap_row();
        end_unresumable();
    }
    if (!sorted)
        qsort(sortbuf, n, sizeof *sortbuf, by_seq);
    if (others) {
        // A chunk holds one heap: each heap's events gathered, in seq order.
        static const int heaps[] = {MT_HEAP_LIBC, MT_HEAP_MMAP, MT_HEAP_PYTHON, MT_HEAP_POOL};
        for (size_t h = 0; h < sizeof heaps / sizeof *heaps && !failed; h++) {
            size_t k = 0;
            for (size_t i = 0; i < n; i++)
                if (sortbuf[i].heap == heaps[h])
                    heapbuf[k++] = sortbuf[i];
            if (k && !(cur_piece.stored & 1u << heaps[h]))
                store_chunk(heaps[h], heapbuf, k);
        }
    } else if (n && !(cur_piece.stored & 1u << MT_HEAP_LIBC)) {
        store_chunk(MT_HEAP_LIBC, sortbuf, n);
    }
    begin_unresumable();
    events_written += n;
    b->taken = to > from ? to : from;
    cur_piece.to = 0;
    cur_piece.stored = 0;
    atomic_store(&cur_piece.b, NULL);
    end_unresumable();
}

// Writes b->ev[b->taken, to) (write_piece).
static void write_events(mt_buffer* b, uint32_t to) {
    atomic_store(&cur_piece.b, b);
    cur_piece.to = to;
    write_piece();
}

// Called by the writer thread with sqlite_lock held, between two SQLite calls: a thread that
// forks waits for the lock (mt_writer_fork_lock), and SQLite's own mutexes are all free here.
// An unlock alone would not do: this thread would take the lock again before the waiter woke.
static void let_forks_in(void) {
    if (!atomic_load(&forks_waiting))
        return;
    pthread_mutex_unlock(&sqlite_lock);
    struct timespec pause = {0, 20000};
    while (atomic_load(&forks_waiting))
        nanosleep(&pause, NULL);
    pthread_mutex_lock(&sqlite_lock);
}

static void commit_all(int64_t now);
static uint64_t events_committed; // events_written at the last commit

// Drains full buffers until the queue is empty or the time `until` (mt_clock_now's) has come.
// Threads allocating without pause refill the queue as fast as it empties: a drain that
// waited for it to be empty never got to its commit (nothing committed in 8 s of two such
// threads, and a fork waited behind it for sqlite_lock).
static void drain_full(int64_t until) {
    mt_buffer* b;
    while ((b = mt_core_take_full(&cur_piece.b))) {
        cur_piece.to = atomic_load_explicit(&b->committed, memory_order_acquire);
        write_piece();
        b->drained = true;
        // MEMTRACE_MAX_MB: the size is looked at each commit; a writer catching up with a
        // backlog commits every 64K events, so the capture passes the limit by that at most.
        if (++drained_uncommitted >= KEEP_DRAINED ||
            (mt_cfg.max_mb && events_written - events_committed >= 65536))
            commit_all(mt_clock_now());
        if (mt_clock_now() >= until)
            return;
        let_forks_in();
    }
}

// Also ends the threads whose task is gone: their last events are written here, their
// buffer goes back to the pool, their row and record are the rows pass's (writer_rows.c).
static void steal_partials(void) {
    for (mt_thread* t = mt_core_threads(); t; t = t->next) {
        // Its full buffers first: a drain cut short by the commit leaves some queued, and
        // newer events committed before them would leave a hole in a capture that ends
        // there (killed, disk full): frees of blocks whose allocation never came. The count
        // is read after the buffer: it rose before the owner's next buffer showed.
        mt_buffer* b = atomic_load_explicit(&t->cur, memory_order_acquire);
        if (atomic_load_explicit(&t->reusable, memory_order_acquire) ||
            atomic_load_explicit(&t->queued, memory_order_acquire))
            continue;
        bool gone = atomic_load_explicit(&t->ending, memory_order_acquire) == MT_THREAD_EXITING &&
                    mt_core_task_gone(t);
        if (b) {
            write_events(b, atomic_load_explicit(&b->committed, memory_order_acquire));
            let_forks_in();
        }
        if (gone) {
            if (b) {
                atomic_store(&t->cur, NULL);
                b->drained = true;
            }
            atomic_store(&t->ending, MT_THREAD_GONE);
        }
    }
}

// ---- marks, counters (stacks, maps, threads and call counts: writer_rows.h)

static int write_mark(const pending_mark* m) {
    int64_t ts = to_ns(m->ts, true); // as events are: it keeps its place among them
    if (m->what == MT_MARK_RANGE_END)
        return mt_capture_writer_mark_end(cw, m->name, m->tid, ts);
    bool range = m->what == MT_MARK_RANGE_BEGIN;
    mt_mark_rec r = {.heap = MT_HEAP_LIBC,
                     .kind = range ? "range" : "mark",
                     .name = m->name,
                     .ts_begin = ts,
                     .has_end = !range, // a point: begins and ends at once
                     .ts_end = ts,
                     .has_tid = true,
                     .tid = m->tid};
    return mt_capture_writer_mark(cw, &r);
}

static void write_marks(void) {
    pthread_mutex_lock(&mark_lock);
    pending_mark* m = marks_head;
    marks_head = marks_tail = NULL;
    pthread_mutex_unlock(&mark_lock);
    if (m && !exact_times_noted && mt_cfg.time_ns > 1) {
        exact_times_noted = true;
        mt_capture_writer_meta_int(cw, "time_resolution_ns", 1);
    }
    if (!m)
        return;
    for (pending_mark* w = m; w; w = w->next)
        if (write_mark(w))
            mt_writer_fail_sqlite("cannot write marks");
    if (marks_written_tail)
        marks_written_tail->next = m;
    else
        marks_written = m;
    while (m->next)
        m = m->next;
    marks_written_tail = m;
}

void mt_writer_mark(const char* name, int what, int64_t ts, uint32_t tid) {
    size_t len = strlen(name);
    pending_mark* m = mt_writer_heap_malloc(sizeof *m + len + 1); // freed by the writer thread
    if (!m)
        return;
    m->next = NULL;
    m->what = what;
    m->ts = ts;
    m->tid = tid;
    memcpy(m->name, name, len + 1);
    atomic_store(&exact_times, true);
    pthread_mutex_lock(&mark_lock);
    if (marks_tail)
        marks_tail->next = m;
    else
        marks_head = m;
    marks_tail = m;
    pthread_mutex_unlock(&mark_lock);
}

// Read by the writer thread every few ms: kept open (procfile.h).
static mt_procfile statm_file = MT_PROCFILE("/proc/self/statm");
static mt_procfile stat_file = MT_PROCFILE("/proc/self/stat");

// A program at rest (a server waiting, a process stopped) would have a sample and a commit
// written every 10 ms all the same: 1.9 MB a second of writes to the capture's log for `sleep`.
// At rest the capture is committed once a second (idle_since_commit): a sample is written when
// RSS or VSZ changed, with the last one of the old values before it (a line drawn between
// samples stays flat until the change), and always at the end. Not while recording is started and
// stopped (MEMTRACE_START, MEMTRACE_SIGNAL), whose samples go on as before.
typedef struct memory_sample {
    int64_t ts;
    unsigned long long rss_pages, vsz_pages;
} memory_sample;

static memory_sample sample_written, sample_held; // the last written, the last not written
static bool any_sample_written, sample_is_held, sample_since_commit;

static void write_sample(const memory_sample* m) {
    begin_unresumable();
    if (mt_capture_writer_counter(cw, MT_TRACK_RSS, m->ts, (int64_t)(m->rss_pages * page_size)) ||
        mt_capture_writer_counter(cw, MT_TRACK_VSZ, m->ts, (int64_t)(m->vsz_pages * page_size)))
        mt_writer_fail_sqlite("cannot write counters");
    sample_written = *m;
    any_sample_written = sample_since_commit = true;
    sample_is_held = false;
    end_unresumable();
}

static void sample_memory(int64_t now, bool always) {
    char buf[128];
    if (mt_procfile_read(&statm_file, buf, sizeof buf) <= 0)
        return;
    memory_sample m = {.ts = now};
    if (sscanf(buf, "%llu %llu", &m.vsz_pages, &m.rss_pages) != 2)
        return;
    last_sample = now;
    bool same = any_sample_written && m.rss_pages == sample_written.rss_pages &&
                m.vsz_pages == sample_written.vsz_pages;
    if (same && !always && !mt_recording_controlled()) {
        sample_held = m;
        sample_is_held = true;
        return;
    }
    if (sample_is_held && !same)
        write_sample(&sample_held);
    write_sample(&m);
}

// ---- recording windows (start and stop) and the size limit: recording.h

static int64_t windows;  // "recording" ranges begun in this capture
static bool window_open; // the last one not yet ended
static bool first_poll;  // this capture's windows not yet polled

static void window_edge(bool begin, int64_t ts, void* ud) {
    (void)ud;
    uint32_t tid = (uint32_t)getpid();
    int rc = 0;
    if (begin && !window_open) {
        mt_mark_rec r = {.heap = MT_HEAP_LIBC,
                         .kind = "range",
                         .name = "recording",
                         .ts_begin = ts,
                         .has_tid = true,
                         .tid = tid};
        rc = mt_capture_writer_mark(cw, &r);
        windows++;
    } else if (!begin && window_open) {
        rc = mt_capture_writer_mark_end(cw, "recording", tid, ts);
    }
    window_open = begin;
    if (rc)
        mt_writer_fail_sqlite("cannot write marks");
}

static void poll_windows(int64_t now) {
    mt_recording_poll(now, first_poll, window_edge, NULL);
    first_poll = false;
    if (mt_recording_controlled())
        mt_capture_writer_meta_int(cw, "recording_windows", windows);
}

// The capture's size on disk: the database and its write-ahead log.
static int64_t capture_bytes(void) {
    char wal[4200];
    struct stat st;
    int64_t n = stat(capture_path, &st) == 0 ? st.st_size : 0;
    snprintf(wal, sizeof wal, "%s-wal", capture_path);
    return n + (stat(wal, &st) == 0 ? st.st_size : 0);
}

// MEMTRACE_MAX_MB: once reached, no more events (what is in the buffers still goes in);
// counters, marks and call counts go on. Said in the capture and once on stderr (or to the
// launcher, which says it at the end).
static void check_size(int64_t now) {
    if (!mt_cfg.max_mb || (atomic_load(&mt_events_off) & MT_OFF_FULL) ||
        capture_bytes() < ((int64_t)mt_cfg.max_mb << 20))
        return;
    atomic_fetch_or(&mt_events_off, MT_OFF_FULL);
    mt_capture_writer_meta_int(cw, "events_stopped_at_mb", mt_cfg.max_mb);
    mt_capture_writer_meta_int(cw, "events_stopped_ns", now);
    mt_capture_writer_meta_text(cw, "events_stopped_reason", "max_mb");
    char msg[128];
    snprintf(msg, sizeof msg,
             "events stopped at %d MiB (MEMTRACE_MAX_MB); calls only counted since", mt_cfg.max_mb);
    if (!mt_output_report_failure(msg)) {
        char line[4400];
        int n = snprintf(line, sizeof line, "memtrace: %s: %s\n", capture_path, msg);
        if (n > 0)
            mt_say(line, (size_t)n < sizeof line ? (size_t)n : sizeof line - 1);
    }
}

// ---- the loop

// The counts a commit writes besides the rows of events: summed, to see them change.
static uint64_t counts_now(void) {
    uint64_t total[MT_CALL_COUNT_], lost, sum = 0;
    mt_core_call_totals(total, &lost);
    for (int k = 0; k < MT_CALL_COUNT_; k++)
        sum += total[k];
    return sum + lost + atomic_load(&mt_mmap_file_count) + atomic_load(&mt_mmap_file_bytes) +
           atomic_load(&mt_core_reports_ignored) + atomic_load(&mt_sampling_set_full);
}

static uint64_t counts_committed; // counts_now() at the last commit
// At rest a commit still comes every second, with the capture's duration: `memreport live`
// draws a second a column.
#define IDLE_COMMIT_NS 1000000000
static int64_t last_write; // when commit_all last ran (last_commit: when it last looked)

// Whether a commit now would write nothing new: no event drained since the last one, none
// waiting in a thread's buffer (one whose seq was taken during that commit shows here at
// the next look), no thread ending, no mark, no sample, no count changed.
static bool idle_since_commit(void) {
    if (events_written != events_committed || sample_since_commit || mt_recording_controlled() ||
        counts_now() != counts_committed)
        return false;
    pthread_mutex_lock(&mark_lock);
    bool marks = marks_head != NULL;
    pthread_mutex_unlock(&mark_lock);
    if (marks)
        return false;
    for (mt_thread* t = mt_core_threads(); t; t = t->next) {
        if (atomic_load_explicit(&t->queued, memory_order_acquire) ||
            atomic_load_explicit(&t->ending, memory_order_acquire) == MT_THREAD_EXITING)
            return false;
        mt_buffer* b = atomic_load_explicit(&t->cur, memory_order_acquire);
        if (b && !atomic_load_explicit(&t->reusable, memory_order_acquire) &&
            atomic_load_explicit(&b->committed, memory_order_acquire) != b->taken)
            return false;
    }
    return true;
}

// What the commit made safe: the buffers drained go back to the pool, the marks written are
// freed, the records of threads gone are free for new threads. Its count last: a writer
// killed before that has its commit finished by the watcher (rewind_to_commit).
static void settle_commit(void) {
    end_uncommitted(true);
    while (marks_written) {
        pending_mark* next = marks_written->next;
        mt_writer_heap_free(marks_written);
        marks_written = next;
    }
    marks_written_tail = NULL;
    mt_writer_rows_retire_gone();
    events_committed = events_written;
    commits++;
}

static void commit_all(int64_t now) {
    steal_partials();
    begin_unresumable();
    counts_committed = counts_now();
    sample_since_commit = false;
    mt_writer_rows_mappings(cw);
    mt_writer_rows_stacks(cw);
    mt_writer_rows_threads(cw);
    write_marks();
    poll_windows(now);
    mt_writer_rows_call_counts(cw);
    check_size(now);
    mt_capture_writer_meta_int(cw, "events_written", (int64_t)events_written);
    if (pool_row_version) // a name given since the pool's row was written
        pool_heap_row();
    if (mt_cfg.mmap) { // file mappings are not a heap: counted (mmap_track.h)
        mt_capture_writer_meta_int(cw, "mmap_file_count",
                                   (int64_t)atomic_load(&mt_mmap_file_count));
        mt_capture_writer_meta_int(cw, "mmap_file_bytes",
                                   (int64_t)atomic_load(&mt_mmap_file_bytes));
    }
    if (atomic_load(&mt_core_reports_ignored))
        mt_capture_writer_meta_int(cw, "reports_ignored",
                                   (int64_t)atomic_load(&mt_core_reports_ignored));
    if (atomic_load(&mt_sampling_set_full))
        mt_capture_writer_meta_int(cw, "sample_set_full",
                                   (int64_t)atomic_load(&mt_sampling_set_full));
    mt_capture_writer_meta_int(cw, "duration_ns", now);
    mt_capture_writer_meta_int(cw, "commits", (int64_t)commits + 1);
    if (!failed && mt_capture_writer_commit(cw))
        mt_writer_fail_sqlite("cannot commit capture");
    if (!failed)
        settle_commit();
    if (!failed && mt_capture_writer_begin(cw))
        mt_writer_fail_sqlite("cannot commit capture");
    last_commit = last_write = now;
    end_unresumable();
}

// A hook writes its event into its buffer right after taking its seq: a seq taken a second
// ago and two passes back belongs to an event the writer has seen (live_set.h).
static void settle_live(int64_t now) {
    if (!live || now < settle_at)
        return;
    mt_live_set_settle(live, settle_seq);
    settle_seq = mt_seq_now();
    settle_at = now + 1000000000;
}

static void tick(bool final) {
    if (failed)
        return;
    begin_unresumable();
    atomic_fetch_add(&unrewindable, 1);
    mt_clock_calibrate();
    atomic_fetch_sub(&unrewindable, 1);
    end_unresumable();
    int64_t now = mt_clock_now();
    settle_live(now);
    int64_t period = (int64_t)mt_cfg.commit_ms * 1000000;
    if (final || now - last_sample >= (int64_t)mt_cfg.sample_ms * 1000000)
        sample_memory(now, final);
    // A commit every period, with at least a quarter of it for the drain: commits that
    // outlast the period (a checkpoint, the thread descheduled) must not leave one buffer
    // drained per commit.
    int64_t until = last_commit + period;
    drain_full(final ? INT64_MAX : until > now + period / 4 ? until : now + period / 4);
    now = mt_clock_now();
    if (final || now - last_commit >= period) {
        if (!final && now - last_write < IDLE_COMMIT_NS && idle_since_commit())
            last_commit = now;
        else
            commit_all(now);
    }
}

static _Atomic int fatal_signal; // set by mt_writer_save_before_death
static _Atomic int saved_before_death;

// The program is dying of a fatal signal: write everything recorded and leave one
// self-contained file (names are left to memreport: no time for libdw now).
static void save_before_death(void) {
    pthread_mutex_lock(&sqlite_lock);
    tick(true);
    begin_unresumable(); // for good: the capture is finished here
    atomic_fetch_add(&unrewindable, 1);
    if (!failed) {
        mt_capture_writer_meta_int(cw, "terminated_by_signal", atomic_load(&fatal_signal));
        mt_capture_writer_commit(cw);
        if (mt_capture_writer_finish(cw, "complete") == 0)
            mt_output_report_finished(getpid(), capture_path);
    }
    cw = NULL;
    pthread_mutex_unlock(&sqlite_lock);
    atomic_store(&saved_before_death, 1);
}

// Bumped by each start: a writer thread of an earlier capture, never joined (see
// mt_writer_stop), sees it changed and ends without touching anything.
static _Atomic unsigned generation;
static bool opened;         // under sqlite_lock: open_capture has run for this capture
static bool meta_committed; // open_capture's first commit is done

// Creates the capture file (a few ms of SQLite work, done in the writer thread so the program
// does not wait for it; its events wait in their buffers), with sqlite_lock held. False when
// it cannot be: the program then runs on untraced.
static bool open_capture(void) {
    char err[512];
    begin_unresumable();
    opened = true;
    bool ok = mt_fdguard_install() == 0;
    if (!ok)
        snprintf(err, sizeof err, "cannot guard the capture's file descriptors");
    else
        ok = mt_capture_writer_open(capture_path, &cw, err, sizeof err) == 0;
    if (!ok) {
        cw = NULL;
        failed = true;
        mt_writer_fail(capture_path, err);
    } else {
        // The meta rows and the first sample in one commit: each commit costs page writes.
        if (mt_capture_writer_begin(cw) == 0) {
            write_meta();
            sample_memory(mt_clock_now(), true); // RSS and VSZ from the start, not one period on
        }
        if (!failed && (mt_capture_writer_commit(cw) != 0 || mt_capture_writer_begin(cw) != 0))
            mt_writer_fail_sqlite("cannot write capture");
        meta_committed = !failed;
    }
    end_unresumable();
    return ok;
}

static void open_now(void) {
    pthread_mutex_lock(&sqlite_lock);
    if (!opened)
        open_capture();
    pthread_mutex_unlock(&sqlite_lock);
}

static void on_tracer_stack(void (*fn)(void));

void mt_writer_open_now(void) {
    mt_write_signals hold; // perhaps on the program's thread: the empty capture may cross ulimit -f
    mt_write_signals_hold(&hold);
    on_tracer_stack(open_now);
    mt_write_signals_release(&hold);
}

// Whether the writer thread of capture `gen` still has work: not once the capture stopped.
static bool still_current(unsigned gen) {
    return !atomic_load(&stop_requested) && atomic_load(&generation) == gen;
}

// The process's number of threads from the text of /proc/self/stat, and whether its leader
// is a zombie (the main thread ended with pthread_exit); -1 if unknown.
static long process_threads(const char* stat, bool* leader_zombie) {
    const char* p = strrchr(stat, ')'); // the name may hold spaces and parentheses
    if (!p || p[1] != ' ')
        return -1;
    *leader_zombie = p[2] == 'Z';
    for (int field = 3; field <= 20 && p; field++) // to the blank before num_threads
        p = strchr(p + 1, ' ');
    return p ? atol(p + 1) : -1;
}

// Whether the program's main thread ended with pthread_exit and this writer is the only
// other task: the writer, counted as a thread, keeps the process alive.
static bool program_threads_gone(void) {
    bool zombie = false;
    char stat[512];
    long threads =
        mt_procfile_read(&stat_file, stat, sizeof stat) > 0 ? process_threads(stat, &zombie) : -1;
    return zombie && threads >= 0 && threads <= 2; // the zombie leader and this thread
}

// Whether this writer thread goes on: not once the capture stopped, nor during a pause.
static bool keeps_writing(unsigned gen) {
    return still_current(gen) && !atomic_load(&pause_requested);
}

static int start_thread(pthread_t* t, void* (*fn)(void*), void* arg);

static void (*finisher)(void); // mt_writer_set_finisher

void mt_writer_set_finisher(void (*finish)(void)) {
    finisher = finish;
}

// Whether the tracer's own heap calls on this thread go to the writer thread's heap, as the
// writer thread's do (run_here says why). Not in a library attached with --pid: there the
// tracer's calls to free bind to glibc's, and a block that another module's patched slot took
// from this heap would reach glibc's free.
static void use_writer_heap(void) {
    mt_writer_heap_thread = !atomic_load(&mt_core_attached);
}

static void* finish_main(void* arg) {
    mt_guard = 1;
    use_writer_heap();
    finisher(); // as memtrace --detach: the capture ends here, with its leak scan
    return arg;
}

// MEMTRACE_LEAK_SIGNAL: the capture is finished on a thread of the tracer's, as a detach
// finishes it (which stops this writer thread), and the program goes on.
static void finish_beside(void) {
    pthread_t t;
    if (finisher && start_thread(&t, finish_main, NULL) == 0)
        pthread_detach(t);
}

static void* writer_main(void* arg) {
    unsigned gen = (unsigned)(uintptr_t)arg;
    mt_guard = 1;
    mt_writer_heap_thread = true;
    atomic_store(&writer_tid, gettid());
    pthread_mutex_lock(&sqlite_lock);
    bool ok = still_current(gen) && (opened || open_capture()); // opened: after a pause
    // Under the lock: a shutdown that finds the capture open converts the last events at
    // once, and must never see the clock with one calibration point (raw TSC counts).
    if (ok)
        mt_clock_settle();
    pthread_mutex_unlock(&sqlite_lock);
    if (!ok)
        return NULL;
    int wait_ms = mt_cfg.sample_ms < mt_cfg.commit_ms ? mt_cfg.sample_ms : mt_cfg.commit_ms;
    while (keeps_writing(gen)) {
        mt_core_wait_work(wait_ms);
        if (atomic_load(&fatal_signal)) {
            save_before_death();
            return NULL;
        }
        pthread_mutex_lock(&sqlite_lock);
        if (still_current(gen))
            tick(false);
        pthread_mutex_unlock(&sqlite_lock);
        if (keeps_writing(gen) && mt_recording_finish_asked())
            finish_beside();
        // What glibc would have done in the program's last thread; the capture is finished
        // by the tracer's exit handler, on this thread (mt_writer_stop does not join it).
        if (keeps_writing(gen) && program_threads_gone()) {
            mt_writer_heap_thread = false; // the program's exit handlers run here
            exit(0);
        }
    }
    return NULL;
}

// Whether a writer that died inside SQLite (unresumable) can be gone back on: its capture
// was opened, and no lock of SQLite's is held. Not where recording was started and stopped
// or events stopped at MEMTRACE_MAX_MB: their rows are written once, at the change.
static bool may_rewind(void) {
    return opened && !atomic_load(&unrewindable) && !mt_recording_controlled() &&
           !(atomic_load(&mt_events_off) & MT_OFF_FULL) && mt_capture_writer_sqlite_idle();
}

// The writer died inside SQLite: its connection, half-way through a statement, is left as it
// is, and a new one takes the capture back to its last commit. What came after is written
// again: every event from each buffer's `taken_committed` on, the marks, and every row of
// stacks, mappings and threads (written again whole: which were new since is not kept). The
// RSS and VSZ samples since are lost: the last one is taken at the end.
static bool rewind_to_commit(void) {
    char err[256];
    mt_capture_writer* again;
    if (mt_capture_writer_reopen(capture_path, &again, err, sizeof err) != 0)
        return false;
    cw = again; // the dead writer's connection is never used again
    atomic_store(&unresumable, 0);
    // A commit that the writer died in, or after, before settling it: landed, its meta
    // `commits` says so, and only its settling is left to do.
    int64_t landed = 0;
    if (mt_capture_writer_meta_get_int(cw, "commits", &landed) < 0 ||
        (landed != (int64_t)commits && landed != (int64_t)commits + 1) ||
        mt_capture_writer_begin(cw) != 0) {
        mt_writer_fail_sqlite("cannot write capture");
        return false;
    }
    if (landed == (int64_t)commits + 1) {
        settle_commit();
        return true;
    }
    if (!meta_committed) { // died creating it: the file is still the empty capture
        write_meta();
        sample_memory(mt_clock_now(), true);
        meta_committed = true;
    }
    for (mt_buffer* b = uncommitted; b; b = b->uncommitted_next)
        b->taken = b->taken_committed;
    events_written = events_committed;
    // Written again here: the piece being written, whole, and the drained buffers, which no
    // thread or queue holds any more; the others are drained where they are.
    mt_buffer* piece_buffer = atomic_load(&cur_piece.b);
    if (piece_buffer) {
        if (!cur_piece.to)
            cur_piece.to = atomic_load(&piece_buffer->committed);
        cur_piece.stored = 0;
        write_piece();
    }
    for (mt_buffer* b = uncommitted; b && !failed; b = b->uncommitted_next)
        if (b->drained)
            write_events(b, atomic_load(&b->committed));
    if (marks_written) { // queued again, ahead of those not yet written
        marks_written_tail->next = marks_head;
        if (!marks_head)
            marks_tail = marks_written_tail;
        marks_head = marks_written;
        marks_written = marks_written_tail = NULL;
    }
    exact_times_noted = false;
    mt_writer_rows_rewrite_all();
    if (pool_row_version) {
        pool_row_version = 0;
        pool_heap_row();
    }
    return !failed;
}

void mt_writer_finish_orphaned(pid_t pid) {
    mt_guard = 1;
    mt_writer_heap_thread = true;
    // Every thread is gone. A lock taken now was held by one of them: sqlite_lock's holder
    // (the writer, mid-drain) left work that can go on, or be gone back on.
    if (!writer_running)
        return;
    bool locked = pthread_mutex_trylock(&sqlite_lock) == 0;
    int recording = MT_STATE_RECORDING;
    bool resumable = !atomic_load(&unresumable);
    mt_writer_heap_take_over();
    mt_trie_take_over();
    mt_maps_take_over();
    if ((resumable ? cw || !opened : may_rewind()) && !failed &&
        atomic_compare_exchange_strong(&mt_state, &recording, MT_STATE_STOPPED)) {
        atomic_store(&forks_waiting, 0); // the forking threads are gone too
        mt_core_buffers_take_over();
        live = NULL; // no scan: nothing is left to scan (the table's pages go with the process)
        if (!resumable && !rewind_to_commit()) {
            cw = NULL; // the capture stays truncated at its last commit
            if (locked)
                pthread_mutex_unlock(&sqlite_lock);
            return;
        }
        if (!opened) // the program ended before its writer thread ran
            open_capture();
        mt_clock_settle();
        mt_buffer* b = atomic_load(&cur_piece.b);
        if (b && !failed) {
            if (!cur_piece.to)
                cur_piece.to = atomic_load(&b->committed);
            write_piece();
        }
        if (!failed) {
            tick(true);
            if (window_open)
                window_edge(false, mt_clock_now(), NULL);
        }
        if (!failed) {
            mt_capture_writer_meta_int(cw, "ended_unseen", 1);
            mt_capture_writer_meta_text(cw, "leak_scan", "not run");
            mt_capture_writer_meta_text(cw, "leak_scan_why",
                                        "the process ended without its exit handler (a raw "
                                        "exit_group or a signal): no copy of it to scan");
            mt_capture_writer_commit(cw);
            if (mt_capture_writer_finish(cw, "complete") == 0)
                mt_output_report_finished(pid, capture_path);
        }
        cw = NULL;
    }
    if (locked)
        pthread_mutex_unlock(&sqlite_lock);
}

void mt_writer_save_before_death(int sig, int timeout_ms) {
    if (!writer_running || atomic_exchange(&fatal_signal, sig))
        return;
    mt_core_wake_writer();
    // Bounded: if the dying thread holds a lock the writer needs (a crash inside malloc),
    // give up and let the process die with what was committed.
    for (int waited = 0; waited < timeout_ms && !atomic_load(&saved_before_death); waited++) {
        struct timespec ms = {0, 1000000};
        nanosleep(&ms, NULL);
    }
}

// The tracer's threads have a stack of a size of their own: a new thread's default is the
// stack limit (ulimit -s), where SQLite overflowed a small one (32 KiB: SIGSEGV), and 8 MiB
// of the program's address space (ulimit -v) at the default limit.
#define TRACER_STACK (1 << 20)

// Starts a thread of the tracer's with every signal blocked, so they reach the program's.
static int start_thread(pthread_t* t, void* (*fn)(void*), void* arg) {
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    pthread_attr_t attr;
    bool sized = pthread_attr_init(&attr) == 0;
    if (sized)
        pthread_attr_setstacksize(&attr, TRACER_STACK);
    int rc = pthread_create(t, sized ? &attr : NULL, fn, arg);
    if (sized)
        pthread_attr_destroy(&attr);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    return rc;
}

static int create_writer_thread(unsigned gen) {
    int rc = start_thread(&writer_thread, writer_main, (void*)(uintptr_t)gen);
    writer_joinable = rc == 0;
    return rc;
}

typedef struct tracer_call {
    void (*fn)(void);
} tracer_call;

static void* tracer_call_main(void* arg) {
    mt_guard = 1;
    use_writer_heap();
    ((tracer_call*)arg)->fn();
    return NULL;
}

// Runs fn here with the tracer's heap calls sent to the writer thread's heap, as on the
// writer thread: in glibc's, a large block (the capture writer's chunk coder) would be a
// mapping of its own, which the leak scan reads as the program's memory, and it holds every
// block's address. The program's signal handlers wait meanwhile: their heap calls must
// reach glibc's heap and the capture.
static void run_here(void (*fn)(void)) {
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old);
    bool was = mt_writer_heap_thread;
    use_writer_heap();
    fn();
    mt_writer_heap_thread = was;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
}

// Runs fn on a thread of the tracer's and waits for it where the stack limit is small: the
// capture's start and end (SQLite, libdw) need more stack than a program's main thread may
// have (ulimit -s 32 KiB would end in SIGSEGV). Else here, as where no thread can be made
// (RLIMIT_NPROC): a program's seccomp filter may even kill the process for a clone.
static void on_tracer_stack(void (*fn)(void)) {
    struct rlimit stack;
    tracer_call call = {fn};
    pthread_t t;
    if (getrlimit(RLIMIT_STACK, &stack) == 0 && stack.rlim_cur < TRACER_STACK &&
        start_thread(&t, tracer_call_main, &call) == 0)
        pthread_join(t, NULL);
    else
        run_here(fn);
}

// SQLite's memory, on whichever thread it runs, comes from the writer thread's heap
// (writer_heap.h): set once, before SQLite's first use.
static void* sqlite_heap_malloc(int n) {
    return mt_writer_heap_malloc((size_t)n);
}

static void sqlite_heap_free(void* p) {
    mt_writer_heap_free(p);
}

static void* sqlite_heap_realloc(void* p, int n) {
    return mt_writer_heap_realloc(p, (size_t)n);
}

static int sqlite_heap_size(void* p) {
    return p ? (int)mt_writer_heap_size(p) : 0;
}

static int sqlite_heap_roundup(int n) {
    return (int)mt_writer_heap_roundup((size_t)n);
}

static int sqlite_heap_init(void* ud) {
    (void)ud;
    return SQLITE_OK;
}

static void sqlite_heap_shutdown(void* ud) {
    (void)ud;
}

static void sqlite_use_writer_heap(void) {
    static bool done;
    static const sqlite3_mem_methods methods = {
        sqlite_heap_malloc,  sqlite_heap_free, sqlite_heap_realloc,  sqlite_heap_size,
        sqlite_heap_roundup, sqlite_heap_init, sqlite_heap_shutdown, NULL};
    if (!done) {
        sqlite3_config(SQLITE_CONFIG_MALLOC, &methods);
        // Counting each allocation takes a mutex of SQLite's: nothing here reads the counts.
        sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
    }
    done = true;
}

// The writer's buffers hold the program's addresses: mapped as the tracer's own pages, which
// the leak scan never reads as roots (a malloc of this size would be an anonymous mapping of
// glibc's that it reads).
static void* own_buffer(size_t len) {
    void* p = mt_own_pages(
        mt_real.mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0), len);
    return p == MAP_FAILED ? NULL : p;
}

int mt_writer_start(const char* path) {
    sqlite_use_writer_heap();
    page_size = sysconf(_SC_PAGESIZE);
    if (!scratch)
        scratch = own_buffer(mt_codec_bound(MT_BUFFER_EVENTS));
    if (!sortbuf)
        sortbuf = own_buffer(MT_BUFFER_EVENTS * sizeof *sortbuf);
    if (!heapbuf)
        heapbuf = own_buffer(MT_BUFFER_EVENTS * sizeof *heapbuf);
    if (!scratch || !sortbuf || !heapbuf) {
        mt_writer_fail("cannot start", "out of memory");
        return -ENOMEM;
    }
    snprintf(capture_path, sizeof capture_path, "%s", path);
    if (!forked_here && !getcwd(start_cwd, sizeof start_cwd))
        start_cwd[0] = 0;
    mt_writer_rows_cmdline_json(start_cmdline, sizeof start_cmdline);
    mt_procfile_open(&statm_file); // on this thread, not the writer's (procfile.h)
    mt_procfile_open(&stat_file);
    if (!forked_here)
        start_ppid = getppid();
    forked_here = false;
    failed = false;
    atomic_store(&unresumable, 0);
    atomic_store(&unrewindable, 0);
    commits = 0;
    cur_piece = (piece){0};
    end_uncommitted(false);
    marks_written = marks_written_tail = NULL; // a failed capture's: left allocated
    meta_committed = false;
    events_written = events_committed = 0;
    pool_row_version = 0;
    windows = 0;
    window_open = false;
    first_poll = true;
    last_commit = last_sample = last_write = 0;
    any_sample_written = sample_is_held = sample_since_commit = false;
    counts_committed = 0;
    mt_live_set_free(live);
    live = mt_cfg.leaks && !mt_sampling ? mt_live_set_new() : NULL;
    settle_at = 0;
    settle_seq = 0;
    atomic_store(&stop_requested, 0);
    opened = false;
    unsigned gen = atomic_fetch_add(&generation, 1) + 1;
    int rc = create_writer_thread(gen);
    if (rc != 0) {
        mt_writer_fail("cannot start the writer thread", strerror(rc));
        return -rc;
    }
    writer_pid = getpid();
    writer_running = true;
    mt_exit_watch_start();
    return 0;
}

static void scan_leaks(void);

static void stop_on_this_thread(void) {
    // Not joined: waiting for the writer thread to be scheduled (on a loaded machine, for
    // milliseconds) is most of what a short program would pay. It leaves the capture alone
    // from now on (still_current), ending at its next look or with the process.
    atomic_store(&stop_requested, 1);
    mt_core_wake_writer();
    if (writer_joinable)
        pthread_detach(writer_thread);
    writer_joinable = false;
    writer_running = false;
    pthread_mutex_lock(&sqlite_lock);
    if (!opened) // the program ends before its writer thread even ran: create the capture
        open_capture();
    mt_clock_settle(); // a no-op unless the writer opened it but never ran on
    if (failed) {
        // Keep what was committed; the status stays 'recording', i.e. truncated.
        mt_capture_writer_abandon(cw);
        cw = NULL;
        pthread_mutex_unlock(&sqlite_lock);
        return;
    }
    tick(true);
    // From here on the capture ends, for good: the watcher may not go on from any of it.
    begin_unresumable();
    atomic_fetch_add(&unrewindable, 1);
    if (window_open) // recording until the end
        window_edge(false, mt_clock_now(), NULL);
    if (!failed)
        scan_leaks();
    // Names are resolved now, while the binaries exist, as far as the budget goes; what is
    // left or fails, memreport resolves later from the recorded maps and build-ids. A
    // process attached to goes on running after a detach: names come from the symbol cache
    // alone there, libdw (and the debuginfod client it loads) is never loaded into it.
    // Not in a process that chrooted: the binaries' paths and the symbol cache's would name
    // files of its new root (the cache was made there); memreport names the frames.
    if (!failed && mt_cfg.symbolize && !mt_output_root_changed() &&
        mt_capture_writer_commit(cw) == 0) {
        char err[256];
        bool read_files = !atomic_load(&mt_core_attached);
        (void)mt_capture_writer_symbolize(cw, mt_cfg.symbolize_ms, read_files, err, sizeof err);
        if (mt_capture_writer_begin(cw) != 0)
            mt_writer_fail_sqlite("cannot write capture");
    }
    if (failed) {
        mt_capture_writer_abandon(cw);
    } else {
        mt_capture_writer_commit(cw);
        if (mt_capture_writer_finish(cw, "complete") != 0)
            mt_writer_fail("cannot finalize capture", "SQLite error");
        else
            mt_output_report_finished(getpid(), capture_path);
    }
    cw = NULL;
    pthread_mutex_unlock(&sqlite_lock);
}

// ---- the leak scan (leak_scan.h), once every event is written

// Why the live set does not hold every block of the program's heap, or NULL when it does.
static const char* live_set_gap(void) {
    if (!mt_cfg.leaks)
        return "MEMTRACE_LEAKS=0";
    if (mt_sampling)
        return "a sampled capture holds only some blocks (MEMTRACE_SAMPLE_BYTES)";
    if (atomic_load(&mt_core_attached))
        return "attached to a running process: its blocks from before the attach are unknown";
    if (parent_capture[0])
        return "a forked child: its blocks from before the fork are in its parent's capture";
    if (mt_recording_controlled())
        return "recording was started or stopped (MEMTRACE_START, MEMTRACE_SIGNAL): blocks "
               "allocated while stopped are unknown";
    if (atomic_load(&mt_events_off))
        return "events were stopped (MEMTRACE_MAX_MB)";
    // Its objects live in arenas it maps itself, which the scan reads beside glibc's
    // allocator only: blocks they hold would read lost (docs/leaks.md).
    if (mt_python_frames_status() && !mt_leak_scan_reads_mapped())
        return "a CPython program beside an allocator other than glibc's: its objects, in "
               "memory it maps itself, are not scanned";
    if (!live || !mt_live_set_complete(live))
        return "no memory for the table of live blocks";
    return NULL;
}

static void scan_leaks(void) {
    const char* gap = live_set_gap();
    char why[256];
    mt_live_block* b = NULL;
    size_t n = 0;
    mt_leak_scan r;
    int rc = -EINVAL;
    if (!gap && mt_live_set_sorted(live, MT_HEAP_LIBC, &b, &n) != 0)
        gap = "no memory for the table of live blocks";
    if (!gap) {
        rc = mt_leak_scan_run(b, n, writer_thread, atomic_load(&writer_tid),
                              mt_cfg.leak_scan_timeout_ms, &r, why, sizeof why);
        gap = rc ? why : NULL;
    }
    if (gap) {
        mt_capture_writer_meta_text(cw, "leak_scan", "not run");
        mt_capture_writer_meta_text(cw, "leak_scan_why", gap);
    } else {
        for (size_t i = 0; i < n && !failed; i++) {
            uint32_t h = r.holder[i];
            if (mt_capture_writer_leak(cw, b[i].seq, r.kind[i], h < n ? b[h].seq : 0))
                mt_writer_fail_sqlite("cannot write leak verdicts");
        }
        mt_capture_writer_meta_text(cw, "leak_scan", "complete");
        mt_capture_writer_meta_int(cw, "leak_scan_blocks", (int64_t)n);
        mt_capture_writer_meta_int(cw, "leak_scan_roots_bytes", (int64_t)r.roots_bytes);
        mt_capture_writer_meta_int(cw, "leak_scan_bytes", (int64_t)r.scanned_bytes);
        mt_capture_writer_meta_int(cw, "leak_scan_ns", r.ns);
        mt_capture_writer_meta_int(cw, "leak_scan_cpu_ns", r.cpu_ns);
        mt_capture_writer_meta_text(cw, "leak_scan_where", r.in_place ? "in place" : "copy");
        mt_leak_scan_release(&r);
    }
    mt_writer_heap_free(b);
    mt_live_set_free(live);
    live = NULL;
}

// The last events, names and status are written on the thread that ends the capture (exit,
// exec, _exit, a detach). A write past the file size limit (RLIMIT_FSIZE) raises SIGXFSZ at
// that thread, whose default action would kill the program in its exit: the signal is held
// meanwhile, and dropped if the capture raised it (the write itself fails, as the writer
// thread's do: the capture ends truncated).
void mt_writer_stop(void) {
    if (!writer_running)
        return;
    mt_write_signals hold;
    mt_write_signals_hold(&hold);
    on_tracer_stack(stop_on_this_thread);
    mt_write_signals_release(&hold);
}

// The number of threads now, read on the calling thread: not through stat_file, which the
// writer thread may be reading (or reopening) at the same time.
static long threads_now(bool* leader_zombie) {
    char stat[512];
    int fd = open("/proc/self/stat", O_RDONLY | O_CLOEXEC);
    ssize_t n = fd >= 0 ? read(fd, stat, sizeof stat - 1) : -1;
    if (fd >= 0)
        close(fd);
    stat[n > 0 ? n : 0] = 0;
    return n > 0 ? process_threads(stat, leader_zombie) : -1;
}

static bool writer_pause(void) {
    bool zombie;
    // A child that fork's handlers never saw (clone(), vfork) has no writer: its copy of this
    // state, and of stat_file, are the parent's. Another thread of the program: the call
    // fails as it would untraced.
    if (!writer_running || !writer_joinable || getpid() != writer_pid || threads_now(&zombie) != 2)
        return false;
    atomic_store(&pause_requested, 1);
    mt_core_wake_writer();
    pthread_join(writer_thread, NULL);
    writer_joinable = false;
    // The join returns when the kernel clears the thread's tid word, a moment before its task
    // leaves the thread group; the kernel counts threads by the group. Bounded (1 s): a tid
    // reused at once would otherwise keep us here.
    pid_t tid = atomic_load(&writer_tid);
    struct timespec pause = {0, 20000};
    for (int i = 0; i < 50000 && syscall(SYS_tgkill, getpid(), tid, 0) == 0; i++)
        nanosleep(&pause, NULL);
    return true;
}

static void writer_resume(void) {
    atomic_store(&pause_requested, 0);
    int rc = create_writer_thread(atomic_load(&generation));
    // Without a writer the program runs on untraced; the exit still writes what was recorded.
    if (rc != 0)
        mt_writer_fail("cannot restart the writer thread", strerror(rc));
}

void mt_writer_step_aside(mt_writer_away* away) {
    int saved_errno = errno; // the pause leaves tgkill's ESRCH
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &away->mask); // no handler runs while the writer is away
    int guard = mt_guard;
    mt_guard = 1; // the join's heap calls are the tracer's
    away->paused = writer_pause();
    mt_guard = guard;
    errno = saved_errno;
}

void mt_writer_come_back(mt_writer_away* away) {
    int saved_errno = errno; // the call's
    int guard = mt_guard;
    mt_guard = 1; // pthread_create's heap calls are the tracer's
    if (away->paused)
        writer_resume();
    mt_guard = guard;
    pthread_sigmask(SIG_SETMASK, &away->mask, NULL);
    errno = saved_errno;
}

void mt_writer_discard_if_empty(void) {
    if (!writer_running && events_written == 0 && capture_path[0])
        unlink(capture_path);
}

void mt_writer_forget(pid_t parent) {
    // The parent's writer thread and SQLite handle are not ours to use; its files, only our
    // copies of them, to close.
    writer_running = false;
    writer_joinable = false;
    atomic_store(&pause_requested, 0);
    atomic_store(&forks_waiting, 0); // other threads that were forking are not here
    cw = NULL;
    marks_head = marks_tail = NULL; // the parent's (left allocated: fork may be in a handler)
    marks_written = marks_written_tail = NULL;
    end_uncommitted(false);
    atomic_store(&exact_times, false);
    exact_times_noted = false;
    const char* base = strrchr(capture_path, '/');
    snprintf(parent_capture, sizeof parent_capture, "%s", base ? base + 1 : capture_path);
    capture_path[0] = 0;
    // The child's capture may start later (core_lifecycle.c): its parent and working
    // directory are the ones it started with.
    start_ppid = parent;
    if (!getcwd(start_cwd, sizeof start_cwd))
        start_cwd[0] = 0;
    forked_here = true;
    mt_fdguard_forget_all();
    mt_procfile_close(&statm_file);
    mt_procfile_close(&stat_file);
}
