// SPDX-License-Identifier: MIT
// Panics: a thread's, caught by its join, then main's (exit status 101). The heap counts are
// reported before main panics; the panics' own messages go to stderr as untraced.
#[path = "counting.rs"]
mod counting;

use std::thread;

fn main() {
    let r = thread::spawn(|| {
        let v: Vec<u32> = (0..100).collect();
        if std::hint::black_box(v.len()) == 100 {
            panic!("worker gives up after {} items", v.len());
        }
    })
    .join();
    println!("worker panicked: {}", r.is_err());
    counting::report();
    let empty: Vec<u8> = Vec::new();
    let i = std::hint::black_box(3);
    println!("{}", empty[i]);
}
