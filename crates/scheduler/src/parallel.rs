//! The CPU work of one batch spread over the machine's cores: decoding and
//! encoding the runs and pages a batch rewrites (zstd, postcard) is pure
//! and independent value by value, while reading and writing the store is
//! not. A batch that rewrites thousands of runs (a large sitemap of one big
//! host, whose new URLs land all over its lane) encodes them on every core
//! instead of one; a small batch stays on the calling thread, and so does
//! one whose work is too little to pay for a thread (a completion of a
//! hundred URLs on a daemon whose cores its clients keep busy).

use std::sync::{Mutex, OnceLock};
use std::thread;

/// The threads a batch's work is spread over: the cores this process may
/// use, read once.
fn threads() -> usize {
    #[cfg(test)]
    if let Some(n) = tests::THREADS.get() {
        return n;
    }
    static THREADS: OnceLock<usize> = OnceLock::new();
    *THREADS.get_or_init(|| thread::available_parallelism().map_or(1, |n| n.get()))
}

/// `f` of every item, in the items' order: on the calling thread when there
/// are fewer than two threads' worth (`per_thread` items each: enough work
/// that starting a thread, tens of microseconds, is worth it), otherwise in
/// contiguous chunks, one per thread (the calling thread takes the first,
/// and any whose thread cannot be started). A panic in `f` is a panic of
/// the caller.
pub(crate) fn map<T, U, F>(items: Vec<T>, per_thread: usize, f: F) -> Vec<U>
where
    T: Send,
    U: Send,
    F: Fn(T) -> U + Sync,
{
    let workers = threads().min(items.len() / per_thread.max(1)).max(1);
    if workers == 1 {
        return items.into_iter().map(f).collect();
    }
    #[cfg(test)]
    tests::SPREAD.with_borrow_mut(|s| s.push(std::any::type_name::<T>()));
    let size = items.len().div_ceil(workers);
    // Each chunk in a slot its thread takes it from; a chunk whose thread
    // could not be started (the process's limit on threads) is taken back
    // and done on the calling thread.
    let mut slots: Vec<Mutex<Option<Vec<T>>>> = Vec::with_capacity(workers);
    let mut rest = items.into_iter().peekable();
    while rest.peek().is_some() {
        slots.push(Mutex::new(Some(rest.by_ref().take(size).collect())));
    }
    let take = |slot: &Mutex<Option<Vec<T>>>| -> Vec<T> {
        let mut slot = slot.lock().unwrap_or_else(|e| e.into_inner());
        slot.take().unwrap_or_default()
    };
    let f = &f;
    thread::scope(|scope| {
        let handles: Vec<_> = slots[1..]
            .iter()
            .map(|slot| {
                #[cfg(test)]
                if tests::NO_THREADS.get() {
                    return None;
                }
                thread::Builder::new()
                    .spawn_scoped(scope, move || {
                        take(slot).into_iter().map(f).collect::<Vec<U>>()
                    })
                    .ok()
            })
            .collect();
        let mut out: Vec<U> = take(&slots[0]).into_iter().map(f).collect();
        for (slot, handle) in slots[1..].iter().zip(handles) {
            match handle.map(thread::ScopedJoinHandle::join) {
                Some(Ok(part)) => out.extend(part),
                Some(Err(panic)) => std::panic::resume_unwind(panic),
                None => out.extend(take(slot).into_iter().map(f)),
            }
        }
        out
    })
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use std::cell::{Cell, RefCell};

    thread_local! {
        /// The threads [`map`] may use when called on this thread (`None`:
        /// the machine's cores).
        pub(crate) static THREADS: Cell<Option<usize>> = const { Cell::new(None) };
        /// The item type of each call of [`map`] on this thread that
        /// spread its work.
        pub(crate) static SPREAD: RefCell<Vec<&'static str>> = const { RefCell::new(Vec::new()) };
        /// Whether [`map`] called on this thread finds no thread can be
        /// started.
        pub(crate) static NO_THREADS: Cell<bool> = const { Cell::new(false) };
    }

    /// `f` with [`map`] called on this thread using `n` threads at most;
    /// and the item types of its calls that spread their work.
    pub(crate) fn with_threads<R>(n: usize, f: impl FnOnce() -> R) -> (R, Vec<&'static str>) {
        THREADS.set(Some(n));
        SPREAD.take();
        let out = f();
        THREADS.set(None);
        (out, SPREAD.take())
    }

    #[test]
    fn keeps_the_order_whatever_the_split() {
        for threads in [1, 2, 3, 8] {
            for n in [0, 1, 63, 64, 127, 128, 129, 1000, 4097] {
                let items: Vec<usize> = (0..n).collect();
                let (out, spread) = with_threads(threads, || map(items, 64, |i| i * 3));
                assert_eq!(out, (0..n).map(|i| i * 3).collect::<Vec<_>>(), "n = {n}");
                let expected = threads > 1 && n >= 2 * 64;
                assert_eq!(spread.len() == 1, expected, "{threads} threads, n = {n}");
            }
        }
    }

    #[test]
    fn a_chunk_without_a_thread_is_done_by_the_caller() {
        NO_THREADS.set(true);
        let (out, spread) = with_threads(4, || map((0..1000).collect::<Vec<u32>>(), 64, |i| i + 1));
        NO_THREADS.set(false);
        assert_eq!(out, (1..=1000).collect::<Vec<_>>());
        assert_eq!(spread.len(), 1);
    }

    #[test]
    fn a_panic_in_a_worker_is_the_callers() {
        let caught = std::panic::catch_unwind(|| {
            with_threads(4, || {
                map((0..10_000).collect::<Vec<u32>>(), 64, |i| {
                    assert!(i != 9_999, "the last item, in the last worker");
                    i
                })
            })
        });
        assert!(caught.is_err());
    }
}
