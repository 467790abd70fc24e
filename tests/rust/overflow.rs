// SPDX-License-Identifier: MIT
// A stack overflow: the runtime's handler (SIGSEGV on an alternate stack) says so on stderr
// and aborts, traced as untraced (it died of SIGSEGV without the message, traced).
#[inline(never)]
fn deep(n: u64) -> u64 {
    let a = std::hint::black_box([n; 512]);
    if n == 0 {
        0
    } else {
        deep(n - 1) + a[7]
    }
}

fn main() {
    println!("{}", deep(std::hint::black_box(u64::MAX)));
}
