//! Parking a waiter of a spinning lock algorithm: after a brief spin the
//! waiter sleeps on a futex beside the lock and the release wakes one, so
//! no waiter burns a core behind a holder that is not running (a preempted
//! holder, a real-time waiter on the holder's core, a child without a
//! monitor). Two words that live inside the pthread object, next to the
//! lock's own state, both zero when unused.
//!
//! The releaser never touches the lock's memory after the release: POSIX
//! lets another thread take the free mutex, release it, destroy it and
//! free it at once (pigz does), and a write there corrupts the heap. So
//! it looks for parked waiters while it still holds the lock
//! ([`Parking::before_release`]), marks one as woken and bumps the futex
//! word then, and after the release only makes the FUTEX_WAKE system call
//! by address ([`WakeAfterRelease::wake`]), which reads no memory.
//!
//! A waiter that announces itself (`parked += 1`) just after the
//! releaser looked and just before the release is not woken by that
//! release; it sleeps with a timeout ([`Parking::park`]'s), short at first,
//! and the next release wakes it, so such a miss costs at most the first
//! timeout. A waiter that read `wake` before a bump cannot sleep on it (the
//! futex compares).
//!
//! Wake-ups are throttled as glibc's and parking_lot's are: a release wakes
//! a waiter only when none is already on its way (woken, not yet back at
//! the lock). Otherwise a holder that releases and re-takes the lock in a
//! loop would make a system call and wake a thread at every release, and
//! the woken threads, finding the lock taken again, would park again. The
//! waiter on its way clears the mark when it takes the lock
//! ([`Parking::acquired`]) or goes back to sleep.

use core::sync::atomic::{AtomicU32, Ordering};

use corral_locks::sys::futex::{self, Sharing, WaitResult};

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

/// A wake-up prepared under the lock, made after its release.
#[derive(Debug)]
#[must_use = "call wake() after releasing the lock"]
pub struct WakeAfterRelease(*const AtomicU32);

impl WakeAfterRelease {
    /// Wakes the waiter marked before the release; touches no memory of
    /// the lock, which may be gone by now.
    #[cold]
    pub fn wake(self) {
        futex::wake_addr(self.0, 1, Sharing::Private);
    }
}

impl Parking {
    /// No waiter parked.
    pub const fn new() -> Self {
        Parking {
            parked: AtomicU32::new(0),
            wake: AtomicU32::new(0),
        }
    }

    /// Call while still holding the lock, right before releasing it: if a
    /// waiter sleeps and none is on its way, marks one woken and returns
    /// the wake-up to make after the release.
    #[inline]
    pub fn before_release(&self) -> Option<WakeAfterRelease> {
        // Relaxed: the release store that follows orders it (a load before
        // a Release store stays before it).
        let parked = self.parked.load(Ordering::Relaxed);
        if parked != 0 && parked & ON_ITS_WAY == 0 {
            Some(self.prepare_wake())
        } else {
            None
        }
    }

    #[cold]
    #[inline(never)]
    fn prepare_wake(&self) -> WakeAfterRelease {
        // Relaxed: only the holder marks; the waiters' RMWs keep the count.
        self.parked.fetch_or(ON_ITS_WAY, Ordering::Relaxed);
        // SeqCst: a waiter that read `wake` before this bump cannot sleep.
        self.wake.fetch_add(1, Ordering::SeqCst);
        WakeAfterRelease(&self.wake)
    }

    /// Call after taking the lock, if this thread parked while waiting for
    /// it: the waiter on its way has arrived, the next release may wake
    /// another.
    #[inline]
    pub fn acquired(&self) {
        // Relaxed: only gates wake-ups; a stale mark costs one extra wake.
        self.parked.fetch_and(!ON_ITS_WAY, Ordering::Relaxed);
    }

    /// Sleeps until a release wakes this thread or `timeout_ns` passes,
    /// unless `held()` (read after announcing the wait) says the lock is
    /// free already. The caller then tries the lock again: a wake-up is a
    /// hint, not a hand-off. Returns false if the sleep timed out.
    #[cold]
    #[inline(never)]
    pub fn park(&self, held: impl Fn() -> bool, timeout_ns: u64) -> bool {
        // SeqCst RMW: announced before `wake` and the lock are read.
        self.parked.fetch_add(1, Ordering::SeqCst);
        // SeqCst: read after the announcement; a later bump makes the
        // futex's compare fail.
        let seq = self.wake.load(Ordering::SeqCst);
        // Going to sleep is arriving too: a waiter woken before (maybe this
        // one) no longer holds back the next release's wake-up.
        self.parked.fetch_and(!ON_ITS_WAY, Ordering::SeqCst);
        let mut woken = true;
        if held() {
            woken = futex::wait_for(&self.wake, seq, timeout_ns, Sharing::Private)
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
                    woken = p.0.park(|| p.1.load(Ordering::SeqCst), 10_000_000_000);
                }
                woken
            })
        };
        while p.0.parked.load(Ordering::SeqCst) & !ON_ITS_WAY == 0 {
            std::thread::yield_now();
        }
        let wake = p.0.before_release();
        p.1.store(false, Ordering::SeqCst);
        wake.expect("a parked waiter").wake();
        // Woken by the release, not by the safety limit.
        assert!(waiter.join().unwrap());
    }

    #[test]
    fn a_free_lock_is_not_slept_on() {
        let p = Parking::new();
        assert!(p.park(|| false, 1_000_000));
        assert_eq!(p.parked.load(Ordering::SeqCst), 0);
    }

    #[test]
    fn a_second_release_does_not_wake_while_one_waiter_is_on_its_way() {
        let p = Parking::new();
        p.parked.store(2, Ordering::SeqCst); // two asleep
        p.before_release().expect("a sleeper").wake();
        assert_eq!(p.wake.load(Ordering::SeqCst), 1);
        assert!(p.before_release().is_none(), "throttled");
        p.acquired();
        p.before_release().expect("the next may wake").wake();
        assert_eq!(p.wake.load(Ordering::SeqCst), 2);
    }
}
