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
///
/// A wait under way is counted too ([`WaitCounter::claim_waiting`]): a
/// thread asleep on a lock for 40 ms would otherwise show no wait until it
/// wakes. sysbench mutex at 32 threads on 2 CPUs: a third of its threads
/// qualified only 43-50 ms into the run, when their first wait ended, and
/// ran unconfined against the confined ones until then.
#[repr(C, align(64))]
#[derive(Debug)]
pub struct WaitCounter {
    wait_ticks: AtomicU64,
    waits: AtomicU64,
    /// While the counter's own thread waits (see [`Waiting`]): the tick
    /// from which the wait is not yet counted, shifted left by one, the
    /// lowest bit set once a monitor counted part of it; 0 otherwise.
    waiting: AtomicU64,
}

/// [`WaitCounter::waiting`]'s mark of a wait part of which is counted.
const CLAIMED: u64 = 1;

/// [`WaitCounter::waiting`] for a wait not counted from tick `from` (at
/// least 1: 0 means no wait; a TSC reaches 2^63 after decades).
#[inline]
const fn waiting_word(from: u64, claimed: bool) -> u64 {
    (if from == 0 { 1 } else { from }) << 1 | claimed as u64
}

impl WaitCounter {
    /// A zeroed counter, usable in a `static`.
    pub const fn new() -> Self {
        Self {
            wait_ticks: AtomicU64::new(0),
            waits: AtomicU64::new(0),
            waiting: AtomicU64::new(0),
        }
    }

    /// Marks the start of its thread's wait at `start` ticks.
    #[inline]
    fn begin(&self, start: u64) {
        // Relaxed: the monitor's claim and the thread's finish are each
        // one read-modify-write of this word; that decides who counts what.
        self.waiting
            .store(waiting_word(start, false), Ordering::Relaxed);
    }

    /// Ends its thread's wait at `end` ticks: records what no monitor
    /// counted, and the wait itself unless a monitor already did.
    #[inline]
    fn finish(&self, end: u64) {
        let from = self.waiting.swap(0, Ordering::Relaxed); // Relaxed: see `begin`.
        let ticks = end.saturating_sub(from >> 1);
        // Relaxed: independent statistics; the monitor needs no ordering.
        self.wait_ticks.fetch_add(ticks, Ordering::Relaxed);
        if from & CLAIMED == 0 {
            self.waits.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Counts the wait its thread is in, up to `now` ticks: `(wait_ticks,
    /// waits)` not counted before, one wait the first time a wait is
    /// claimed (its end then adds none). Each tick of a wait is counted
    /// once, here or at its end, however the two race.
    pub fn claim_waiting(&self, now: u64) -> (u64, u64) {
        let from = self.waiting.load(Ordering::Relaxed); // Relaxed: see `begin`.
        let start = from >> 1;
        if from == 0 || now <= start {
            return (0, 0);
        }
        match self.waiting.compare_exchange(
            from,
            waiting_word(now, true),
            Ordering::Relaxed, // as in `begin`
            Ordering::Relaxed,
        ) {
            Ok(_) => (now - start, u64::from(from & CLAIMED == 0)),
            // The wait ended (and was recorded whole) or another began.
            Err(_) => (0, 0),
        }
    }

    /// Forgets everything, a wait under way included: for a counter handed
    /// to a new thread.
    pub fn reset(&self) {
        self.take();
        self.waiting.store(0, Ordering::Relaxed); // Relaxed: before the new owner runs.
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

/// A wait of the calling thread, from [`Waiting::begin`] to
/// [`Waiting::end`] (paper 1's `sched_lock()` around `spin_lock()`),
/// visible to a monitor while it lasts where the thread has a counter of
/// its own.
#[must_use = "a wait is recorded at its end"]
#[derive(Debug)]
pub struct Waiting {
    start: u64,
    own: Option<&'static WaitCounter>,
}

impl Waiting {
    /// The calling thread begins to wait now.
    #[inline]
    pub fn begin() -> Self {
        let start = now_ticks();
        let counter = CURRENT.with(Cell::get);
        // SAFETY: only `set_thread_counter` stores non-null, from a `&'static`.
        let own = (!counter.is_null()).then(|| unsafe { &*counter });
        if let Some(c) = own {
            c.begin(start);
        }
        Waiting { start, own }
    }

    /// The wait ends now: records it; returns its length in ticks (at
    /// least 1).
    #[inline]
    pub fn end(self) -> u64 {
        let end = now_ticks();
        let waited = end.wrapping_sub(self.start).max(1);
        match self.own {
            Some(c) => c.finish(end.max(self.start.saturating_add(1))),
            // The thread may have got its counter during the wait (its
            // first lock attempt registers it).
            None => thread_counter().record(waited),
        }
        waited
    }
}

/// Runs `wait`, the waiting part of an acquisition whose first attempt
/// failed, and records its duration into the calling thread's counter
/// (see [`Waiting`]). Returns what `wait` returned and the wait's ticks
/// (at least 1).
#[inline]
pub fn record_wait<T>(wait: impl FnOnce() -> T) -> (T, u64) {
    let waiting = Waiting::begin();
    let out = wait();
    (out, waiting.end())
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
    fn a_wait_under_way_is_counted_once_by_claims_and_its_end() {
        let counter = WaitCounter::new();
        counter.begin(1_000);
        assert_eq!(counter.claim_waiting(1_400), (400, 1));
        // Claimed again: the rest so far, and no second wait.
        assert_eq!(counter.claim_waiting(1_900), (500, 0));
        assert_eq!(counter.claim_waiting(1_800), (0, 0), "time went back");
        counter.finish(2_500);
        assert_eq!(counter.take(), (600, 0));
        // The end counted first: a later claim finds nothing.
        counter.begin(3_000);
        counter.finish(3_300);
        assert_eq!(counter.claim_waiting(3_200), (0, 0));
        assert_eq!(counter.take(), (300, 1));
        // Unclaimed, a wait is counted at its end as before.
        assert_eq!(counter.claim_waiting(4_000), (0, 0));
    }

    #[test]
    fn claims_racing_a_wait_add_up_to_its_length() {
        static MINE: WaitCounter = WaitCounter::new();
        let done = std::sync::atomic::AtomicBool::new(false);
        let before = now_ticks();
        let (waited, claimed) = std::thread::scope(|s| {
            let waiter = s.spawn(|| {
                set_thread_counter(&MINE);
                let w = Waiting::begin();
                std::thread::sleep(std::time::Duration::from_millis(20));
                let waited = w.end();
                // Relaxed: only ends the claim loop; the join orders the rest.
                done.store(true, Ordering::Relaxed);
                clear_thread_counter();
                waited
            });
            let mut claimed = (0, 0);
            while !done.load(Ordering::Relaxed) {
                let (t, n) = MINE.claim_waiting(now_ticks());
                claimed = (claimed.0 + t, claimed.1 + n);
                std::thread::yield_now();
            }
            (waiter.join().unwrap(), claimed)
        });
        let after = now_ticks();
        let (ticks, waits) = MINE.take();
        assert_eq!(waits + claimed.1, 1, "one wait");
        // The parts are back to back, from the wait's start to its end (or
        // to a claim read just after the end, where the waiter's swap came
        // a moment late): never a tick twice.
        let total = ticks + claimed.0;
        assert!(
            total >= waited && total <= after - before,
            "{ticks} + {claimed:?} vs {waited}"
        );
        assert!(claimed.0 > 0, "never seen while it lasted");
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
