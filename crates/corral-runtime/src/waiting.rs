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
//!
//! A waiter of a parking algorithm (futex, the default, and adaptive)
//! spins first only where [`corral_policy::waiting`] says it pays: as the
//! lock's first waiter, while the holder named in the lock runs on a CPU
//! (the on-CPU table, [`crate::oncpu`]) or, blind, on a budget learned per
//! lock, never longer than a sleep and wake-up cost, and not on a lock
//! that cycles faster than its cache line moves. Then it sleeps as the
//! algorithm does.

use core::sync::atomic::{AtomicU16, AtomicU32, AtomicU64, Ordering};

use corral_locks::wait::{now_ticks, record_wait, Waiting};
use corral_locks::wake_cost::wake_ticks;
use corral_locks::RawLock;
use corral_policy::waiting::{
    learn, measured_cycle, probe, smoothed, spins_at_all, wants_handoff, LockMemory, LockView,
    ParkReason, Probe, SpinLimits, WaitOutcome,
};

/// The clock reads this module once defined, kept at their old paths.
pub use corral_locks::sys::clock::{monotonic_ns, thread_cpu_ns, thread_cpu_ns_of as cpu_ns_of};

use crate::oncpu::{holder_state, HolderState};
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

/// What a waiter of a parking lock reads besides taking the lock: its
/// word, who holds it (the tid its holder stored, 0 when none), what its
/// earlier waits taught and how often it was released (see
/// [`corral_policy::waiting`]).
#[derive(Clone, Copy, Debug)]
pub struct HolderWords<'a> {
    /// The lock word, 2 while waiters may sleep on it (Drepper's, glibc's).
    pub word: &'a AtomicU32,
    /// The holder's tid.
    pub owner: &'a AtomicU32,
    /// The lock's [`LockMemory`] bits and [`HANDOFF_WANTED`].
    pub memory: &'a AtomicU16,
    /// Releases of the lock, counted by its holders (wrapping).
    pub releases: &'a AtomicU16,
}

/// A spinner's request in a parking lock's memory word: the holder lets
/// it in at the next release ([`let_spinner_in`]).
pub const HANDOFF_WANTED: u16 = 1 << 15;

/// The smoothed ticks of one probe of a held lock (a round trip of its
/// cache line), measured by spinners.
static PROBE_TICKS: AtomicU64 = AtomicU64::new(0);

/// Waiters of parking locks spinning now, in the whole process.
static SPINNERS: AtomicU32 = AtomicU32::new(0);

/// CPUs the process may use, as `corral run` said ([`set_cpus`]); 0 if
/// it did not.
static CPUS: AtomicU32 = AtomicU32::new(0);

/// Sets the CPUs the process may use (at load, from `corral run`).
pub fn set_cpus(n: u32) {
    CPUS.store(n, Ordering::Relaxed); // Relaxed: set before any wait.
}

/// Acquires `lock` after a failed first attempt, recording the wait into
/// the calling thread's counter. `parks`: the algorithm sleeps by itself.
/// `parking`: the lock's parking words, where it has them; its releaser
/// calls [`Parking::before_release`]. A lock without them (a
/// `pthread_spinlock_t` is one int) backs off in sleeps instead.
/// `holder`: a parking lock's holder words, where it has them: its waiter
/// spins only while the holder runs (`spin_on_holder`). Returns what the
/// wait did, where it is counted.
#[cold]
#[inline(never)]
pub fn lock_contended<L: RawLock>(
    lock: &L,
    parks: bool,
    parking: Option<&Parking>,
    holder: Option<HolderWords<'_>>,
) -> Option<WaitOutcome> {
    let managed = is_managed();
    if parks {
        let waiting = Waiting::begin();
        let mut outcome = None;
        if let Some(h) = holder {
            // Relaxed: a hint.
            let memory = LockMemory::from_bits(h.memory.load(Ordering::Relaxed));
            if !spins_at_all(memory) {
                // It takes the lock itself, sleeping.
                let slept = sleep_measuring(lock, h, memory);
                waiting.end();
                return Some(slept);
            }
            outcome = Some(spin_on_holder(lock, h, memory));
        }
        if outcome != Some(WaitOutcome::SpunToHandoff) {
            // `lock`, not a jump to the algorithm's sleeping path: a parking
            // lock's `lock` tries the fast path once more, tens of
            // nanoseconds after the failed attempt, and a short critical
            // section has often ended by then, leaving the word
            // uncontended and the release free of a wake-up. Without that
            // attempt (glibc's order: mark the word contended, then sleep)
            // sysbench mutex under policy none fell from 1.19-1.30x glibc's
            // throughput to 0.76-0.88x at 2-16 threads (one run of 10
            // interleaved rounds on 2 CPUs).
            lock.lock();
        }
        waiting.end();
        return outcome;
    }
    if !managed && spins_unbounded() {
        record_wait(|| lock.lock());
        return None;
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
    None
}

/// Spins on a held parking lock while that pays: while its holder runs, up
/// to what a park and wake-up cost, and where the holder's state is
/// unknown, up to the lock's learned budget and never with every CPU
/// taken by spinners ([`corral_policy::waiting::probe`]). Takes the lock
/// if it comes free meanwhile ([`WaitOutcome::SpunToHandoff`]); otherwise
/// says why the caller must sleep.
#[inline(never)]
fn spin_on_holder<L: RawLock>(lock: &L, words: HolderWords<'_>, memory: LockMemory) -> WaitOutcome {
    let start = now_ticks();
    let limits = SpinLimits {
        park_cost: wake_ticks(),
        memory,
        // Relaxed: a count that only steers spinning.
        spinners: SPINNERS.fetch_add(1, Ordering::Relaxed) + 1,
        cpus: CPUS.load(Ordering::Relaxed),
        probe_cost: PROBE_TICKS.load(Ordering::Relaxed),
    };
    // Relaxed: a count that only steers spinning.
    let released_before = words.releases.load(Ordering::Relaxed);
    let mut spun = false;
    let mut asked = false;
    let mut probes = 0u64;
    let mut view = LockView {
        holder: HolderState::Unknown,
        sleepers: false,
        releases: 0,
    };
    let outcome = loop {
        probes += 1;
        let won = !lock.is_locked() && lock.try_lock();
        // Relaxed throughout: hints about the lock, never guards for data.
        view.releases = u32::from(
            words
                .releases
                .load(Ordering::Relaxed)
                .wrapping_sub(released_before),
        );
        if won {
            break WaitOutcome::SpunToHandoff;
        }
        view.holder = match words.owner.load(Ordering::Relaxed) {
            // Held, holder not named yet: it is between its acquiring
            // instruction and its naming store, so it runs.
            0 => HolderState::Running,
            tid => holder_state(tid),
        };
        // 2 is "held, sleepers may wait" in the futex word's protocol.
        view.sleepers = words.word.load(Ordering::Relaxed) == 2;
        let so_far = now_ticks().wrapping_sub(start);
        match probe(view, so_far, &limits) {
            Probe::Spin => {
                spun = true;
                if !asked && wants_handoff(view, so_far, &limits) {
                    // Relaxed: read by the holder before its release.
                    words.memory.fetch_or(HANDOFF_WANTED, Ordering::Relaxed);
                    asked = true;
                }
                core::hint::spin_loop();
            }
            Probe::Park(why) if spun => break WaitOutcome::SpunThenParked(why),
            Probe::Park(why) => break WaitOutcome::ParkedAtOnce(why),
        }
    };
    SPINNERS.fetch_sub(1, Ordering::Relaxed);
    let spun_ticks = now_ticks().wrapping_sub(start);
    let cycle = measured_cycle(view, spun_ticks, limits.probe_cost);
    remember(
        words,
        memory,
        learn(memory, outcome, view.holder, cycle),
        asked,
    );
    if spun {
        // Relaxed: a statistic; weight 1/8 per wait.
        let mean = PROBE_TICKS.load(Ordering::Relaxed);
        PROBE_TICKS.store(smoothed(mean, spun_ticks / probes), Ordering::Relaxed);
    }
    outcome
}

/// Sleeps on a lock that cycles too fast for a spinner until it holds it,
/// and measures its cycle meanwhile: the releases slept through over the time asleep. The
/// holder keeps its line; the lock's memory learns whether the cycle has
/// grown (then the next waiter spins again).
#[cold]
fn sleep_measuring<L: RawLock>(
    lock: &L,
    words: HolderWords<'_>,
    memory: LockMemory,
) -> WaitOutcome {
    let start = now_ticks();
    // Relaxed: a count that only steers spinning; read again under the lock.
    let before = words.releases.load(Ordering::Relaxed);
    lock.lock();
    let view = LockView {
        holder: HolderState::Unknown,
        sleepers: false,
        releases: u32::from(words.releases.load(Ordering::Relaxed).wrapping_sub(before)),
    };
    let probe_cost = PROBE_TICKS.load(Ordering::Relaxed); // Relaxed: a statistic.
    let cycle = measured_cycle(view, now_ticks().wrapping_sub(start), probe_cost);
    let outcome = WaitOutcome::ParkedAtOnce(ParkReason::ShortCycle);
    remember(
        words,
        memory,
        learn(memory, outcome, HolderState::Unknown, cycle),
        false,
    );
    outcome
}

/// Stores the lock's memory where it changed, or where this waiter's
/// hand-off request must be cleared.
#[inline]
fn remember(words: HolderWords<'_>, old: LockMemory, new: LockMemory, asked: bool) {
    if new != old || asked {
        // Relaxed: a hint; clears the request (HANDOFF_WANTED) too.
        words.memory.store(new.to_bits(), Ordering::Relaxed);
    }
}

/// Call right after releasing a parking lock whose damping word had
/// [`HANDOFF_WANTED`] before the release: waits about two of the
/// spinner's probes, touching nothing of the lock (which the spinner may
/// take, release and free meanwhile), so that the spinner, not this
/// thread coming back, takes it.
#[cold]
#[inline(never)]
pub fn let_spinner_in() {
    let probe = PROBE_TICKS.load(Ordering::Relaxed).max(1); // Relaxed: a statistic.
                                                            // Bounded by a park's cost whatever the statistic says.
    let until = now_ticks().saturating_add((2 * probe).min(wake_ticks()));
    while now_ticks() < until {
        core::hint::spin_loop();
    }
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
                            lock_contended(&*lock, i % 2 == 0, None, None);
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
        lock_contended(&lock, true, None, None);
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
