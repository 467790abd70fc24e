// SPDX-License-Identifier: MIT
// Four named threads (each thread's first heap call is inside pthread_getattr_np, in the
// runtime's start of the thread): worker k makes 1000 blocks of 3001 + k bytes, each freed.
#[path = "counting.rs"]
mod counting;

use std::thread;

#[inline(never)]
fn work(k: usize) -> usize {
    let mut sum = 0;
    for i in 0..1000 {
        let v: Vec<u8> = Vec::with_capacity(3001 + k);
        sum += std::hint::black_box(v).capacity() + i;
    }
    sum
}

fn main() {
    let workers: Vec<_> = (0..4)
        .map(|k| {
            thread::Builder::new()
                .name(format!("worker{}", k))
                .spawn(move || work(k))
                .expect("spawn")
        })
        .collect();
    let total: usize = workers.into_iter().map(|w| w.join().expect("join")).sum();
    println!("total {}", total);
    counting::report();
}
