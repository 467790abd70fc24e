// SPDX-License-Identifier: MIT
// A program with known truth for start and stop (MEMTRACE_START, MEMTRACE_SIGNAL, --delay)
// and bounded captures (MEMTRACE_MAX_MB). Each phase starts on a line from the test on
// stdin and is acknowledged by its number on the fd named by argv[1] (no sleeps); the test
// toggles recording between phases. It starts by writing its pid and a newline on that fd. It
// prints a checksum and exits with status 7; nothing it does depends on being traced.
//   argv[2] "show": first prints SIGUSR2's disposition (default, ignore or handler)
//   argv[2] "big": one phase only: 1,000,000 malloc and as many frees (a pool of 1024
//                  blocks of varied sizes), then exits
//   phase 1: keeps A = 10 malloc(1000)
//   phase 2: frees 5 of A; keeps B = 20 malloc(2048) and 3 calloc(4, 256); frees 10 of B
//   phase 3: keeps C = 7 malloc(3000); frees 5 of B
//   phase 4: frees the 5 left of A, all of C and the 5 left of B; keeps 4 malloc(512)
#define _GNU_SOURCE // sigaction
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void* a[10];
static void* b[20];
static void* c[7];
static void* zeroed[3];
static void* kept[4];
static unsigned long sum;
static int ack_fd = 3;

static void ack(char phase) {
    if (write(ack_fd, &phase, 1) != 1)
        _exit(1);
}

// Waits for the test's next line (EOF: go on).
static void wait_line(void) {
    char ch;
    while (read(0, &ch, 1) == 1 && ch != '\n') {
    }
}

static void* take(size_t n, int v) {
    void* p = malloc(n);
    if (!p)
        _exit(3);
    memset(p, v, n);
    sum = sum * 31 + n + (unsigned)v;
    return p;
}

static void drop(void** p) {
    free(*p);
    *p = NULL;
}

static void phase(int n) {
    wait_line();
    if (n == 1) {
        for (int i = 0; i < 10; i++)
            a[i] = take(1000, i);
    } else if (n == 2) {
        for (int i = 0; i < 5; i++)
            drop(&a[i]);
        for (int i = 0; i < 20; i++)
            b[i] = take(2048, i);
        for (int i = 0; i < 3; i++) {
            zeroed[i] = calloc(4, 256);
            sum += zeroed[i] ? ((unsigned char*)zeroed[i])[100] : 1;
        }
        for (int i = 10; i < 20; i++)
            drop(&b[i]);
    } else if (n == 3) {
        // C first: no block of it may take the address of a B block freed now (a free of
        // it, recorded later, would then end that B block instead of being ignored).
        for (int i = 0; i < 7; i++)
            c[i] = take(3000, i);
        for (int i = 5; i < 10; i++)
            drop(&b[i]);
    } else {
        for (int i = 5; i < 10; i++)
            drop(&a[i]);
        for (int i = 0; i < 7; i++)
            drop(&c[i]);
        for (int i = 0; i < 5; i++)
            drop(&b[i]);
        for (int i = 0; i < 4; i++)
            kept[i] = take(512, i);
    }
    ack((char)('0' + n));
}

// Output without stdio, whose buffer would be one more allocation in the truth.
__attribute__((format(printf, 1, 2))) static void say(const char* fmt, ...) {
    char line[128];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= sizeof line || write(1, line, (size_t)n) != n)
        _exit(4);
}

static void big(void) {
    enum { POOL = 1024, ROUNDS = 1000000 };
    static void* pool[POOL];
    unsigned x = 12345;
    wait_line();
    for (int i = 0; i < ROUNDS; i++) {
        x = x * 1103515245u + 12345u;
        unsigned slot = (x >> 8) % POOL;
        free(pool[slot]);
        pool[slot] = malloc(16 + (x >> 20) % 4000);
        if (!pool[slot])
            _exit(3);
        sum += slot;
    }
    for (int i = 0; i < POOL; i++)
        free(pool[i]);
    ack('1');
}

int main(int argc, char** argv) {
    if (argc > 1)
        ack_fd = atoi(argv[1]);
    const char* mode = argc > 2 ? argv[2] : "";
    // The test signals this process, not the launcher that runs it: its pid first.
    char pid[32];
    int n = snprintf(pid, sizeof pid, "%d\n", (int)getpid());
    if (write(ack_fd, pid, (size_t)n) != n)
        _exit(1);
    if (!strcmp(mode, "show")) {
        struct sigaction sa;
        sigaction(SIGUSR2, NULL, &sa);
        const char* what = (sa.sa_flags & SA_SIGINFO) ? "handler"
                           : sa.sa_handler == SIG_DFL ? "default"
                           : sa.sa_handler == SIG_IGN ? "ignore"
                                                      : "handler";
        say("SIGUSR2: %s\n", what);
    }
    if (!strcmp(mode, "big")) {
        big();
    } else {
        for (int n = 1; n <= 4; n++)
            phase(n);
    }
    say("checksum %lu\n", sum);
    return 7;
}
