//! Parking a waiter of a spinning lock algorithm: after a brief spin the
//! waiter sleeps on a futex beside the lock and the release wakes one, so
//! no waiter burns a core behind a holder that is not running (a preempted
//! holder, a real-time waiter on the holder's core, a child without a
//! monitor). Two words that live inside the pthread object, next to the
//! lock's own state, both zero when unused.
//!
//! The lost-wake-up argument is Dekker's: the waiter announces itself
//! (`parked += 1`) and then looks at the lock, the releaser stores the
//! release and then looks at `parked`, each with a barrier between. One of
//! the two sees the other's store: either the waiter sees the lock free and
//! does not sleep, or the releaser sees a parked waiter, bumps `wake` (so a
//! waiter that read `wake` before it cannot sleep on the stale value) and
//! wakes it. The barriers are asymmetric ([`membarrier`]): the waiter,
//! already on its slow path, pays a system call, so that the releaser's is
//! a compiler fence and an uncontended unlock costs one plain load.

use core::sync::atomic::{AtomicU32, Ordering};

use corral_locks::sys::futex::{self, Sharing, WaitResult};
use corral_locks::sys::membarrier;

/// A sleep's upper bound: the protocol needs none, but a lock word reused
/// against POSIX (re-initialised while waited on) must not strand a thread.
const PARK_LIMIT_NS: u64 = 50_000_000;

/// The parking words of one lock.
#[derive(Debug, Default)]
#[repr(C)]
pub struct Parking {
    /// Waiters asleep or about to sleep.
    parked: AtomicU32,
    /// Bumped by each wake-up: the futex word.
    wake: AtomicU32,
}

impl Parking {
    /// No waiter parked.
    pub const fn new() -> Self {
        Parking {
            parked: AtomicU32::new(0),
            wake: AtomicU32::new(0),
        }
    }

    /// Call right after releasing the lock: wakes one parked waiter, if any.
    #[inline]
    pub fn after_release(&self) {
        // The releaser's half of the Dekker pattern: the release store above
        // is ordered before the load of `parked`.
        membarrier::light();
        // Relaxed: the barrier above orders it; a waiter seen here is woken.
        if self.parked.load(Ordering::Relaxed) != 0 {
            self.wake_one();
        }
    }

    #[cold]
    #[inline(never)]
    fn wake_one(&self) {
        // SeqCst: a waiter that read `wake` before this bump cannot sleep.
        self.wake.fetch_add(1, Ordering::SeqCst);
        futex::wake(&self.wake, 1, Sharing::Private);
    }

    /// Sleeps until a release wakes this thread, unless `held()` (read
    /// after announcing the wait) says the lock is free already. The caller
    /// then tries the lock again: a wake-up is a hint, not a hand-off.
    /// Returns false only if the sleep ran into its safety limit.
    #[cold]
    #[inline(never)]
    pub fn park(&self, held: impl Fn() -> bool) -> bool {
        // SeqCst RMW: the waiter's half of the Dekker pattern.
        self.parked.fetch_add(1, Ordering::SeqCst);
        // The waiter's half: every releaser's unlock store so far is visible
        // to `held()`, or that releaser will see `parked`.
        membarrier::heavy();
        // SeqCst: read after the announcement, so a bump that follows a
        // releaser's look at `parked` is seen by the futex's compare.
        let seq = self.wake.load(Ordering::SeqCst);
        let mut woken = true;
        if held() {
            woken = futex::wait_for(&self.wake, seq, PARK_LIMIT_NS, Sharing::Private)
                != WaitResult::TimedOut;
        }
        // Relaxed: only a count; the wake-up's ordering is the lock's own.
        self.parked.fetch_sub(1, Ordering::Relaxed);
        woken
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicBool;
    use std::sync::Arc;

    #[test]
    fn a_release_wakes_a_parked_waiter() {
        let p = Arc::new((Parking::new(), AtomicBool::new(true)));
        let waiter = {
            let p = p.clone();
            std::thread::spawn(move || {
                let mut woken = true;
                while p.1.load(Ordering::SeqCst) {
                    woken = p.0.park(|| p.1.load(Ordering::SeqCst));
                }
                woken
            })
        };
        while p.0.parked.load(Ordering::SeqCst) == 0 {
            std::thread::yield_now();
        }
        p.1.store(false, Ordering::SeqCst);
        p.0.after_release();
        // Woken by the release, not by the safety limit.
        assert!(waiter.join().unwrap());
    }

    #[test]
    fn a_free_lock_is_not_slept_on() {
        let p = Parking::new();
        assert!(p.park(|| false));
        assert_eq!(p.parked.load(Ordering::SeqCst), 0);
    }
}
