// SPDX-License-Identifier: MIT
// The queues between the program's threads and the writer: full buffers in hand-over order,
// and a pool of drained ones to fill again. The only lock of the event path, taken once per
// full buffer (8192 events); buffers are mmap'd, never taken from the traced heap.
#include "core_internal.h"

#include <pthread.h>
#include <sys/mman.h>
#include <time.h>

// Buffer queues. When MAX_PENDING full buffers wait for the writer, producers wait for it to
// recycle one: this bounds the tracer's memory (64 MiB target) when the program outruns the
// writer. Only full buffers count: the writer always drains those, so a wait always ends,
// however many threads hold a partly filled buffer each.
#define MAX_PENDING 64
// The writer wakes every MEMTRACE_SAMPLE_MS on its own; a producer wakes it early only when
// this many buffers wait. Waking it for every buffer cost a futex call and an IPI to the
// other CPU, per 8192 events, on the program's thread.
#define WAKE_PENDING 16
static pthread_mutex_t queue_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t queue_cond = PTHREAD_COND_INITIALIZER;   // writer: work available
static pthread_cond_t recycle_cond = PTHREAD_COND_INITIALIZER; // producers: buffer freed
static mt_buffer *full_head, *full_tail, *free_pool;
static size_t npending; // buffers in the full queue
static int work_requested;

mt_buffer* mt_core_buffer_get(void) {
    pthread_mutex_lock(&queue_lock);
    mt_buffer* b;
    while (!(b = free_pool) && npending >= MAX_PENDING &&
           atomic_load(&mt_state) == MT_STATE_RECORDING) {
        work_requested = 1;
        pthread_cond_signal(&queue_cond);
        pthread_cond_wait(&recycle_cond, &queue_lock);
    }
    if (b)
        free_pool = b->next;
    pthread_mutex_unlock(&queue_lock);
    if (!b) {
        void* p = mt_own_pages(mmap(NULL, sizeof(mt_buffer), PROT_READ | PROT_WRITE,
                                    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0),
                               sizeof(mt_buffer));
        if (p == MAP_FAILED)
            return NULL;
        b = p;
    }
    b->next = NULL;
    b->owner = NULL;
    b->taken = b->taken_committed = 0;
    b->uncommitted_next = NULL;
    b->uncommitted = b->drained = false;
    atomic_store_explicit(&b->committed, 0, memory_order_relaxed);
    return b;
}

void mt_core_buffer_hand_over(mt_buffer* b) {
    pthread_mutex_lock(&queue_lock);
    b->next = NULL;
    if (full_tail)
        full_tail->next = b;
    else
        full_head = b;
    full_tail = b;
    if (++npending >= WAKE_PENDING)
        pthread_cond_signal(&queue_cond);
    pthread_mutex_unlock(&queue_lock);
}

mt_buffer* mt_core_take_full(mt_buffer* _Atomic* hand) {
    pthread_mutex_lock(&queue_lock);
    mt_buffer* b = full_head;
    atomic_store(hand, b); // before the queue lets go of it: never in neither
    if (b) {
        full_head = b->next;
        if (!full_head)
            full_tail = NULL;
        npending--;
        if (b->owner)
            atomic_fetch_sub_explicit(&b->owner->queued, 1, memory_order_relaxed);
    }
    pthread_mutex_unlock(&queue_lock);
    return b;
}

void mt_core_recycle(mt_buffer* b) {
    pthread_mutex_lock(&queue_lock);
    b->next = free_pool;
    free_pool = b;
    pthread_cond_broadcast(&recycle_cond);
    pthread_mutex_unlock(&queue_lock);
}

void mt_core_wait_work(int timeout_ms) {
    struct timespec deadline;
    clock_gettime(CLOCK_REALTIME, &deadline);
    deadline.tv_nsec += (long)timeout_ms * 1000000L;
    deadline.tv_sec += deadline.tv_nsec / 1000000000L;
    deadline.tv_nsec %= 1000000000L;
    pthread_mutex_lock(&queue_lock);
    if (!full_head && !work_requested)
        pthread_cond_timedwait(&queue_cond, &queue_lock, &deadline);
    work_requested = 0;
    pthread_mutex_unlock(&queue_lock);
}

void mt_core_wake_writer(void) {
    pthread_mutex_lock(&queue_lock);
    work_requested = 1;
    pthread_cond_signal(&queue_cond);
    pthread_mutex_unlock(&queue_lock);
}

// ---- fork and shutdown

void mt_core_buffers_fork_lock(void) {
    pthread_mutex_lock(&queue_lock);
}

void mt_core_buffers_fork_unlock(void) {
    pthread_mutex_unlock(&queue_lock);
}

void mt_core_buffers_fork_child(void) {
    mt_core_buffers_forget_waiters();
}

void mt_core_buffers_forget_waiters(void) {
    pthread_cond_init(&queue_cond, NULL);
    pthread_cond_init(&recycle_cond, NULL);
    work_requested = 0;
}

void mt_core_buffers_drop_queued(void) {
    // Queued buffers hold the parent's events: leak them here, and stop counting them
    // against the cap, or the child could wait forever for a buffer nobody will recycle.
    full_head = full_tail = NULL;
    npending = 0;
}

void mt_core_buffers_take_over(void) {
    if (pthread_mutex_trylock(&queue_lock) == 0) {
        pthread_mutex_unlock(&queue_lock);
    } else {
        // Its holder died in one of the calls above. The pool is dropped (its buffers left
        // unused); the full queue is whole from its head, whatever step a hand-over reached.
        queue_lock = (pthread_mutex_t)PTHREAD_MUTEX_INITIALIZER;
        free_pool = NULL;
        npending = 0;
        full_tail = NULL;
        for (mt_buffer* b = full_head; b; b = b->next, npending++)
            full_tail = b;
    }
    mt_core_buffers_forget_waiters();
}

void mt_core_buffers_release_waiters(void) {
    pthread_mutex_lock(&queue_lock);
    pthread_cond_broadcast(&recycle_cond);
    pthread_mutex_unlock(&queue_lock);
}
