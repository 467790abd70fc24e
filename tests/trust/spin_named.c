// SPDX-License-Identifier: MIT
// A process whose function is named with terminal escape sequences (an __asm__ label, as
// tests/reports/progs/hostile_names.c) and runs in it until killed, for
// tests/trust/check_audit.py: gdb's words about it (the frame it stopped in) must reach
// the user's terminal escaped when memtrace --pid shows them.
volatile unsigned long spins;

void spin(void) __asm__("\"\x1b]0;pwned\x07\x1b[41mspin\"");

__attribute__((noinline)) void spin(void) {
    for (;;) // no system call: gdb stops it in this very function
        spins++;
}

int main(void) {
    spin();
}
