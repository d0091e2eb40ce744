//! How long a lock waiter spins before it sleeps: spin exactly while the
//! holder runs on a CPU, and no longer than a sleep and wake-up cost.
//!
//! FlexGuard (Laforet et al., SOSP 2025) spins while the holder is
//! on a CPU, told by a BPF program on `sched_switch`. Its waiters go on
//! spinning behind a holder that blocks in the kernel, and behind one that
//! runs a long critical section. Here the holder's state says when to stop
//! at once (it is off its CPU: preempted, asleep, blocked or yielding), and
//! the cost of a park says when spinning stops paying whatever the holder
//! does: a waiter that spins no longer than a park and wake-up cost never
//! spends more than twice what parking at once would (Karlin et al., SOSP
//! 1991, competitive spinning). Where the holder's state is unknown (no
//! BPF, or the thread not seen yet) a per-lock budget learned from its
//! waits stands in, and no waiter spins while the spinners would fill
//! every CPU but the holder's.
//!
//! Only the lock's first waiter spins (no waiter asleep on it), as Linux's
//! mutexes let only the head of their queue spin on the owner. And a
//! spinner costs the holder a move of the lock's cache line at every
//! acquisition it makes while the spinner looks: where the lock is
//! released and taken again faster than one such move (its cycle, the
//! hold and the gap, under one probe's round trip), a holder that takes
//! it back at once serves more acquisitions alone, and a waiter asleep
//! costs it nothing: the spinner sleeps. Where the cycle is longer, a
//! spinner behind a holder that keeps taking the lock back asks for it
//! ([`wants_handoff`]), trading one line move per hand-off for the
//! wake-ups a sleeper would cost.

/// What the waiter knows of the lock holder's thread.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HolderState {
    /// On a CPU now: its release may come at any moment.
    Running,
    /// Off its CPU: preempted, asleep, blocked in the kernel or yielding.
    OffCpu,
    /// Not known: no on-CPU table, no holder recorded, or the holder's slot
    /// names another thread.
    Unknown,
}

/// Why a waiter stopped spinning and slept.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ParkReason {
    /// The holder is off its CPU: no release can come while it is.
    HolderOffCpu,
    /// The spin budget is spent: a park costs less than spinning on.
    BudgetSpent,
    /// Others wait before this one: waiters asleep on the lock, or
    /// spinners on every CPU but the holder's.
    Crowded,
    /// The lock's cycle is shorter than a probe: a spinner would only move
    /// its line away from a holder that takes it back at once.
    ShortCycle,
}

/// The decision at one probe of a held lock.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Probe {
    /// Keep spinning.
    Spin,
    /// Sleep until the release wakes this waiter.
    Park(ParkReason),
}

/// What one contended acquisition did, counted per lock for the report.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WaitOutcome {
    /// Spun and took the lock at its hand-off, without sleeping.
    SpunToHandoff,
    /// Spun, then slept.
    SpunThenParked(ParkReason),
    /// Slept at once, without spinning.
    ParkedAtOnce(ParkReason),
}

/// The per-lock budget's largest step down: a lock whose waiters keep
/// sleeping after spinning spins 2^-MAX_DAMPING of the cap (1/256).
pub const MAX_DAMPING: u16 = 8;

/// Inputs of one probe, in TSC ticks.
#[derive(Clone, Copy, Debug)]
pub struct SpinLimits {
    /// What a park and wake-up costs here (measured): no waiter spins
    /// longer while the holder runs.
    pub park_cost: u64,
    /// What the lock's earlier waits taught ([`LockMemory`]).
    pub memory: LockMemory,
    /// Waiters spinning now in the process, this one included, and the
    /// CPUs the process may use.
    pub spinners: u32,
    /// See `spinners`.
    pub cpus: u32,
    /// One probe's round trip of the lock's cache line (measured).
    pub probe_cost: u64,
}

/// What the spinner has seen of the lock so far.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LockView {
    /// The holder's state.
    pub holder: HolderState,
    /// Some waiter sleeps on the lock.
    pub sleepers: bool,
    /// Releases of the lock since the spinner began.
    pub releases: u32,
}

impl LockView {
    /// Whether the lock's cycle, as seen so far (spun ticks per release,
    /// `min_releases` at least), is under two probes' round trips: under
    /// one line move for the hold, one for the hand-off.
    #[inline]
    fn short_cycle(&self, spun: u64, probe_cost: u64, min_releases: u32) -> bool {
        self.releases >= min_releases.max(1)
            && spun / u64::from(self.releases) < probe_cost.saturating_mul(2)
    }
}

/// Whether a waiter spins at all: not where the lock's memory says it
/// cycles too fast for a spinner (that waiter then sleeps at once, with
/// [`ParkReason::ShortCycle`], and measures the cycle while it sleeps).
#[inline]
pub fn spins_at_all(memory: LockMemory) -> bool {
    memory.short < SHORT_PARKS
}

impl SpinLimits {
    /// The spin budget when the holder's state is unknown.
    #[inline]
    pub fn blind_budget(&self) -> u64 {
        self.park_cost >> self.memory.damping.min(MAX_DAMPING)
    }
}

/// What a lock's earlier waits taught, in 8 bits of a 16-bit word kept in
/// the lock (the rest is the driver's).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LockMemory {
    /// The budget's damping with the holder's state unknown, 0..=[`MAX_DAMPING`].
    pub damping: u16,
    /// Evidence that the lock cycles faster than two probes (0..=[`MAX_SHORT`]):
    /// from [`SHORT_PARKS`] on, waiters sleep at once and measure the cycle
    /// over their sleep instead (the releases they slept through), which
    /// takes no hand-off from the holder.
    pub short: u16,
}

/// [`LockMemory::short`]'s ceiling.
pub const MAX_SHORT: u16 = 15;
/// [`LockMemory::short`] from which waiters sleep without spinning.
pub const SHORT_PARKS: u16 = 4;

impl LockMemory {
    /// From the low 8 bits of `word`.
    #[inline]
    pub fn from_bits(word: u16) -> Self {
        LockMemory {
            damping: (word & 0xf).min(MAX_DAMPING),
            short: (word >> 4 & 0xf).min(MAX_SHORT),
        }
    }

    /// Into the low 8 bits of a word.
    #[inline]
    pub fn to_bits(self) -> u16 {
        self.damping.min(MAX_DAMPING) | self.short.min(MAX_SHORT) << 4
    }
}

/// Whether a waiter that has spun `spun` ticks keeps spinning.
#[inline]
pub fn probe(view: LockView, spun: u64, limits: &SpinLimits) -> Probe {
    if view.holder == HolderState::OffCpu {
        return Probe::Park(ParkReason::HolderOffCpu);
    }
    // Leave the holder a CPU: a spinner beyond the CPUs waits for one
    // itself, and takes it from the holder or from work.
    if view.sleepers || limits.spinners >= limits.cpus.max(2) {
        return Probe::Park(ParkReason::Crowded);
    }
    if view.short_cycle(spun, limits.probe_cost, 2) {
        return Probe::Park(ParkReason::ShortCycle);
    }
    let budget = match view.holder {
        HolderState::Running => limits.park_cost,
        _ => limits.blind_budget(),
    };
    if spun < budget {
        Probe::Spin
    } else {
        Probe::Park(ParkReason::BudgetSpent)
    }
}

/// Whether a spinner asks the holder to let it in at the next release: it
/// has spun half a park's cost behind a running holder, alone, on a lock
/// whose cycle is longer than a probe, so that holder keeps taking the
/// lock back (it has nothing to do outside its critical section) and the
/// spinner, left to race it, would end up asleep, costing both a wake-up.
/// Linux's mutexes hand off to a waiter that has waited too long alike.
#[inline]
pub fn wants_handoff(view: LockView, spun: u64, limits: &SpinLimits) -> bool {
    view.holder == HolderState::Running
        && !view.sleepers
        && spun >= limits.park_cost / 2
        && !view.short_cycle(spun, limits.probe_cost, 1)
}

/// The lock's memory after one of its waits, `last` being what the waiter
/// last knew of the holder and `short_cycle` what the wait measured of the
/// lock's cycle (`None`: no release seen).
///
/// Damping: a spin that ended at the hand-off makes spinning a little
/// more worth it; one that spent the budget blind (holder unknown), less.
/// Parks told by the holder's state, or by crowding, teach nothing about
/// hold times. Cycles: a short one measured stops spinning on the lock, a
/// long one lets it again.
#[inline]
pub fn learn(
    memory: LockMemory,
    outcome: WaitOutcome,
    last: HolderState,
    short_cycle: Option<bool>,
) -> LockMemory {
    let damping = match (outcome, last) {
        (WaitOutcome::SpunToHandoff, _) => memory.damping.saturating_sub(1),
        (WaitOutcome::SpunThenParked(ParkReason::BudgetSpent), HolderState::Unknown)
        | (WaitOutcome::ParkedAtOnce(ParkReason::BudgetSpent), HolderState::Unknown) => {
            (memory.damping + 1).min(MAX_DAMPING)
        }
        _ => memory.damping.min(MAX_DAMPING),
    };
    let short = match short_cycle {
        Some(true) => MAX_SHORT,
        Some(false) => 0,
        None => memory.short.min(MAX_SHORT),
    };
    LockMemory { damping, short }
}

/// What a wait measured of the lock's cycle: `None` with no release seen.
#[inline]
pub fn measured_cycle(view: LockView, spun: u64, probe_cost: u64) -> Option<bool> {
    (view.releases > 0 && probe_cost > 0).then(|| view.short_cycle(spun, probe_cost, 1))
}

/// An exponentially weighted mean with weight 1/8 for each new sample, as
/// glibc's adaptive mutex keeps its spin count: the park cost as measured.
#[inline]
pub fn smoothed(mean: u64, sample: u64) -> u64 {
    if mean == 0 {
        return sample;
    }
    mean - mean / 8 + sample / 8
}

#[cfg(test)]
mod tests {
    use super::*;

    fn alone(holder: HolderState) -> LockView {
        LockView {
            holder,
            sleepers: false,
            releases: 0,
        }
    }

    fn limits(damping: u16, spinners: u32) -> SpinLimits {
        SpinLimits {
            park_cost: 1_000,
            memory: LockMemory { damping, short: 0 },
            spinners,
            cpus: 4,
            probe_cost: 50,
        }
    }

    #[test]
    fn a_holder_off_its_cpu_parks_the_waiter_at_once() {
        assert_eq!(
            probe(alone(HolderState::OffCpu), 0, &limits(0, 1)),
            Probe::Park(ParkReason::HolderOffCpu)
        );
    }

    #[test]
    fn a_running_holder_is_waited_for_up_to_a_park_cost() {
        let l = limits(MAX_DAMPING, 1);
        // Damping does not apply: the holder runs.
        assert_eq!(probe(alone(HolderState::Running), 999, &l), Probe::Spin);
        assert_eq!(
            probe(alone(HolderState::Running), 1_000, &l),
            Probe::Park(ParkReason::BudgetSpent)
        );
    }

    #[test]
    fn an_unknown_holder_gets_the_learned_budget() {
        let unknown = alone(HolderState::Unknown);
        assert_eq!(probe(unknown, 400, &limits(1, 1)), Probe::Spin);
        assert_eq!(
            probe(unknown, 500, &limits(1, 1)),
            Probe::Park(ParkReason::BudgetSpent)
        );
    }

    #[test]
    fn only_a_first_waiter_spins_and_never_on_every_cpu() {
        for holder in [HolderState::Unknown, HolderState::Running] {
            let crowded = Probe::Park(ParkReason::Crowded);
            assert_eq!(probe(alone(holder), 0, &limits(0, 4)), crowded);
            let behind_sleepers = LockView {
                sleepers: true,
                ..alone(holder)
            };
            assert_eq!(probe(behind_sleepers, 0, &limits(0, 1)), crowded);
        }
    }

    #[test]
    fn a_lock_that_cycles_faster_than_a_probe_is_left_to_its_holder() {
        let fast = LockView {
            releases: 4,
            ..alone(HolderState::Running)
        };
        // 4 releases in 360 ticks: a 90-tick cycle, under two 50-tick probes.
        let l = limits(0, 1);
        assert_eq!(probe(fast, 360, &l), Probe::Park(ParkReason::ShortCycle));
        // One release is no cycle yet; 4 in 400 ticks is a slow one.
        let one = LockView {
            releases: 1,
            ..fast
        };
        assert_eq!(probe(one, 10, &l), Probe::Spin);
        assert_eq!(probe(fast, 400, &l), Probe::Spin);
        assert_eq!(measured_cycle(one, 10, 50), Some(true));
        assert_eq!(measured_cycle(fast, 400, 50), Some(false));
        assert_eq!(measured_cycle(alone(HolderState::Running), 400, 50), None);
    }

    #[test]
    fn a_spinner_asks_for_the_lock_after_half_a_park_behind_a_running_holder() {
        let l = limits(0, 1);
        let running = alone(HolderState::Running);
        assert!(!wants_handoff(running, 499, &l));
        assert!(wants_handoff(running, 500, &l));
        assert!(!wants_handoff(alone(HolderState::Unknown), 900, &l));
        let queued = LockView {
            sleepers: true,
            ..running
        };
        assert!(!wants_handoff(queued, 900, &l));
        let fast = LockView {
            releases: 30,
            ..running
        };
        assert!(!wants_handoff(fast, 900, &l), "a 30-tick cycle");
    }

    #[test]
    fn damping_moves_one_step_per_wait_and_stays_bounded() {
        let parked = WaitOutcome::SpunThenParked(ParkReason::BudgetSpent);
        let blind = HolderState::Unknown;
        let at = |damping| LockMemory { damping, short: 0 };
        let mut m = at(0);
        for _ in 0..20 {
            m = learn(m, parked, blind, None);
        }
        assert_eq!(m.damping, MAX_DAMPING);
        let won = WaitOutcome::SpunToHandoff;
        assert_eq!(learn(m, won, blind, None).damping, MAX_DAMPING - 1);
        let off = WaitOutcome::ParkedAtOnce(ParkReason::HolderOffCpu);
        assert_eq!(learn(at(3), off, HolderState::OffCpu, None).damping, 3);
        assert_eq!(learn(at(0), won, blind, None).damping, 0);
        // A running holder's long critical section says nothing of the
        // budget used where the holder is unknown.
        assert_eq!(learn(at(2), parked, HolderState::Running, None).damping, 2);
        assert_eq!(limits(40, 1).blind_budget(), 1_000 >> MAX_DAMPING);
    }

    #[test]
    fn short_cycles_stop_spinning_until_a_waiter_measures_again() {
        let won = WaitOutcome::SpunToHandoff;
        let running = HolderState::Running;
        let mut m = LockMemory::default();
        assert!(spins_at_all(m));
        m = learn(m, won, running, Some(true));
        assert!(!spins_at_all(m), "{m:?}");
        // Sleeping at once, a waiter that slept through a short cycle
        // keeps it; one that saw a long cycle lets spinning back.
        let skipped = WaitOutcome::ParkedAtOnce(ParkReason::ShortCycle);
        m = learn(m, skipped, HolderState::Unknown, Some(true));
        assert!(!spins_at_all(m), "{m:?}");
        m = learn(m, skipped, HolderState::Unknown, None);
        assert!(!spins_at_all(m), "nothing measured, nothing changes");
        m = learn(m, skipped, HolderState::Unknown, Some(false));
        assert!(spins_at_all(m), "{m:?}");
        let bits = LockMemory {
            damping: 5,
            short: 7,
        }
        .to_bits();
        assert_eq!(
            LockMemory::from_bits(bits | 0x8000),
            LockMemory {
                damping: 5,
                short: 7
            }
        );
    }

    #[test]
    fn the_smoothed_cost_moves_an_eighth_of_the_way() {
        assert_eq!(smoothed(0, 800), 800);
        assert_eq!(smoothed(800, 1_600), 900);
        assert_eq!(smoothed(800, 0), 700);
    }
}
