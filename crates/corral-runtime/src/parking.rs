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
//!
//! Wake-ups are throttled as glibc's and parking_lot's are: a release wakes
//! a waiter only when none is already on its way (woken, not yet back at
//! the lock). Otherwise a holder that releases and re-takes the lock in a
//! loop would make a system call and wake a thread at every release, and
//! the woken threads, finding the lock taken again, would park again, each
//! paying its membarrier. The waiter on its way clears the mark when it
//! takes the lock ([`Parking::acquired`]) or goes back to sleep, and a
//! sleeper's own announcement (`parked`) makes the next release look, so
//! no waiter is stranded.

use core::sync::atomic::{AtomicU32, Ordering};

use corral_locks::sys::futex::{self, Sharing, WaitResult};
use corral_locks::sys::membarrier;

/// A sleep's upper bound: the protocol needs none, but a lock word reused
/// against POSIX (re-initialised while waited on) must not strand a thread.
const PARK_LIMIT_NS: u64 = 50_000_000;

/// `parked`'s top bit: a woken waiter is on its way to the lock.
const ON_ITS_WAY: u32 = 1 << 31;

/// The parking words of one lock.
#[derive(Debug, Default)]
#[repr(C)]
pub struct Parking {
    /// Waiters asleep or about to sleep (low bits), and [`ON_ITS_WAY`].
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
        // Relaxed: the barrier above orders it; a waiter seen here is woken
        // unless another is on its way already.
        let parked = self.parked.load(Ordering::Relaxed);
        if parked != 0 && parked & ON_ITS_WAY == 0 {
            self.wake_one();
        }
    }

    #[cold]
    #[inline(never)]
    fn wake_one(&self) {
        // SeqCst RMW: one releaser marks and wakes; the others see the mark.
        if self.parked.fetch_or(ON_ITS_WAY, Ordering::SeqCst) & ON_ITS_WAY != 0 {
            return;
        }
        // SeqCst: a waiter that read `wake` before this bump cannot sleep.
        self.wake.fetch_add(1, Ordering::SeqCst);
        futex::wake(&self.wake, 1, Sharing::Private);
    }

    /// Call after taking the lock, if this thread parked while waiting for
    /// it: the waiter on its way has arrived, the next release may wake
    /// another.
    #[inline]
    pub fn acquired(&self) {
        // Relaxed: only gates wake-ups; a stale mark costs one extra wake.
        self.parked.fetch_and(!ON_ITS_WAY, Ordering::Relaxed);
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
        // Going to sleep is arriving too: a waiter woken before (maybe this
        // one) no longer holds back the next release's wake-up. SeqCst: the
        // releaser that reads the cleared mark wakes, and its bump follows
        // this thread's read of `wake` or makes the sleep return at once.
        self.parked.fetch_and(!ON_ITS_WAY, Ordering::SeqCst);
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
        while p.0.parked.load(Ordering::SeqCst) & !ON_ITS_WAY == 0 {
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

    #[test]
    fn a_second_release_does_not_wake_while_one_waiter_is_on_its_way() {
        let p = Parking::new();
        p.parked.store(2, Ordering::SeqCst); // two asleep
        p.after_release();
        assert_eq!(p.wake.load(Ordering::SeqCst), 1);
        p.after_release();
        assert_eq!(p.wake.load(Ordering::SeqCst), 1, "throttled");
        p.acquired();
        p.after_release();
        assert_eq!(
            p.wake.load(Ordering::SeqCst),
            2,
            "the next may wake once it arrived"
        );
    }
}
