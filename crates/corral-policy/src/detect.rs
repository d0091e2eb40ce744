//! Detection: which threads are lock intensive, when they cool down, and
//! which locks are hot.
//!
//! A thread's lock-wait share over one slice is the time it spent waiting to
//! acquire locks divided by the slice's length (paper 1, Cui et al. 2013,
//! Sec. 3.2: sum_j W_ij / D_i). A share above [`DetectParams::qualify_share`]
//! marks the thread lock intensive. Where slices are counted in CPU time
//! but waits in wall time (user-space waiters sleep), the qualifying share
//! is over the slice's wall span: see [`qualifies`]. Paper 2 (Cui et al., lock-aware thread
//! migration) adds the way back: a thread whose share stays below
//! [`DetectParams::release_share`] for [`DetectParams::release_after_slices`]
//! consecutive slices returns to the general cores; and it migrates only the
//! waiters of hot locks ([`LockHotness`]).

use crate::Nanos;
use serde::Serialize;

/// Thresholds of the per-slice classification.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct DetectParams {
    /// A slice whose lock-wait share exceeds this qualifies the thread as lock
    /// intensive. Paper 1, Sec. 3.2: the empirical 10%.
    pub qualify_share: f64,
    /// A slice whose share is below this counts as quiet. Paper 2 gives no
    /// value; half of `qualify_share` leaves a hysteresis band so a thread
    /// hovering near 10% does not bounce between core sets.
    pub release_share: f64,
    /// Consecutive quiet slices before a lock-intensive thread goes back.
    /// Paper 2 gives no value; three slices ride out one lucky slice without
    /// keeping a cooled thread on the SSC for long.
    pub release_after_slices: u32,
    /// What one contended acquisition costs beyond the wait itself where
    /// waiters sleep (a futex sleep and wake, two context switches: about
    /// 2 us). Confinement can save only that, so a slice qualifies only if
    /// its contended acquisitions cost over `qualify_share` of it too: a
    /// thread that waits long but seldom (git grep's workers: 2-20 waits
    /// per ms of CPU, against sysbench mutex's 350-1,300) sleeps rather
    /// than wastes, and confining it only takes cores from its parallel
    /// part. 0: no such test (kernel spin locks, where the wait is the
    /// waste; paper 1).
    pub handoff_ns: Nanos,
    /// A slice in which the thread called `sched_yield` at least this many
    /// times per lock attempt does not qualify, and counts as quiet on the
    /// SSC. Confinement pays because one thread's quantum on a confined
    /// core runs many critical sections with nobody to contend; a thread
    /// that yields about as often as it locks gives that core away inside
    /// or beside its critical sections, and each yield hands the core to a
    /// waiter that finds the lock taken: a convoy (`sysbench threads
    /// --thread-locks=1` yields once per lock, inside it, and lost 5-25%
    /// confined). Which side of the unlock a yield falls on is not known:
    /// telling would cost every unlock a thread-local write. 0: no such
    /// test (kernel locks, the simulator's workloads: nothing yields).
    pub yields_per_attempt: f64,
}

impl Default for DetectParams {
    fn default() -> Self {
        DetectParams {
            qualify_share: 0.10,
            release_share: 0.05,
            release_after_slices: 3,
            handoff_ns: 0,
            yields_per_attempt: 0.0,
        }
    }
}

/// The lock-wait share of one slice, clamped to `[0, 1]`; an empty slice has
/// share 0.
#[inline]
pub fn wait_share(lock_wait: Nanos, slice_len: Nanos) -> f64 {
    if slice_len == 0 {
        return 0.0;
    }
    (lock_wait as f64 / slice_len as f64).min(1.0)
}

/// Wall span, in slices, after which a thread's accounting window closes
/// however little CPU time it held.
pub const WALL_SLICES: u64 = 4;

/// Is a thread's accounting window over: `slice_ns` of CPU time (paper 1's
/// slice), or, for a thread not yet lock intensive (`general`),
/// [`WALL_SLICES`] slices of wall time? A waiter asleep on a lock runs
/// little: with 64 such threads on 2 cores, a CPU slice each took 126 ms of
/// wall time to come, and qualification waited for it; over the wall span
/// the sleeper's share is as clear after a few milliseconds. A placed
/// thread keeps CPU slices: its votes and quiet streak are paper 1's, and
/// on a crowded SSC a thread waiting for the CPU records no lock wait, so
/// wall windows would make it look quiet.
#[inline]
pub fn window_over(slice_ns: Nanos, cpu_len: Nanos, wall_len: Nanos, general: bool) -> bool {
    cpu_len >= slice_ns || general && wall_len >= WALL_SLICES.saturating_mul(slice_ns)
}

/// The wait share [`qualifies`] tests: over [`active_span`].
#[inline]
pub fn span_share(lock_wait: Nanos, slice_len: Nanos, wall_len: Nanos) -> f64 {
    wait_share(lock_wait, active_span(lock_wait, slice_len, wall_len))
}

/// The time a thread's wait share is over: its CPU time, or, where the
/// window has a wall span (`wall_len`, 0 where the two are one, as in
/// on-CPU slices), the time it ran or waited for a lock, at most that span.
///
/// Not the whole span, which also holds time asleep elsewhere and time
/// ready to run on a crowded core. sysbench mutex at 64 threads on 2 cores:
/// each thread's first window ran 4 ms, waited 0.8 ms in 5,300 contended
/// acquisitions, and spanned 45 ms, most of them at sysbench's start
/// barrier: 2% of the span, so its threads qualified over 60 ms, one every
/// 2 ms, and the half-confined rounds meanwhile looked no better than every
/// core. A thread that sleeps long and seldom waits for a lock (git grep's
/// producer: 2-20 waits per ms of CPU) is kept out by [`qualifies`]'s
/// hand-off test, which is over CPU time.
#[inline]
pub fn active_span(lock_wait: Nanos, slice_len: Nanos, wall_len: Nanos) -> Nanos {
    if wall_len == 0 {
        return slice_len;
    }
    slice_len.max(wall_len.min(slice_len.saturating_add(lock_wait)))
}

/// Does this slice, with `waits` contended acquisitions, qualify its
/// thread as lock intensive? (Paper 1, Alg. 3 line 5: `acc_lock_time > T x
/// slice_len`; with [`DetectParams::handoff_ns`], also `waits x handoff >
/// T x slice_len`.)
///
/// `slice_len` is the slice's CPU time, `wall_len` the wall-clock time it
/// spanned (0 where the two are one, as in on-CPU slices); the share is
/// over [`active_span`]. The hand-off cost stays over CPU time: it is CPU
/// that confinement saves. A window without CPU time qualifies only over
/// a wall span: one its thread spent asleep on a lock (a wait counted
/// while under way) and began in it.
#[inline]
pub fn qualifies(
    params: &DetectParams,
    lock_wait: Nanos,
    waits: u64,
    slice_len: Nanos,
    wall_len: Nanos,
) -> bool {
    let span = active_span(lock_wait, slice_len, wall_len);
    (slice_len > 0 || wall_len > 0)
        && lock_wait as f64 > params.qualify_share * span as f64
        && handoffs_cost_over(params, waits, slice_len as f64)
}

/// Do `waits` hand-offs cost over [`DetectParams::qualify_share`] of
/// `cpu_ns` of CPU time? Always, without a hand-off cost.
#[inline]
fn handoffs_cost_over(params: &DetectParams, waits: u64, cpu_ns: f64) -> bool {
    params.handoff_ns == 0
        || waits as f64 * params.handoff_ns as f64 > params.qualify_share * cpu_ns
}

/// Could waits like these qualify a thread? `waits` contended
/// acquisitions seen over `wall_len` on `cpus` CPUs cost hand-offs
/// ([`DetectParams::handoff_ns`]) over [`DetectParams::qualify_share`] of
/// the CPU time there was: the whole-program form of [`qualifies`]'s
/// hand-off test, for a driver to tell contention that may need it soon
/// (sysbench mutex: thousands of waits a millisecond) from waits that
/// never will (git grep: tens). Without a hand-off cost any wait counts.
#[inline]
pub fn handoffs_could_qualify(
    params: &DetectParams,
    waits: u64,
    wall_len: Nanos,
    cpus: u32,
) -> bool {
    waits > 0 && handoffs_cost_over(params, waits, wall_len as f64 * f64::from(cpus))
}

/// The share of every core's time that `waits` contended acquisitions
/// over `wall_len` on `cpus` CPUs cost in hand-offs
/// ([`DetectParams::handoff_ns`]): at most what confining their threads
/// could save. `None` without a hand-off cost.
#[inline]
pub fn handoff_share(params: &DetectParams, waits: u64, wall_len: Nanos, cpus: u32) -> Option<f64> {
    (params.handoff_ns > 0).then(|| {
        let time = wall_len as f64 * f64::from(cpus.max(1));
        waits as f64 * params.handoff_ns as f64 / time.max(1.0)
    })
}

/// Should a thread that waited `wait_ns` in `waits` contended acquisitions
/// over the `span_ns` since its driver last looked call it to look now? A
/// driver that sleeps while nothing qualifies (a monitor between quiet
/// rounds) is called once the span reaches `round_ns`, the waits are over
/// [`DetectParams::qualify_share`] of such a round, and their hand-offs
/// would cost over that share of it too ([`qualifies`]'s two tests, on one
/// round): contention that starts is seen within `round_ns`, and waits that
/// could never qualify a thread (long but few: git grep's) call nobody.
#[inline]
pub fn waits_call_for_a_look(
    params: &DetectParams,
    wait_ns: Nanos,
    waits: u64,
    span_ns: Nanos,
    round_ns: Nanos,
) -> bool {
    span_ns >= round_ns
        && wait_ns as f64 > params.qualify_share * round_ns as f64
        && handoffs_cost_over(params, waits, round_ns as f64)
}

/// Does a slice with `attempts` lock attempts and `yields` calls to
/// `sched_yield` give its core away ([`DetectParams::yields_per_attempt`])?
#[inline]
pub fn gives_core_away(params: &DetectParams, yields: u64, attempts: u64) -> bool {
    params.yields_per_attempt > 0.0
        && yields > 0
        && yields as f64 >= params.yields_per_attempt * attempts as f64
}

/// Is this slice quiet (share below [`DetectParams::release_share`])?
#[inline]
pub fn is_quiet(params: &DetectParams, lock_wait: Nanos, slice_len: Nanos) -> bool {
    (lock_wait as f64) < params.release_share * slice_len as f64
}

/// Per-thread memory of consecutive quiet slices (paper 2's migrate-back),
/// with corral's exponential backoff of repeated releases.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct QuietStreak {
    /// Consecutive quiet slices so far (on the SSC), or consecutive
    /// non-qualifying slices (on the general cores, for the backoff decay).
    pub slices: u32,
    /// Backoff level: a release needs `release_after_slices << backoff`
    /// quiet slices. 0 (the default) is paper 2's rule.
    pub backoff: u32,
}

impl QuietStreak {
    /// Quiet slices the next release needs.
    #[inline]
    pub fn needed(&self, params: &DetectParams) -> u32 {
        params
            .release_after_slices
            .checked_shl(self.backoff)
            .unwrap_or(u32::MAX)
    }

    /// Records whether one slice of a lock-intensive thread was quiet; true
    /// once [`Self::needed`] consecutive slices were (the caller then sends
    /// the thread back and calls [`Self::released`]). 0 slices never
    /// releases.
    #[inline]
    pub fn observe(&mut self, params: &DetectParams, quiet: bool) -> bool {
        self.slices = if quiet {
            self.slices.saturating_add(1)
        } else {
            0
        };
        params.release_after_slices > 0 && self.slices >= self.needed(params)
    }

    /// The thread was sent back: the next release waits twice as long (up to
    /// `2^max_backoff` times), until a long general stay forgives it.
    #[cold]
    pub fn released(&mut self, max_backoff: u32) {
        self.slices = 0;
        self.backoff = (self.backoff + 1).min(max_backoff);
    }

    /// One slice of a general thread that did not qualify: after as many as
    /// a release needs, the backoff drops a level (it stayed away long
    /// enough for the lock to have really cooled).
    #[inline]
    pub fn observe_general(&mut self, params: &DetectParams) {
        if self.backoff == 0 {
            return;
        }
        self.slices = self.slices.saturating_add(1);
        if self.slices >= self.needed(params) {
            self.backoff -= 1;
            self.slices = 0;
        }
    }

    /// Forgets the streak (after a migration either way); keeps the backoff.
    #[inline]
    pub fn reset(&mut self) {
        self.slices = 0;
    }
}

/// Parameters of per-lock hotness.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct HotnessParams {
    /// A lock is hot when its decayed waiting is at least this share of all
    /// decayed lock waiting. Paper 2 names a threshold without a value; 10%
    /// mirrors the thread threshold of paper 1.
    pub hot_share: f64,
    /// Below this much decayed waiting in total, nothing is hot: a quiet
    /// program has no hot lock however its few waits are spread. 1 ms.
    pub min_total_wait: Nanos,
    /// Each [`LockHotness::decay`] multiplies every total by
    /// `1 - 1/2^decay_shift`; 1 halves per period (an exponential window of
    /// about two periods).
    pub decay_shift: u32,
}

impl Default for HotnessParams {
    fn default() -> Self {
        HotnessParams {
            hot_share: 0.10,
            min_total_wait: 1_000_000,
            decay_shift: 1,
        }
    }
}

/// One tracked lock.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct LockHeat {
    /// The driver's lock id (e.g. its address); 0 marks a free slot.
    pub lock: u64,
    /// Decayed nanoseconds spent waiting for this lock.
    pub wait: Nanos,
}

/// Per-lock hotness: a decayed wait total per lock id in a fixed-capacity
/// table (paper 2: migrate only the waiters of locks whose hotness exceeds a
/// threshold, and send them back when the lock cools).
///
/// The table never grows after construction. When it is full, a new lock
/// replaces the coldest entry if it has waited longer than that entry.
/// Single owner (`&mut`): the driver aggregates waits (e.g. in its monitor)
/// and asks [`Self::is_hot`] when deciding whom to migrate.
#[derive(Clone, Debug)]
pub struct LockHotness {
    params: HotnessParams,
    slots: Box<[LockHeat]>,
    total: Nanos,
}

impl LockHotness {
    /// A table tracking at most `capacity` locks (at least one).
    pub fn new(params: HotnessParams, capacity: usize) -> Self {
        LockHotness {
            params,
            slots: vec![LockHeat::default(); capacity.max(1)].into_boxed_slice(),
            total: 0,
        }
    }

    /// Adds `wait` nanoseconds of waiting for `lock` (lock id 0 is mapped to
    /// 1, since 0 marks a free slot).
    #[inline]
    pub fn record_wait(&mut self, lock: u64, wait: Nanos) {
        let lock = lock.max(1);
        self.total = self.total.saturating_add(wait);
        for slot in self.slots.iter_mut() {
            if slot.lock == lock {
                slot.wait = slot.wait.saturating_add(wait);
                return;
            }
            if slot.lock == 0 {
                *slot = LockHeat { lock, wait };
                return;
            }
        }
        self.replace_coldest(lock, wait);
    }

    #[cold]
    fn replace_coldest(&mut self, lock: u64, wait: Nanos) {
        let (index, coldest) = self
            .slots
            .iter()
            .enumerate()
            .min_by_key(|(_, s)| s.wait)
            .map(|(i, s)| (i, *s))
            .expect("capacity >= 1");
        if wait > coldest.wait {
            self.slots[index] = LockHeat { lock, wait };
        }
    }

    /// Ages every total by one period (see [`HotnessParams::decay_shift`]).
    pub fn decay(&mut self) {
        let shift = self.params.decay_shift.clamp(1, 63);
        for slot in self.slots.iter_mut().filter(|s| s.lock != 0) {
            slot.wait -= slot.wait >> shift;
            if slot.wait == 0 {
                *slot = LockHeat::default();
            }
        }
        self.total -= self.total >> shift;
    }

    /// Decayed waiting for `lock`, 0 if untracked.
    pub fn heat(&self, lock: u64) -> Nanos {
        let lock = lock.max(1);
        self.slots
            .iter()
            .find(|s| s.lock == lock)
            .map_or(0, |s| s.wait)
    }

    /// Decayed waiting for all locks, including evicted ones.
    pub fn total_wait(&self) -> Nanos {
        self.total
    }

    /// Is `lock` hot: at least `hot_share` of all recent lock waiting, with
    /// enough waiting overall to mean anything?
    #[inline]
    pub fn is_hot(&self, lock: u64) -> bool {
        self.total >= self.params.min_total_wait
            && self.heat(lock) as f64 >= self.params.hot_share * self.total as f64
    }

    /// The tracked locks (free slots have lock id 0).
    pub fn entries(&self) -> &[LockHeat] {
        &self.slots
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn share_and_qualification_boundary() {
        let p = DetectParams::default();
        assert_eq!(wait_share(5, 0), 0.0);
        assert!((wait_share(25, 100) - 0.25).abs() < 1e-12);
        assert!(
            !qualifies(&p, 10, 0, 100, 0),
            "exactly T does not qualify (strict >)"
        );
        assert!(qualifies(&p, 11, 0, 100, 0));
        assert!((span_share(11, 100, 0) - 0.11).abs() < 1e-12);
        // Ran 100, waited 30 for the lock, off the CPU for other reasons
        // the rest of a span of 1,000: a share of 30 / 130.
        assert!((span_share(30, 100, 1_000) - 30.0 / 130.0).abs() < 1e-12);
        assert!(qualifies(&p, 30, 0, 100, 1_000));
        // The span bounds it: waits read apart from the span cannot push
        // the share over the wait / span.
        assert!((span_share(50, 100, 120) - 50.0 / 120.0).abs() < 1e-12);
        assert!(span_share(500, 100, 120) <= 1.0);
        assert!(!qualifies(&p, 11, 0, 100, 200), "11 of 111");
        assert!(is_quiet(&p, 4, 100));
        assert!(!is_quiet(&p, 5, 100));
    }

    #[test]
    fn streak_releases_after_k_and_resets_on_a_busy_slice() {
        let p = DetectParams::default();
        let mut streak = QuietStreak::default();
        assert!(!streak.observe(&p, true));
        assert!(!streak.observe(&p, true));
        assert!(!streak.observe(&p, false), "a busy slice breaks the streak");
        assert!(!streak.observe(&p, true));
        assert!(!streak.observe(&p, true));
        assert!(streak.observe(&p, true));
    }

    #[test]
    fn a_sleeping_driver_is_called_by_waits_that_could_qualify_and_no_sooner_than_its_rounds() {
        let p = DetectParams::default();
        let ms = 1_000_000;
        // Waiting most of a round: called once the span is a round long.
        assert!(waits_call_for_a_look(&p, 3 * ms, 1, 4 * ms, 4 * ms));
        assert!(!waits_call_for_a_look(&p, 3 * ms, 1, 3 * ms, 4 * ms));
        // A long doze: a round's share of waiting calls at once.
        assert!(waits_call_for_a_look(&p, ms, 1, 200 * ms, 4 * ms));
        // Waits under a round's share call nobody, however long the doze.
        assert!(!waits_call_for_a_look(&p, ms / 4, 1, 1000 * ms, 4 * ms));
        // With a hand-off cost (user space), few waits call nobody: 2 us
        // each must pass 10% of a 4 ms round, so over 200.
        let user = DetectParams {
            handoff_ns: 2_000,
            ..p
        };
        assert!(!waits_call_for_a_look(&user, 3 * ms, 200, 4 * ms, 4 * ms));
        assert!(waits_call_for_a_look(&user, 3 * ms, 201, 4 * ms, 4 * ms));
    }
}
