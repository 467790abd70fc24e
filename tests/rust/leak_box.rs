// SPDX-License-Identifier: MIT
// Leaks one Box of 4321 bytes from leak_a_box, frees another of 1234 bytes.
#[inline(never)]
fn leak_a_box() -> &'static mut [u8; 4321] {
    std::hint::black_box(Box::leak(Box::new([7u8; 4321]))) // kept by the optimizer
}

#[inline(never)]
fn drop_a_box() -> u8 {
    let b = std::hint::black_box(Box::new([9u8; 1234]));
    b[1233]
}

fn main() {
    let leaked = leak_a_box();
    println!("leaked {} bytes, dropped a box of {}", leaked.len(), drop_a_box());
}
