// SPDX-License-Identifier: MIT
// The tracer's fatal-signal handlers stand where the program left the default action and
// must not show. `query`: prints the disposition sigaction and signal() report for each fatal
// signal (Rust's runtime installs its stack overflow handler only where it finds SIG_DFL).
// `altstack`: what Rust's handler does on a stack overflow, a SIGSEGV handler on a small
// alternate stack (two signal frames and 1 KiB) that ends the process with abort(); the
// tracer's SIGABRT handler then runs on what is left of that stack, and must fit (its first
// call of a lazily bound libc function overflowed it: SIGSEGV instead of SIGABRT).
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <unistd.h>

static const struct {
    int sig;
    const char* name;
} fatal[] = {
    {SIGSEGV, "SEGV"}, {SIGBUS, "BUS"}, {SIGABRT, "ABRT"}, {SIGFPE, "FPE"}, {SIGILL, "ILL"}};

static void on_segv(int sig, siginfo_t* si, void* uc) {
    (void)sig, (void)si, (void)uc;
    static const char msg[] = "SIGSEGV handled on the alternate stack\n";
    if (write(2, msg, sizeof msg - 1) < 0)
        _exit(3);
    abort();
}

static int query(void) {
    for (size_t i = 0; i < sizeof fatal / sizeof *fatal; i++) {
        struct sigaction old;
        memset(&old, 0, sizeof old);
        sigaction(fatal[i].sig, NULL, &old);
        int dfl = !(old.sa_flags & SA_SIGINFO) && old.sa_handler == SIG_DFL;
        void (*prev)(int) = signal(fatal[i].sig, SIG_DFL);
        printf("SIG%s: sigaction %s, signal %s\n", fatal[i].name, dfl ? "SIG_DFL" : "a handler",
               prev == SIG_DFL ? "SIG_DFL" : "a handler");
    }
    return 0;
}

static int altstack(void) {
    // The kernel's signal frame size (AT_MINSIGSTKSZ), twice (SIGSEGV's and SIGABRT's), and
    // 1 KiB, right above a guard page.
    size_t frame = getauxval(AT_MINSIGSTKSZ), page = (size_t)getpagesize();
    if (!frame)
        frame = MINSIGSTKSZ;
    size_t size = 2 * frame + 1024;
    char* m =
        mmap(NULL, size + 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED || mprotect(m, page, PROT_NONE) != 0)
        return 2;
    stack_t ss = {.ss_sp = m + page, .ss_size = size};
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_segv;
    sa.sa_flags = SA_ONSTACK | SA_SIGINFO;
    if (sigaltstack(&ss, NULL) != 0 || sigaction(SIGSEGV, &sa, NULL) != 0)
        return 2;
    void* volatile p = malloc(100); // a heap call: the capture has an event
    free(p);
    raise(SIGSEGV);
    return 0;
}

int main(int argc, char** argv) {
    if (argc == 2 && strcmp(argv[1], "query") == 0)
        return query();
    if (argc == 2 && strcmp(argv[1], "altstack") == 0)
        return altstack();
    fprintf(stderr, "usage: fatal_handlers query|altstack\n");
    return 1;
}
