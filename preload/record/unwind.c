// SPDX-License-Identifier: MIT
// Stack capture. Debian's libc and libstdc++ are built without frame pointers, so a bare
// frame-pointer walk silently skips their callers; DWARF (libunwind) is exact but costs
// ~20 ns a frame. `auto` gets DWARF's answer at frame-pointer speed: the first time a
// return address is seen, a libunwind walk learns how that frame unwinds (CFA = SP + k or
// RBP + 16, where the caller's RBP was saved) and caches the rule per address; later walks
// apply cached rules with two loads a frame, and fall back to a full libunwind walk at the
// first address without a usable rule (new code, signal frames, rules that vary).
// `libunwind` always walks with libunwind; `fp` is the bare frame-pointer walk.
// Called inside hooks with the guard set: no allocation, no locks on the cached path.
#define UNW_LOCAL_ONLY
#include "unwind.h"

#include "config.h"
#include "core.h"
#include "maps.h"
#include "unwind_cache.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <libunwind.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

static int unwind_mode;
static __thread int in_libunwind __attribute__((tls_model("initial-exec")));
static uintptr_t self_lo, self_hi, libunwind_lo, libunwind_hi;
// The loader's __libc_stack_end: the stack pointer the process started with (looked up, not
// linked: a reference would make libmemtrace.so need ld-linux-x86-64.so.2 by name).
static uintptr_t libc_stack_end;

static inline bool is_self(uintptr_t pc) {
    return pc >= self_lo && pc < self_hi;
}

// ---- the rule cache: return address -> how its frame unwinds

enum {
    RULE_BP_CFA = 1,  // CFA = RBP + 16 (a frame-pointer frame)
    RULE_LAST = 2,    // the outermost frame (_start, thread start): the walk ends here
    RULE_COMPLEX = 4, // signal frame, or a rule that differed between walks: use libunwind
    // A frame of code without unwind info (JIT code, -fno-asynchronous-unwind-tables builds),
    // unwound by its frame pointer as libunwind guesses it (with RULE_BP_CFA). libunwind's
    // unw_step then goes on from a guessed stack pointer: no rule is learnt above such a frame,
    // and a stack past it that the rules do not cover is taken from unw_backtrace (which
    // follows such frames right) without learning.
    RULE_NO_INFO = 8,
};

typedef struct rule {
    _Atomic uintptr_t pc; // 0 = empty slot; published last (release)
    uint32_t cfa_off;     // CFA = SP + cfa_off (unless RULE_BP_CFA)
    uint16_t bp_off;      // caller's RBP saved at CFA - bp_off; 0: RBP unchanged
    _Atomic uint8_t flags;
} rule;

// Bumped whenever a rule is demoted to RULE_COMPLEX or rules are forgotten (dlclose), so
// threads drop their copies and their kept walks.
static _Atomic uint32_t rules_generation = 1;

// This thread's rule copies, previous walk and kept walks (unwind_cache.h).
static __thread local_rules* tls_rules __attribute__((tls_model("initial-exec")));

#define RULE_SLOTS (1u << 16)
static rule rules[RULE_SLOTS];
static pthread_mutex_t rules_lock = PTHREAD_MUTEX_INITIALIZER;

static inline size_t rule_slot(uintptr_t pc) {
    uint64_t h = (uint64_t)pc * 0x9e3779b97f4a7c15ull;
    return (size_t)(h >> 48) & (RULE_SLOTS - 1);
}

static const rule* rule_find(uintptr_t pc) {
    for (size_t i = rule_slot(pc), probes = 0; probes < 64;
         i = (i + 1) & (RULE_SLOTS - 1), probes++) {
        uintptr_t p = atomic_load_explicit(&rules[i].pc, memory_order_acquire);
        if (p == pc)
            return &rules[i];
        if (!p)
            return NULL;
    }
    return NULL;
}

// Whether rule r says what a walk just learnt (else the frame's layout varies).
static bool rule_same(const rule* r, uint32_t cfa_off, uint16_t bp_off, uint8_t flags) {
    uint8_t old = atomic_load_explicit(&r->flags, memory_order_relaxed);
    // A frame-pointer frame is one, found by unwind info or by libunwind's guess.
    return (old & ~RULE_NO_INFO) == (flags & ~RULE_NO_INFO) &&
           ((flags & (RULE_BP_CFA | RULE_LAST)) || r->cfa_off == cfa_off) && r->bp_off == bp_off;
}

static void rule_learn(uintptr_t pc, uint32_t cfa_off, uint16_t bp_off, uint8_t flags) {
    // Most frames of a libunwind walk are known already: no lock for those (a rule's
    // offsets are written before its pc is published and never change), nor for frames
    // already given up on (marking them again would flush every thread's rule copies).
    const rule* known = rule_find(pc);
    if (known && ((atomic_load_explicit(&known->flags, memory_order_relaxed) & RULE_COMPLEX) ||
                  rule_same(known, cfa_off, bp_off, flags)))
        return;
    pthread_mutex_lock(&rules_lock);
    for (size_t i = rule_slot(pc), probes = 0; probes < 64;
         i = (i + 1) & (RULE_SLOTS - 1), probes++) {
        rule* r = &rules[i];
        uintptr_t p = atomic_load_explicit(&r->pc, memory_order_relaxed);
        if (p == pc) {
            // Seen before with another rule: this frame's layout varies (alloca, stack
            // realignment); never trust a cached rule for it again.
            uint8_t old = atomic_load_explicit(&r->flags, memory_order_relaxed);
            if (!(old & RULE_COMPLEX) && !rule_same(r, cfa_off, bp_off, flags)) {
                atomic_store_explicit(&r->flags, old | RULE_COMPLEX, memory_order_relaxed);
                atomic_fetch_add_explicit(&rules_generation, 1, memory_order_release);
            }
            break;
        }
        if (!p) {
            r->cfa_off = cfa_off;
            r->bp_off = bp_off;
            atomic_store_explicit(&r->flags, flags, memory_order_relaxed);
            atomic_store_explicit(&r->pc, pc, memory_order_release);
            break;
        }
    }
    pthread_mutex_unlock(&rules_lock);
}

void mt_unwind_forget(void) {
    // Readers take no lock: a rule they are reading stays whole (only pc is cleared); an
    // unloaded module's addresses are on no stack, and a module loaded there later learns
    // its own rules. The generation drops every thread's copies and kept walks.
    pthread_mutex_lock(&rules_lock);
    for (size_t i = 0; i < RULE_SLOTS; i++)
        atomic_store_explicit(&rules[i].pc, 0, memory_order_relaxed);
    atomic_fetch_add_explicit(&rules_generation, 1, memory_order_release);
    pthread_mutex_unlock(&rules_lock);
}

void mt_unwind_fork_lock(void) {
    pthread_mutex_lock(&rules_lock);
}

void mt_unwind_fork_unlock(void) {
    pthread_mutex_unlock(&rules_lock);
}

// ---- walks

void mt_unwind_init(int mode) {
    unwind_mode = mode;
    mt_maps_self_range(&self_lo, &self_hi);
    if (!mt_maps_range_of((uintptr_t)&unw_backtrace, &libunwind_lo, &libunwind_hi))
        libunwind_lo = libunwind_hi = 0;
    unw_set_caching_policy(unw_local_addr_space, UNW_CACHE_PER_THREAD);
    void* const* stack_end = dlsym(RTLD_DEFAULT, "__libc_stack_end");
    libc_stack_end = stack_end ? (uintptr_t)*stack_end : 0;
}

// The mapping that holds addr, from /proc/self/maps read by raw system calls (no stdio, no
// allocation, not a cancellation point): false if none, or the file cannot be read.
static bool mapping_of(uintptr_t addr, uintptr_t* lo_out, uintptr_t* hi_out) {
    int fd = (int)syscall(SYS_openat, AT_FDCWD, "/proc/self/maps", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return false;
    char buf[512];
    uintptr_t lo = 0, hi = 0;
    int field = 0; // 0: the start, 1: the end, 2: the rest of the line
    bool found = false;
    while (!found) {
        long n = syscall(SYS_read, fd, buf, sizeof buf);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        for (long i = 0; i < n && !found; i++) {
            char ch = buf[i];
            if (ch == '\n') {
                found = addr >= lo && addr < hi;
                if (!found)
                    lo = hi = 0, field = 0;
            } else if (field < 2) {
                int d = ch >= '0' && ch <= '9'   ? ch - '0'
                        : ch >= 'a' && ch <= 'f' ? ch - 'a' + 10
                                                 : -1;
                if (d < 0)
                    field++; // the '-' after the start, the ' ' after the end
                else if (field == 0)
                    lo = lo << 4 | (uintptr_t)d;
                else
                    hi = hi << 4 | (uintptr_t)d;
            }
        }
    }
    syscall(SYS_close, fd);
    *lo_out = lo;
    *hi_out = hi;
    return found;
}

uintptr_t mt_unwind_stack_top(void) {
    uintptr_t sp = (uintptr_t)__builtin_frame_address(0);
    uintptr_t self = (uintptr_t)pthread_self();
    // glibc puts a new thread's descriptor (and its static TLS) at the top of the stack it
    // made or was given, where pthread_getattr_np's answer ends: every frame lies below.
    if (self > sp && gettid() != getpid())
        return self;
    // The initial thread's descriptor is not on its stack. pthread_getattr_np reads
    // /proc/self/maps for it too, and takes the page after __libc_stack_end's as its top.
    // A thread that forked became the child's initial thread, on its own stack still.
    uintptr_t lo, hi;
    if (!mapping_of(sp, &lo, &hi))
        return 0;
    uintptr_t start = libc_stack_end, page = (uintptr_t)getpagesize();
    if (start && start >= lo && start < hi)
        return (start & ~(page - 1)) + page;
    return self > sp && self < hi ? self : hi;
}

bool mt_unwind_is_libunwind(uintptr_t caller) {
    return caller >= libunwind_lo && caller < libunwind_hi;
}

bool mt_unwind_masking_for_us(uintptr_t caller) {
    // Both: a signal handler of the program that interrupts a walk keeps its own calls.
    return in_libunwind && caller >= libunwind_lo && caller < libunwind_hi;
}

// out_sp (may be NULL): each frame's stack pointer, just above the saved RBP and return
// address of the frame it called.
static int walk_fp(uintptr_t* out, uintptr_t* out_sp, int max, uintptr_t stack_hi) {
    uintptr_t* fp = __builtin_frame_address(0);
    int n = 0;
    while (n < max) {
        if (((uintptr_t)fp & 7) || (stack_hi && (uintptr_t)fp >= stack_hi))
            break;
        uintptr_t pc = fp[1];
        if (!pc)
            break;
        if (out_sp)
            out_sp[n] = (uintptr_t)(fp + 2);
        out[n++] = pc;
        uintptr_t* next = (uintptr_t*)fp[0];
        // Frames grow towards higher addresses; anything else is the end of the chain.
        if (next <= fp || (uintptr_t)next - (uintptr_t)fp > (64u << 20))
            break;
        fp = next;
    }
    return n;
}

// Whether libunwind stepped out of the frame at ip, which has no unwind info, by its frame
// pointer bp: the caller's RBP read at bp, the return address above it (libunwind read both,
// checking they are mapped, when it took that way); its stack pointer for the caller is then
// not the caller's. Asked only of frames that no rule fits otherwise, or above such a frame,
// in learning walks: the lookup is rare.
static bool frame_pointer_guess(uintptr_t ip, uintptr_t sp, uintptr_t bp, uintptr_t ra,
                                uintptr_t caller_bp) {
    unw_proc_info_t info;
    return unw_get_proc_info_by_ip(unw_local_addr_space, ip - 1, &info, NULL) == -UNW_ENOINFO &&
           bp >= sp && bp - sp < (1u << 30) && !(bp & 7) && *(const uintptr_t*)(bp + 8) == ra &&
           *(const uintptr_t*)bp == caller_bp;
}

// A full libunwind walk that also learns the rule of every frame it steps through, as long
// as libunwind finds the right frames (see RULE_NO_INFO).
// out_sp (may be NULL) gets each frame's stack pointer; *signal_frame whether one was a
// signal handler's.
static int walk_libunwind(uintptr_t* out, uintptr_t* out_sp, int max, bool learn,
                          bool* signal_frame_seen) {
    unw_context_t ctx;
    unw_cursor_t cur;
    if (unw_getcontext(&ctx) != 0 || unw_init_local(&cur, &ctx) != 0)
        return 0;
    int n = 0;
    // Above a frame without unwind info libunwind's stack pointer is its guess (16 more than
    // the last one): rules are learnt there only for more such frames (read from RBP).
    bool above_guess = false;
    while (n < max) {
        unw_word_t ip, sp, bp;
        unw_get_reg(&cur, UNW_REG_IP, &ip);
        unw_get_reg(&cur, UNW_REG_SP, &sp);
        unw_get_reg(&cur, UNW_X86_64_RBP, &bp);
        if (!ip)
            break;
        if (out_sp)
            out_sp[n] = sp;
        out[n++] = ip;
        bool signal_frame = unw_is_signal_frame(&cur) > 0;
        *signal_frame_seen |= signal_frame;
        int step = unw_step(&cur);
        if (!learn || is_self(ip)) {
            if (step <= 0)
                break;
            continue;
        }
        if (step <= 0) {
            if (!above_guess)
                rule_learn(ip, 0, 0, RULE_LAST);
            break;
        }
        unw_word_t cfa, ra, caller_bp;
        unw_save_loc_t loc;
        unw_get_reg(&cur, UNW_REG_SP, &cfa);
        unw_get_reg(&cur, UNW_REG_IP, &ra);
        unw_get_reg(&cur, UNW_X86_64_RBP, &caller_bp);
        uint8_t flags = 0;
        uint16_t bp_off = 0;
        // Where the caller's RBP lives: saved inside this frame, or still in the register.
        if (unw_get_save_loc(&cur, UNW_X86_64_RBP, &loc) == 0 && loc.type == UNW_SLT_MEMORY &&
            loc.u.addr >= sp && loc.u.addr < cfa && cfa - loc.u.addr < 65536)
            bp_off = (uint16_t)(cfa - loc.u.addr);
        else if (caller_bp != bp)
            flags |= RULE_COMPLEX;
        if (signal_frame || cfa <= sp || cfa - sp > (1u << 30) ||
            *(const uintptr_t*)(cfa - 8) != ra)
            flags |= RULE_COMPLEX;
        if (bp_off == 16 && bp + 16 == cfa)
            flags |= RULE_BP_CFA;
        // A frame that realigns its stack keeps the caller's RBP where its RBP points, but its
        // CFA where its prologue left the old stack pointer: no fixed rule fits it.
        if (bp_off && loc.u.addr == bp && bp + 16 != cfa)
            flags |= RULE_COMPLEX;
        // Above a guess, libunwind's stack pointer can make a guessed frame look regular.
        if ((flags & RULE_COMPLEX || above_guess) && !signal_frame &&
            frame_pointer_guess(ip, sp, bp, ra, caller_bp)) {
            rule_learn(ip, 0, 16, RULE_BP_CFA | RULE_NO_INFO);
            above_guess = true;
            continue;
        }
        if (above_guess) {
            learn = false; // what libunwind finds from here on rests on its guess
            continue;
        }
        rule_learn(ip, (uint32_t)(cfa - sp), bp_off, flags);
    }
    return n;
}

// The thread's first walk (its cache mapped), or the first since the rules changed.
static __attribute__((noinline)) local_rules* thread_rules_renew(local_rules* lr, uint32_t gen) {
    if (!lr) {
        // mmap, not malloc: stays out of the traced heap, comes zero-filled.
        void* p = mt_own_pages(
            mmap(NULL, sizeof *lr, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0),
            sizeof *lr);
        if (p == MAP_FAILED)
            return NULL;
        tls_rules = lr = p;
    }
    if (lr->generation != gen) {
        memset(lr->slot, 0, sizeof lr->slot);
        lr->generation = gen;
        lr->top_n = 0;
        lr->last_kept = NULL; // kept walks of older generations are ignored
        lr->last_found = NULL;
    }
    return lr;
}

static inline local_rules* thread_rules(void) {
    local_rules* lr = tls_rules;
    uint32_t gen = atomic_load_explicit(&rules_generation, memory_order_acquire);
    if (MT_LIKELY(lr && lr->generation == gen))
        return lr;
    return thread_rules_renew(lr, gen);
}

void mt_unwind_thread_exit(void) {
    local_rules* lr = tls_rules;
    tls_rules = NULL;
    if (lr)
        munmap(lr, sizeof *lr);
}

static inline const local_rule* local_find(local_rules* lr, uintptr_t pc) {
    local_rule* l = &lr->slot[(pc * 0x9e3779b97f4a7c15ull) >> 54];
    if (MT_LIKELY(l->pc == pc))
        return l;
    const rule* r = rule_find(pc);
    if (!r)
        return NULL;
    l->pc = 0;
    l->cfa_off = r->cfa_off;
    l->bp_off = r->bp_off;
    l->flags = atomic_load_explicit(&r->flags, memory_order_relaxed);
    // mt_unwind_forget may have freed the slot for another address meanwhile.
    atomic_thread_fence(memory_order_acquire);
    if (atomic_load_explicit(&r->pc, memory_order_relaxed) != pc)
        return NULL;
    l->pc = pc;
    return l;
}

// Our own frames keep frame pointers: follows them from here to the frame whose return
// address is the first outside the tracer. NULL when the chain leaves the stack.
static inline __attribute__((always_inline)) uintptr_t* hook_caller_frame(uintptr_t stack_hi) {
    uintptr_t* fp = __builtin_frame_address(0);
    while (is_self(fp[1])) {
        uintptr_t* next = (uintptr_t*)fp[0];
        if (next <= fp || (uintptr_t)next >= stack_hi)
            return NULL;
        fp = next;
    }
    return fp;
}

// The walk kept last gets its callsite id: top's, known now (the trie filled top's memo
// after the last walk).
static inline void settle_last_kept(local_rules* lr, int prev_n) {
    if (lr->last_kept) {
        if (prev_n)
            lr->last_kept->memo = lr->top[prev_n - 1].memo;
        lr->last_kept = NULL;
    }
}

// The stack is the kept walk e, checked unchanged.
static inline void stack_of_kept(mt_stack* st, recent_walk* e) {
    st->pcs = e->pc;
    st->sps = e->sp;
    st->n = e->n;
    st->truncated = false;
    st->hash_later = false;
    st->hash = e->hash;
    st->memo = &e->memo;
}

// A walk cut by the limit (k new frames above `shared` reused ones): its leaf-most `max`
// frames, in scratch.
static inline void stack_of_truncated(mt_stack* st, const local_rules* lr, int shared, int k,
                                      int max, uintptr_t* scratch, uintptr_t* sp_scratch) {
    // Deeper than the limit: the outer frames are unknown, nothing to keep.
    leafmost(lr, shared, k, max, scratch, sp_scratch);
    st->pcs = scratch;
    st->sps = sp_scratch;
    st->n = max;
    st->truncated = true;
    st->hash_later = false;
    st->hash = mt_stackhash_of(scratch, max);
    st->memo = NULL;
}

// A complete walk (k new frames above `shared` reused ones, ending at end_sp): stored in top
// for the next walk, kept for later, and reported from top.
static inline void stack_of_complete(mt_stack* st, local_rules* lr, int shared, int k, int max,
                                     uintptr_t end_sp) {
    walk_frame* top = lr->top;
    int n = shared + k;
    if (!shared)
        lr->top_end_sp = end_sp; // else the outermost frame is still the one top had
    store_walk(lr, shared, k);
    st->truncated = n > max;
    st->n = st->truncated ? max : n;
    st->pcs = lr->top_pc + (n - st->n);
    st->sps = lr->top_sp + (n - st->n);
    // Frames 0..n-1 are the same as when top[n - 1] was stored: so is their callsite, also
    // when cut to the limit (its leaf-most `max` frames). The hash of a stack cut so is not
    // the stored one: taken only when the trie needs it (a deep recursion's every walk).
    st->hash_later = st->truncated;
    st->hash = top[n - 1].hash;
    st->memo = &top[n - 1].memo;
    // A walk with new frames is kept for later (an exact repeat of top is kept already).
    if (lr->recent_off)
        lr->recent_off--;
    else if (k && !st->truncated)
        lr->last_kept = recent_keep(lr, n);
}

typedef enum walk_result {
    WALK_DONE,       // *st is filled
    WALK_NO_RULE,    // a frame has no rule yet: a libunwind walk may learn it
    WALK_FAILED,     // a frame's rule is not usable (or the walk cannot start): libunwind's walk
    WALK_PAST_GUESS, // as WALK_FAILED, above code without unwind info: unw_backtrace's walk
} walk_result;

// Applies cached rules from the first frame outside the tracer and stops where the stack
// joins the previous walk's unchanged part. Fills *st (up to `max` frames), or says why not
// (the caller then walks with libunwind). `scratch` holds a stack cut by the limit.
static inline __attribute__((always_inline)) walk_result
walk_cached(mt_stack* st, int max, uintptr_t stack_hi, uintptr_t* scratch, uintptr_t* sp_scratch) {
    uintptr_t* fp = stack_hi ? hook_caller_frame(stack_hi) : NULL;
    local_rules* lr = fp ? thread_rules() : NULL;
    if (!lr)
        return WALK_FAILED;
    walk_frame* top = lr->top;
    walk_frame* fresh = lr->fresh;
    int prev_n = lr->top_n;
    settle_last_kept(lr, prev_n);
    uintptr_t pc = fp[1], sp = (uintptr_t)(fp + 2), bp = fp[0];
    recent_walk* again = lr->last_found;
    lr->last_found = NULL;
    if (again && recent_valid(lr, again, pc, sp, bp, max)) {
        lr->last_found = again;
        stack_of_kept(st, again); // top is untouched
        return WALK_DONE;
    }
    lr->top_n = 0; // until this walk completes
    // Frames 0..t of the previous walk are reusable (their stack words are unchanged) up to
    // the first stale one. A new walk can join them only at their stack pointers: below the
    // innermost one it only walks, with no compare to mispredict.
    int t = prev_n ? first_stale(top, prev_n - 1) : -1;
    uintptr_t join_sp = t >= 0 ? top[t].sp : UINTPTR_MAX;
    // Past the limit too, so that a stack deeper than it is kept and joined by the next walk
    // (a deep recursion's allocations would otherwise each walk `max` frames again); but not
    // for a while after a stack deeper than a walk can keep.
    int limit = MAX_WALK;
    if (lr->deep_off) {
        lr->deep_off--;
        limit = max + 1; // one more than the limit tells a stack that is deeper
    }
    int k = 0, shared = 0;
    uintptr_t end_sp = 0;
    bool done = false, past_guess = false;
    while (k < limit) {
        if (sp >= join_sp) {
            // Frames come in increasing sp order in both walks: a merge finds a shared one.
            while (t >= 0 && top[t].sp < sp)
                t--;
            if (t >= 0 && top[t].sp == sp && top[t].pc == pc &&
                (!top[t].bp_needed || top[t].bp == bp)) {
                shared = t + 1;
                done = true;
                break;
            }
        }
        if (k == RECENT_KEY_FRAMES && !lr->recent_off) {
            // A stack seen before, not just before: its kept walk, checked, not walked.
            recent_walk* e = recent_find(lr, fresh, pc, max);
            recent_count(lr, e != NULL);
            if (e) {
                lr->top_n = prev_n; // top is untouched
                lr->last_found = e;
                stack_of_kept(st, e);
                return WALK_DONE;
            }
        }
        const local_rule* r = local_find(lr, pc);
        // One test for the rare cases on a frame's way: no rule, a rule not to use, the walk's
        // end, a frame without unwind info.
        if (MT_UNLIKELY(!r || (r->flags & (RULE_COMPLEX | RULE_LAST | RULE_NO_INFO)))) {
            if (!r || (r->flags & RULE_COMPLEX)) {
                if (k > max)
                    break; // the frames reported are all known: those past them are not needed
                if (past_guess)
                    return WALK_PAST_GUESS;
                return r ? WALK_FAILED : WALK_NO_RULE;
            }
            past_guess |= r->flags & RULE_NO_INFO;
            if (r->flags & RULE_LAST) {
                fresh[k++] = (walk_frame){.pc = pc, .sp = sp, .bp = bp};
                done = true;
                break;
            }
        }
        // The frame's other fields are store_walk's to fill.
        walk_frame* f = &fresh[k++];
        f->pc = pc;
        f->sp = sp;
        f->bp = bp;
        bool bp_cfa = r->flags & RULE_BP_CFA;
        uintptr_t cfa = bp_cfa ? bp + 16 : sp + r->cfa_off;
        // cfa in (sp, stack_hi], and aligned.
        if (cfa - sp - 1 >= stack_hi - sp || (cfa & 7)) {
            if (k > max)
                break;
            return WALK_FAILED;
        }
        f->bp_off = r->bp_off;
        f->bp_cfa = bp_cfa;
        uintptr_t caller_bp = r->bp_off ? *(const uintptr_t*)(cfa - r->bp_off) : bp;
        pc = *(const uintptr_t*)(cfa - 8);
        sp = cfa;
        bp = caller_bp;
        if (!pc) {
            end_sp = cfa;
            done = true;
            break;
        }
    }
    int n = shared + k;
    if (k == MAX_WALK)
        lr->deep_off = 1024;
    if (!done || n > MAX_WALK)
        stack_of_truncated(st, lr, shared, k, max, scratch, sp_scratch);
    else
        stack_of_complete(st, lr, shared, k, max, end_sp);
    return WALK_DONE;
}

#define NESTED_WALK_MAX (MT_NESTED_FRAMES + 16)

int mt_unwind_fp_only(uintptr_t* out, int max, uintptr_t stack_hi) {
    uintptr_t pcs[NESTED_WALK_MAX];
    int n = walk_fp(pcs, NULL, max + 8 < NESTED_WALK_MAX ? max + 8 : NESTED_WALK_MAX, stack_hi);
    int skip = 0;
    while (skip < n && is_self(pcs[skip]))
        skip++;
    n -= skip;
    if (n > max)
        n = max;
    for (int i = 0; i < n; i++)
        out[i] = pcs[skip + n - 1 - i];
    return n;
}

// The cached walk again, once a libunwind walk has learnt the rules it lacked (out of line:
// walk_cached is inlined into mt_unwind's fast path).
static __attribute__((noinline)) walk_result walk_cached_again(mt_stack* st, int max,
                                                               uintptr_t stack_hi,
                                                               uintptr_t* scratch,
                                                               uintptr_t* sp_scratch) {
    return walk_cached(st, max, stack_hi, scratch, sp_scratch);
}

static __attribute__((noinline)) void unwind_slow(mt_stack* st, walk_result cached,
                                                  uintptr_t* scratch, uintptr_t* sp_scratch,
                                                  int max, uintptr_t stack_hi);

void mt_unwind(mt_stack* st, uintptr_t* scratch, uintptr_t* sp_scratch, int max,
               uintptr_t stack_hi) {
    st->signal_frame = false;
    walk_result cached = unwind_mode == MT_UNWIND_AUTO
                             ? walk_cached(st, max, stack_hi, scratch, sp_scratch)
                             : WALK_FAILED;
    if (MT_UNLIKELY(cached != WALK_DONE))
        unwind_slow(st, cached, scratch, sp_scratch, max, stack_hi);
}

// What the rules cannot walk (or another mode): libunwind's walk or the frame pointers.
static void unwind_slow(mt_stack* st, walk_result cached, uintptr_t* scratch, uintptr_t* sp_scratch,
                        int max, uintptr_t stack_hi) {
    // A walk that learns goes as far as cached walks go (see walk_cached's limit).
    int want = cached == WALK_NO_RULE || max + 16 > MAX_WALK ? MAX_WALK : max + 16;
    int n;
    uintptr_t* sps = sp_scratch;
    if (unwind_mode == MT_UNWIND_FP) {
        n = walk_fp(scratch, sp_scratch, want, stack_hi);
    } else if (unwind_mode == MT_UNWIND_LIBUNWIND) {
        in_libunwind = 1;
        n = unw_backtrace((void**)scratch, want);
        in_libunwind = 0;
        sps = NULL;
    } else {
        if (cached != WALK_PAST_GUESS) {
            in_libunwind = 1;
            n = walk_libunwind(scratch, sp_scratch, want, true, &st->signal_frame);
            in_libunwind = 0;
        }
        // Again from the cache, now that the rules are learnt: the first walk of a stack then
        // gives what later ones will.
        if (cached == WALK_NO_RULE &&
            (cached = walk_cached_again(st, max, stack_hi, scratch, sp_scratch)) == WALK_DONE)
            return;
        if (cached == WALK_PAST_GUESS) {
            in_libunwind = 1;
            n = unw_backtrace((void**)scratch, want);
            in_libunwind = 0;
            sps = NULL;
        }
    }
    // Drop the tracer's own frames on the leaf side (unwinder, core, the hook itself), keep
    // the leaf-most `max`, and turn them outermost first.
    int skip = 0;
    while (skip < n && is_self(scratch[skip]))
        skip++;
    n -= skip;
    st->truncated = n > max;
    st->n = st->truncated ? max : n;
    uintptr_t* pcs = scratch + skip;
    for (int i = 0, j = st->n - 1; i < j; i++, j--) {
        uintptr_t tmp = pcs[i];
        pcs[i] = pcs[j];
        pcs[j] = tmp;
    }
    if (sps) {
        sps += skip;
        for (int i = 0, j = st->n - 1; i < j; i++, j--) {
            uintptr_t tmp = sps[i];
            sps[i] = sps[j];
            sps[j] = tmp;
        }
    }
    st->pcs = pcs;
    st->sps = sps;
    st->hash_later = false;
    st->hash = mt_stackhash_of(pcs, st->n);
    st->memo = NULL;
}
