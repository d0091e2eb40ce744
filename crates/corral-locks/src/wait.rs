//! Per-thread lock-wait accounting: paper 1's `sched_lock()` (Algorithm 1),
//! which reads the TSC before and after `spin_lock()` and adds the
//! difference to the current task's accumulated lock time.

use core::cell::Cell;
use core::ptr;
use core::sync::atomic::{AtomicU64, Ordering};

pub use crate::sys::clock::{now_ticks, ns_to_ticks, ticks_to_ns, CALIBRATION_WINDOW};
use crate::RawLock;

/// Accumulated lock-waiting time of one thread (paper 1's `acc_lock_time`)
/// and the number of acquisitions that had to wait. Written by its thread,
/// read and reset by a monitor; one cache line so counters never share one.
#[repr(C, align(64))]
#[derive(Debug)]
pub struct WaitCounter {
    wait_ticks: AtomicU64,
    waits: AtomicU64,
}

impl WaitCounter {
    /// A zeroed counter, usable in a `static`.
    pub const fn new() -> Self {
        Self {
            wait_ticks: AtomicU64::new(0),
            waits: AtomicU64::new(0),
        }
    }

    /// Adds one wait of `ticks`.
    #[inline]
    pub fn record(&self, ticks: u64) {
        // Relaxed: independent statistics; the monitor needs no ordering.
        self.wait_ticks.fetch_add(ticks, Ordering::Relaxed);
        self.waits.fetch_add(1, Ordering::Relaxed);
    }

    /// `(wait_ticks, waits)` so far. The two are read separately, so a
    /// concurrent `record` may show in one and not yet in the other.
    pub fn snapshot(&self) -> (u64, u64) {
        (
            self.wait_ticks.load(Ordering::Relaxed),
            self.waits.load(Ordering::Relaxed),
        )
    }

    /// `(wait_ticks, waits)` since the last `take`, resetting both to zero;
    /// nothing recorded concurrently is lost (each field is swapped).
    pub fn take(&self) -> (u64, u64) {
        (
            self.wait_ticks.swap(0, Ordering::Relaxed),
            self.waits.swap(0, Ordering::Relaxed),
        )
    }
}

impl Default for WaitCounter {
    fn default() -> Self {
        Self::new()
    }
}

/// Where waits of threads that never called [`set_thread_counter`] go.
static UNATTRIBUTED: WaitCounter = WaitCounter::new();

std::thread_local! {
    /// This thread's counter; null means [`UNATTRIBUTED`]. Const-initialised
    /// and without destructor: no allocation on first use.
    static CURRENT: Cell<*const WaitCounter> = const { Cell::new(ptr::null()) };
}

/// Points this thread's wait accounting at `counter` (e.g. its registry slot).
pub fn set_thread_counter(counter: &'static WaitCounter) {
    CURRENT.with(|current| current.set(counter));
}

/// Sends this thread's waits back to [`unattributed_counter`].
pub fn clear_thread_counter() {
    CURRENT.with(|current| current.set(ptr::null()));
}

/// The counter this thread's waits are recorded into.
#[inline]
pub fn thread_counter() -> &'static WaitCounter {
    let counter = CURRENT.with(Cell::get);
    if counter.is_null() {
        &UNATTRIBUTED
    } else {
        // SAFETY: only `set_thread_counter` stores non-null, from a `&'static`.
        unsafe { &*counter }
    }
}

/// The shared counter of threads with no counter of their own.
pub fn unattributed_counter() -> &'static WaitCounter {
    &UNATTRIBUTED
}

/// Runs `wait`, the waiting part of an acquisition whose first attempt
/// failed, and records its duration into the calling thread's counter
/// (paper 1's `sched_lock()` around `spin_lock()`). Returns what `wait`
/// returned and the ticks recorded (at least 1).
#[inline]
pub fn record_wait<T>(wait: impl FnOnce() -> T) -> (T, u64) {
    let start = now_ticks();
    let out = wait();
    let waited = now_ticks().wrapping_sub(start).max(1);
    thread_counter().record(waited);
    (out, waited)
}

/// A lock whose acquisitions record their waiting time into the acquiring
/// thread's [`WaitCounter`], as paper 1's `sched_lock()` wraps `spin_lock()`
/// (Sec. 3.2, Algorithm 1). Unlike Algorithm 1, the clock is read only after
/// a first `try_lock` fails: an uncontended acquisition records nothing and
/// costs one `try_lock`, and all timing stays in a cold path.
#[derive(Debug, Default)]
pub struct Timed<L: RawLock> {
    inner: L,
}

impl<L: RawLock> Timed<L> {
    /// Wraps `inner`.
    pub const fn new(inner: L) -> Self {
        Self { inner }
    }

    /// The wrapped lock.
    pub fn inner(&self) -> &L {
        &self.inner
    }

    /// Acquires the lock; returns the ticks spent waiting (at least 1 when
    /// the first attempt failed, 0 when it succeeded).
    #[inline]
    pub fn lock_timed(&self) -> u64 {
        if self.inner.try_lock() {
            0
        } else {
            self.lock_waiting()
        }
    }

    #[cold]
    #[inline(never)]
    fn lock_waiting(&self) -> u64 {
        record_wait(|| self.inner.lock()).1
    }
}

impl<L: RawLock> RawLock for Timed<L> {
    const NAME: &'static str = L::NAME;

    #[inline]
    fn lock(&self) {
        self.lock_timed();
    }

    #[inline]
    fn try_lock(&self) -> bool {
        self.inner.try_lock()
    }

    #[inline]
    unsafe fn unlock(&self) {
        // SAFETY: the caller holds the lock, which is the inner lock.
        unsafe { self.inner.unlock() }
    }

    #[inline]
    fn is_locked(&self) -> bool {
        self.inner.is_locked()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn take_reads_and_resets() {
        let counter = WaitCounter::new();
        counter.record(10);
        counter.record(5);
        assert_eq!(counter.snapshot(), (15, 2));
        assert_eq!(counter.take(), (15, 2));
        assert_eq!(counter.snapshot(), (0, 0));
    }

    #[test]
    fn threads_start_unattributed_and_can_be_pointed_elsewhere() {
        std::thread::spawn(|| {
            assert!(core::ptr::eq(thread_counter(), unattributed_counter()));
            static MINE: WaitCounter = WaitCounter::new();
            set_thread_counter(&MINE);
            assert!(core::ptr::eq(thread_counter(), &MINE));
            clear_thread_counter();
            assert!(core::ptr::eq(thread_counter(), unattributed_counter()));
        })
        .join()
        .unwrap();
    }

    #[test]
    fn tick_conversions_are_inverse_and_monotone() {
        let ns = 1_000_000_000;
        let back = ticks_to_ns(ns_to_ticks(ns));
        assert!(back.abs_diff(ns) <= ns / 1_000, "{back} vs {ns}");
        assert!(ticks_to_ns(2_000_000) >= ticks_to_ns(1_000_000));
        assert!(ns_to_ticks(1_000) > 0);
    }
}
