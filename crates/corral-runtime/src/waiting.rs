//! How a thread waits for a held lock, and how that wait is counted.
//!
//! Every wait is timed with the TSC as paper 1's `sched_lock()`
//! (Algorithm 1), in wall time from the failed attempt to the acquisition.
//!
//! A waiter polls the lock (`is_locked`, then `try_lock`) instead of
//! joining its queue, spins briefly, then sleeps until a release wakes it
//! ([`crate::parking`]): it never burns a core behind a holder that is not
//! running, and never loops on `sched_yield`. A user-space holder can be
//! preempted (design guide, "User space is not the kernel"): a FIFO place
//! behind a holder, or behind waiters that are not running, turns every
//! hand-off into a wait for the scheduler. A managed waiter must also move
//! as soon as its placement changes (Algorithm 2 moves threads at lock
//! attempts): every [`PLACEMENT_RECHECK_POLLS`] polls and every wake-up
//! re-check. Only `--wait spin` keeps an unmanaged waiter on the
//! algorithm's own unbounded wait, to study and reproduce collapse.
//! Parking algorithms (futex, adaptive) always wait as they do: they
//! already sleep.

use corral_locks::wait::{record_wait, Waiting};
use corral_locks::RawLock;

/// The clock reads this module once defined, kept at their old paths.
pub use corral_locks::sys::clock::{monotonic_ns, thread_cpu_ns, thread_cpu_ns_of as cpu_ns_of};

use crate::parking::Parking;
use crate::registry::{is_managed, recheck_placement, spin_before_park, spins_unbounded};

/// Polls between two re-checks of the waiter's placement.
pub const PLACEMENT_RECHECK_POLLS: u32 = 64;

/// The fewest spin probes before parking, however often spinning failed:
/// a holder that runs and releases within them is still caught.
const MIN_SPIN: u32 = 16;

thread_local! {
    /// This thread's spin budget: halved each time spinning failed and the
    /// thread had to sleep, doubled (up to `--spin-before-park`) each time
    /// it won while spinning. A holder that sleeps or is preempted inside
    /// its critical section then costs its waiters little CPU.
    static SPIN_BUDGET: core::cell::Cell<u32> = const { core::cell::Cell::new(u32::MAX) };
}

/// First and longest park of a waiter: a release can miss a waiter that
/// announced itself in the instant before it (see [`crate::parking`]); the
/// timeout bounds what that costs, and grows so that a long wait costs few
/// wake-ups.
const PARK_FIRST_NS: u64 = 200_000;
const PARK_MAX_NS: u64 = 50_000_000;

/// First and longest sleep of a waiter whose lock has no [`Parking`]
/// words (a `pthread_spinlock_t` is one int): it backs off in sleeps.
const SLEEP_FIRST_NS: u64 = 2_000;
const SLEEP_MAX_NS: u64 = 1_000_000;

/// Acquires `lock` after a failed first attempt, recording the wait into
/// the calling thread's counter. `parks`: the algorithm sleeps by itself.
/// `parking`: the lock's parking words, where it has them; its releaser
/// calls [`Parking::before_release`]. A lock without them (a
/// `pthread_spinlock_t` is one int) backs off in sleeps instead.
#[cold]
#[inline(never)]
pub fn lock_contended<L: RawLock>(lock: &L, parks: bool, parking: Option<&Parking>) {
    let managed = is_managed();
    if parks || (!managed && spins_unbounded()) {
        // `lock`, not a jump to the algorithm's sleeping path: a parking
        // lock's `lock` tries the fast path once more, tens of nanoseconds
        // after the failed attempt, and a short critical section has often
        // ended by then, leaving the word uncontended and the release free
        // of a wake-up. Without that attempt (glibc's order: mark the word
        // contended, then sleep) sysbench mutex under policy none fell from
        // 1.19-1.30x glibc's throughput to 0.76-0.88x at 2-16 threads (one
        // run of 10 interleaved rounds on 2 CPUs).
        record_wait(|| lock.lock());
        return;
    }
    let waiting = Waiting::begin();
    let max_spin = spin_before_park();
    let mut spin = SPIN_BUDGET.get().clamp(MIN_SPIN.min(max_spin), max_spin);
    let mut sleep_ns = SLEEP_FIRST_NS;
    let mut park_ns = PARK_FIRST_NS;
    let mut polls = 0u32;
    let mut parked = false;
    loop {
        if !lock.is_locked() && lock.try_lock() {
            break;
        }
        polls = polls.wrapping_add(1);
        if managed && polls.is_multiple_of(PLACEMENT_RECHECK_POLLS) {
            recheck_placement();
        }
        if polls < spin {
            core::hint::spin_loop();
            continue;
        }
        // The spin failed: the holder is slow or not running; spin less
        // next time (glibc's adaptive mutex learns the same way).
        spin = (spin / 2).max(MIN_SPIN.min(max_spin));
        match parking {
            Some(p) => {
                p.park(|| lock.is_locked(), park_ns);
                park_ns = (park_ns * 2).min(PARK_MAX_NS);
                parked = true;
            }
            None => {
                corral_locks::sys::clock::sleep_ns(sleep_ns);
                sleep_ns = (sleep_ns * 2).min(SLEEP_MAX_NS);
            }
        }
        if managed {
            recheck_placement();
        }
        polls = 0; // woken: spin briefly again before the next sleep
    }
    if let (true, Some(p)) = (parked, parking) {
        p.acquired();
    }
    if !parked && polls < spin {
        // Won while spinning: spinning pays here; spin longer next time.
        spin = spin.saturating_mul(2).min(max_spin);
    }
    SPIN_BUDGET.set(spin);
    waiting.end();
}

#[cfg(test)]
mod tests {
    use super::*;
    use corral_locks::TicketLock;
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::sync::Arc;

    #[test]
    fn polling_and_queueing_waiters_still_exclude_each_other() {
        // Managed: waiters poll; `parks = true` makes half of them queue.
        crate::registry::set_managed(true);
        let lock = Arc::new(TicketLock::new());
        let count = Arc::new(AtomicU64::new(0));
        let handles: Vec<_> = (0..4)
            .map(|i| {
                let (lock, count) = (lock.clone(), count.clone());
                std::thread::spawn(move || {
                    for _ in 0..2_000 {
                        if !lock.try_lock() {
                            lock_contended(&*lock, i % 2 == 0, None);
                        }
                        // A non-atomic read-modify-write: lost updates would show.
                        let v = count.load(Ordering::Relaxed);
                        count.store(v + 1, Ordering::Relaxed);
                        // SAFETY: this thread holds the lock.
                        unsafe { lock.unlock() };
                    }
                })
            })
            .collect();
        handles.into_iter().for_each(|h| h.join().unwrap());
        assert_eq!(count.load(Ordering::Relaxed), 8_000);
    }

    /// Fails its first `try_lock` only; its `lock` is a `try_lock`.
    #[derive(Default)]
    struct FreedAfterFirstTry {
        tries: AtomicU64,
    }

    impl RawLock for FreedAfterFirstTry {
        const NAME: &'static str = "freed-after-first-try";
        fn lock(&self) {
            assert!(self.try_lock(), "slept without trying the lock again");
        }
        fn try_lock(&self) -> bool {
            self.tries.fetch_add(1, Ordering::Relaxed) > 0
        }
        unsafe fn unlock(&self) {}
        fn is_locked(&self) -> bool {
            self.tries.load(Ordering::Relaxed) == 0
        }
    }

    #[test]
    fn a_parking_lock_is_tried_again_before_its_waiter_sleeps() {
        let lock = FreedAfterFirstTry::default();
        assert!(!lock.try_lock(), "the caller's failed first attempt");
        lock_contended(&lock, true, None);
        assert_eq!(lock.tries.load(Ordering::Relaxed), 2);
    }

    #[test]
    fn reads_the_cpu_clock_of_a_live_thread_and_not_of_a_dead_one() {
        let me = crate::registry::current_tid();
        assert!(cpu_ns_of(me).is_some());
        let dead = std::thread::spawn(crate::registry::current_tid)
            .join()
            .unwrap();
        // The join returns when the kernel clears the tid, a moment before
        // the thread is reaped: it may still be read until then (up to 1 s
        // here; reuse of the tid within it is not expected).
        let gone = (0..1_000).any(|_| {
            let gone = cpu_ns_of(dead).is_none();
            if !gone {
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
            gone
        });
        assert!(gone);
    }
}
