// SPDX-License-Identifier: MIT
#include "seq.h"

#include <dlfcn.h>
#include <linux/membarrier.h>
#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <sys/syscall.h>
#include <unistd.h>
#if MT_SEQ_RSEQ
#include <sys/rseq.h>
#endif

// Counter and owner in a cache line of their own: the writer's queue is hot on its core.
_Alignas(64) _Atomic uint64_t mt_seq_counter;
const void* _Atomic mt_seq_owner;
__thread char mt_seq_here __attribute__((tls_model("initial-exec")));
#if MT_SEQ_RSEQ
__thread void* mt_seq_rseq_area __attribute__((tls_model("initial-exec")));
#endif

// mt_seq_owner besides a thread: nobody yet (a thread may claim it), being ended, ended;
// NULL before mt_seq_init, when no hook records.
static const char claimable, ending, shared;
static _Atomic bool registered;

static long membarrier(int cmd) {
    return syscall(SYS_membarrier, cmd, 0, 0);
}

#if MT_SEQ_RSEQ
// Where glibc keeps each thread's struct rseq (from the thread pointer), and its size; read
// with dlsym, as ld.so defines them and a link to them would make it a dependency of ours.
static ptrdiff_t rseq_offset;
static unsigned int rseq_size;

// This thread's struct rseq, NULL when glibc registered none for it.
static void* rseq_area(void) {
    if (rseq_size < 16) // 0: glibc registered none (glibc.pthread.rseq=0)
        return NULL;
    char* tp;
    __asm__("movq %%fs:0, %0" : "=r"(tp));
    struct rseq* r = (struct rseq*)(tp + rseq_offset);
    return (int32_t)r->cpu_id >= 0 ? r : NULL;
}
#endif

void mt_seq_init(void) {
#if MT_SEQ_RSEQ
    const ptrdiff_t* offset = dlsym(RTLD_DEFAULT, "__rseq_offset");
    const unsigned int* size = dlsym(RTLD_DEFAULT, "__rseq_size");
    if (offset && size) {
        rseq_offset = *offset;
        rseq_size = *size;
    }
    if (rseq_area() && membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED_RSEQ) == 0) {
        atomic_store(&registered, true);
        const void* none = NULL;
        atomic_compare_exchange_strong(&mt_seq_owner, &none, &claimable);
        return;
    }
#endif
    atomic_store(&mt_seq_owner, &shared);
}

void mt_seq_fork_child(void) {
    const void* owner = atomic_load(&mt_seq_owner);
    if (owner == &shared)
        return;
    if (!atomic_load(&registered) ||
        membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED_RSEQ) != 0)
        atomic_store(&mt_seq_owner, &shared); // one thread: no sequence to end
    else if (owner != &mt_seq_here)           // another thread's, or being ended: neither is here
        atomic_store(&mt_seq_owner, &claimable);
}

uint64_t mt_seq_now(void) {
    return atomic_load_explicit(&mt_seq_counter, memory_order_relaxed);
}

// Another thread takes seqs: the one alone stops, and once any sequence of its that read
// the owner before is over (committed or restarted), every thread takes the locked way.
static void end_single(void) {
    // A signal handler of this thread would wait for the end it interrupted.
    uint64_t all = ~0ull, old;
    syscall(SYS_rt_sigprocmask, SIG_BLOCK, &all, &old, sizeof all);
    for (;;) {
        const void* owner = atomic_load(&mt_seq_owner);
        if (owner == &shared)
            break;
        if (owner == &ending) {
            sched_yield(); // another thread is ending it: one system call away
            continue;
        }
        if (atomic_compare_exchange_strong(&mt_seq_owner, &owner, &ending)) {
            if (owner != &claimable)
                membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED_RSEQ);
            atomic_store(&mt_seq_owner, &shared);
            break;
        }
    }
    syscall(SYS_rt_sigprocmask, SIG_SETMASK, &old, NULL, sizeof old);
}

uint64_t mt_seq_take_slow(void) {
    const void* owner = atomic_load(&mt_seq_owner);
#if MT_SEQ_RSEQ
    // Tried once a thread: a sequence restarted again and again (a debugger stepping through
    // it) takes the locked way.
    if (owner == &claimable || (owner == &mt_seq_here && !mt_seq_rseq_area)) {
        void* area = rseq_area();
        if (area) {
            mt_seq_rseq_area = area;
            if (owner == &mt_seq_here ||
                atomic_compare_exchange_strong(&mt_seq_owner, &owner, &mt_seq_here))
                return mt_seq_take();
        }
    }
#endif
    if (owner && owner != &shared && owner != &mt_seq_here)
        end_single();
    // The owner comes here when its sequence was restarted: still alone, the locked way
    // is as good.
    return atomic_fetch_add_explicit(&mt_seq_counter, 1, memory_order_relaxed) + 1;
}
