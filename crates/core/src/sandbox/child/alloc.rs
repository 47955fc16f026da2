//! A counting global allocator. In the parent it only counts; in the sandbox child, once the
//! script's heap passes the cap set from `max_memory_mb`, it writes the run's `memory` result
//! straight to the protocol pipe and aborts: the limit holds even against a script that
//! catches `MemoryError` (or `BaseException`) and keeps allocating.
//!
//! This is the one module with `unsafe` code: a `GlobalAlloc` implementation is unsafe by
//! definition. It delegates every allocation to the system allocator unchanged.
#![allow(unsafe_code)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

/// The allocator. The `cairn` binary installs it as its global allocator (see `src/main.rs`);
/// the library never does, so tests and benches keep the system allocator.
pub struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);
/// 0 = no cap (the parent).
static CAP: AtomicUsize = AtomicUsize::new(0);

/// The `memory` result written to the pipe when the cap is passed, serialized from the
/// protocol's own types before the cap is armed (nothing may allocate once it is passed).
static OVER_CAP_MSG: std::sync::OnceLock<Vec<u8>> = std::sync::OnceLock::new();

/// Bytes currently allocated.
pub fn live() -> usize {
    LIVE.load(Ordering::Relaxed)
}

/// Caps live heap bytes at `bytes` from now on (child only); `over_cap_msg` is the protocol
/// line to send when the cap is passed.
pub fn set_cap(bytes: usize, over_cap_msg: Vec<u8>) {
    let _ = OVER_CAP_MSG.set(over_cap_msg);
    CAP.store(bytes, Ordering::Relaxed);
}

#[inline]
fn grow(n: usize) -> bool {
    let prev = LIVE.fetch_add(n, Ordering::Relaxed);
    let cap = CAP.load(Ordering::Relaxed);
    cap == 0 || prev.saturating_add(n) <= cap
}

#[cold]
fn over_cap() -> ! {
    // No allocation from here on: a raw write of a prepared buffer to the protocol pipe, then
    // abort.
    if let Some(msg) = OVER_CAP_MSG.get() {
        // SAFETY: writing an initialized buffer to fd 1; a failed or short write only loses the
        // message (the parent then reports a crash instead).
        unsafe {
            libc::write(1, msg.as_ptr().cast(), msg.len());
        }
    }
    std::process::abort()
}

// SAFETY: every method forwards to `System` with the same arguments; the bookkeeping around
// it touches only atomics.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if !grow(layout.size()) {
            over_cap();
        }
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        if !grow(layout.size()) {
            over_cap();
        }
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) };
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if new_size > layout.size() {
            if !grow(new_size - layout.size()) {
                over_cap();
            }
        } else {
            LIVE.fetch_sub(layout.size() - new_size, Ordering::Relaxed);
        }
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}
