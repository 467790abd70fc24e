// SPDX-License-Identifier: MIT
// A traced program whose names are bytes, not text, for tests/reports/e2e_hostile.py.
// Compiled without debug information, so its functions are named by their ELF symbols,
// which __asm__ labels set to anything (gas takes quoted names): every leaked block
// below is allocated by one such function, called from main:
//   caf\xe9_alloc                              100 B (Latin-1, not UTF-8)
//   esc\e]0;pwned\a\e[2J<!--<script>            200 B (terminal title, clear screen, HTML)
//   csi\u009b31m_alloc                         300 B (a C1 control, CSI)
//   </script><img src=x onerror=alert(1)>      400 B
//   file_alloc, in a file named evil\e[2J.c    500 B (hostile_file.c, with line info)
// The main thread is named "t\e[2J"; the command line is the test's.
#include <pthread.h>
#include <stdlib.h>

void* volatile sink;

void* latin1_alloc(size_t n) __asm__("caf\xe9_alloc");
void* terminal_alloc(size_t n) __asm__("\"esc\x1b]0;pwned\x07\x1b[2J<!--<script>\"");
void* c1_alloc(size_t n) __asm__("\"csi\xc2\x9b"
                                 "31m_alloc\"");
void* html_alloc(size_t n) __asm__("\"</script><img src=x onerror=alert(1)>\"");
void* file_alloc(size_t n); // hostile_file.c

__attribute__((noinline)) void* latin1_alloc(size_t n) {
    return sink = malloc(n);
}

__attribute__((noinline)) void* terminal_alloc(size_t n) {
    return sink = malloc(n);
}

__attribute__((noinline)) void* c1_alloc(size_t n) {
    return sink = malloc(n);
}

__attribute__((noinline)) void* html_alloc(size_t n) {
    return sink = malloc(n);
}

int main(void) {
    pthread_setname_np(pthread_self(), "t\x1b[2J");
    latin1_alloc(100);
    terminal_alloc(200);
    c1_alloc(300);
    html_alloc(400);
    file_alloc(500);
    return 0;
}
