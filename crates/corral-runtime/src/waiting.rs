//! How a thread waits for a held lock, and how that wait is counted.
//!
//! Every wait is timed with the TSC as paper 1's `sched_lock()`
//! (Algorithm 1). Without a placement policy (`--policy none`, a forked
//! child without a monitor) a waiter polls, spins briefly, then sleeps
//! until a release wakes it ([`crate::parking`]); only `--wait spin` keeps
//! the algorithm's own wait (the ticket lock's unbounded FIFO spin), to
//! study and reproduce collapse. Real-time waiters always sleep.
//!
//! Under the SSC policy a waiter polls the lock (`is_locked`, then
//! `try_lock`) instead of joining its queue, spins briefly, then yields
//! between polls. A user-space holder can be preempted (design guide, "User
//! space is not the kernel"): a FIFO place behind a holder, or behind
//! waiters that are not running, turns every hand-off into a wait for the
//! scheduler, and a waiter spinning out its slice takes the core from the
//! holder it waits for. A waiter must also be able to move as soon as its
//! placement changes (Algorithm 2 moves threads at lock attempts; every
//! [`PLACEMENT_RECHECK_POLLS`] polls re-check). The counted wait is CPU
//! time (spin ticks plus the thread CPU time of the yield loop), so time
//! spent descheduled while others work is not mistaken for lock waiting;
//! where the core is not shared, a yield returns at once and CPU time is
//! wall time.
//! Parking algorithms (futex, adaptive) always wait as they do: they already
//! sleep instead of spinning.

use corral_locks::wait::{now_ticks, ns_to_ticks, record_wait, thread_counter};
use corral_locks::RawLock;

/// The clock reads this module once defined, kept at their old paths.
pub use corral_locks::sys::clock::{monotonic_ns, thread_cpu_ns, thread_cpu_ns_of as cpu_ns_of};

use crate::parking::Parking;
use crate::registry::{is_managed, on_lock_attempt, spin_before_yield, spins_unbounded};

/// Polls between two re-checks of the waiter's placement.
pub const PLACEMENT_RECHECK_POLLS: u32 = 64;

/// First and longest sleep of a waiter whose lock has no [`Parking`]
/// words (a `pthread_spinlock_t` is one int): it backs off in sleeps.
const SLEEP_FIRST_NS: u64 = 2_000;
const SLEEP_MAX_NS: u64 = 1_000_000;

/// Acquires `lock` after a failed first attempt, recording the wait into
/// the calling thread's counter. `parks`: the algorithm sleeps by itself.
/// `parking`: the lock's parking words, where it has them; its releaser
/// calls [`Parking::after_release`].
///
/// A waiter polls and spins briefly. Then a thread the SSC policy manages
/// yields between polls (it must move when its placement changes), and
/// any other waiter, or a real-time one (whose yield never lets a
/// lower-priority holder run), sleeps until a release wakes it. Only
/// `--wait spin` keeps the algorithm's own unbounded spin, for study.
#[cold]
#[inline(never)]
pub fn lock_contended<L: RawLock>(lock: &L, parks: bool, parking: Option<&Parking>) {
    let managed = is_managed();
    if parks || (!managed && spins_unbounded()) {
        record_wait(|| lock.lock());
        return;
    }
    let start = now_ticks();
    let spin = spin_before_yield();
    let mut yielding_since: Option<(u64, u64)> = None;
    let mut sleeps: Option<bool> = None;
    let mut sleep_ns = SLEEP_FIRST_NS;
    let mut polls = 0u32;
    loop {
        if !lock.is_locked() && lock.try_lock() {
            break;
        }
        polls = polls.wrapping_add(1);
        if managed && polls.is_multiple_of(PLACEMENT_RECHECK_POLLS) {
            on_lock_attempt();
        }
        if polls < spin {
            core::hint::spin_loop();
            continue;
        }
        if !*sleeps.get_or_insert_with(|| !managed || is_real_time()) {
            if yielding_since.is_none() {
                yielding_since = Some((now_ticks().wrapping_sub(start), thread_cpu_ns()));
            }
            // SAFETY: sched_yield has no preconditions.
            unsafe { libc::sched_yield() };
            continue;
        }
        match parking {
            Some(p) => {
                p.park(|| lock.is_locked());
            }
            None => {
                corral_locks::sys::clock::sleep_ns(sleep_ns);
                sleep_ns = (sleep_ns * 2).min(SLEEP_MAX_NS);
            }
        }
        if managed {
            on_lock_attempt();
        }
        polls = 0; // woken: spin briefly again before the next sleep
    }
    let waited = match yielding_since {
        None => now_ticks().wrapping_sub(start),
        Some((spun, cpu_before)) => {
            spun.saturating_add(ns_to_ticks(thread_cpu_ns().saturating_sub(cpu_before)))
        }
    };
    thread_counter().record(waited.max(1));
}

/// Whether the calling thread runs under a real-time policy.
fn is_real_time() -> bool {
    // SAFETY: sched_getscheduler(0) reads the caller's policy.
    let policy = unsafe { libc::sched_getscheduler(0) } & !libc::SCHED_RESET_ON_FORK;
    policy == libc::SCHED_FIFO || policy == libc::SCHED_RR
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

    #[test]
    fn reads_the_cpu_clock_of_a_live_thread_and_not_of_a_dead_one() {
        let me = crate::registry::current_tid();
        assert!(cpu_ns_of(me).is_some());
        let dead = std::thread::spawn(crate::registry::current_tid)
            .join()
            .unwrap();
        // The tid is gone once joined (reuse within this instant is not expected).
        assert!(cpu_ns_of(dead).is_none());
    }
}
