//! One parallel fan-out for I/O-bound work (hashing the tree, reading and writing the files
//! of an accept, materializing a workspace): the items are cut into contiguous chunks, each
//! chunk runs on a scoped thread, and the results come back in item order.

use crate::error::{Error, Result};

/// Maps `f` over `items` on up to `threads` scoped threads; results keep the items' order.
/// A panicking thread becomes [`Error::Internal`] (`what` names the work).
pub fn map<T: Sync, R: Send>(items: &[T], threads: usize, what: &str, f: impl Fn(&T) -> R + Sync) -> Result<Vec<R>> {
    Ok(chunks(items, threads, what, |chunk| chunk.iter().map(&f).collect::<Vec<R>>())?.into_iter().flatten().collect())
}

/// Maps `f` over up to `threads` contiguous chunks of `items`, one scoped thread each; the
/// chunks' results come back in order (for work that keeps state across a chunk).
pub fn chunks<T: Sync, R: Send>(items: &[T], threads: usize, what: &str, f: impl Fn(&[T]) -> R + Sync) -> Result<Vec<R>> {
    let threads = threads.clamp(1, items.len().max(1));
    if threads == 1 {
        return Ok(vec![f(items)]);
    }
    let f = &f;
    std::thread::scope(|s| {
        let handles: Vec<_> = items.chunks(items.len().div_ceil(threads)).map(|chunk| s.spawn(move || f(chunk))).collect();
        handles.into_iter().map(|h| h.join().map_err(|_| Error::panicked(what))).collect()
    })
}

/// Threads for `n` I/O-bound items (files read, written and fsynced by accept and review):
/// a few overlap the latency. The bench's bare reference for accept uses the same number.
pub fn io_threads(n: usize) -> usize {
    threads_for(n, 16, 4)
}

/// Threads for `n` items when each thread should get at least `per_thread` of them, at most
/// `max` threads.
pub fn threads_for(n: usize, per_thread: usize, max: usize) -> usize {
    n.div_ceil(per_thread.max(1)).clamp(1, max.max(1))
}

#[cfg(test)]
mod tests {
    #[test]
    fn keeps_order_and_covers_every_item() {
        let items: Vec<u32> = (0..1000).collect();
        for threads in [1, 2, 3, 7] {
            let out = super::map(&items, threads, "test", |x| x * 2).unwrap();
            assert_eq!(out, items.iter().map(|x| x * 2).collect::<Vec<_>>());
        }
        assert!(super::map(&[] as &[u32], 4, "test", |x| *x).unwrap().is_empty());
        assert_eq!(super::threads_for(100, 16, 4), 4);
        assert_eq!(super::threads_for(3, 16, 4), 1);
    }
}
