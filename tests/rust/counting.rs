// SPDX-License-Identifier: MIT
// The programs' own count of their heap calls: a global allocator around the system one
// that counts every block it hands out (alloc, alloc_zeroed, realloc's new block) and its
// bytes. `report` prints the counts on stderr (unbuffered: printing allocates nothing), then
// allocates a marker block of MARKER bytes: in the capture, the allocations made at these
// functions before the marker are exactly the ones counted.
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

pub const MARKER: usize = 7919;

pub struct Counting;

static ALLOCATIONS: AtomicU64 = AtomicU64::new(0);
static BYTES: AtomicU64 = AtomicU64::new(0);

fn count(p: *mut u8, size: usize) -> *mut u8 {
    if !p.is_null() {
        ALLOCATIONS.fetch_add(1, Relaxed);
        BYTES.fetch_add(size as u64, Relaxed);
    }
    p
}

// Not inlined: the capture finds the blocks counted here by these frames.
unsafe impl GlobalAlloc for Counting {
    #[inline(never)]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count(unsafe { System.alloc(layout) }, layout.size())
    }
    #[inline(never)]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        count(unsafe { System.alloc_zeroed(layout) }, layout.size())
    }
    #[inline(never)]
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count(unsafe { System.realloc(ptr, layout, new_size) }, new_size)
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

pub fn report() {
    eprintln!(
        "rust heap: {} allocations, {} bytes",
        ALLOCATIONS.load(Relaxed),
        BYTES.load(Relaxed)
    );
    std::hint::black_box(vec![0u8; MARKER]);
}
