// SPDX-License-Identifier: MIT
// Hello world: hung at its start, traced (the runtime's first heap call of the main thread
// is inside pthread_getattr_np).
fn main() {
    println!("hello, world");
}
