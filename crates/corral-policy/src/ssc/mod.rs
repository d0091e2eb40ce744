//! The Special Set of Cores (SSC) controller: paper 1 (Cui et al., "Lock-
//! Contention-Aware Scheduler", TACO 2013), Algorithms 2-4 and Sec. 3.5, with
//! paper 2's migrate-back and growth on long run queues.
//!
//! Concurrency: every method takes `&self` and the controller is `Sync`, so a
//! runtime can share one controller among all its threads, as the kernel
//! shares `special_core_bound`. The bound, the lock-intensive count and the
//! timer are atomics; the votes and the search sit behind a mutex that is
//! only ever *tried* (`try_lock`), as paper 1 guards them with
//! `spin_trylock(voting_lock)`: a vote that finds it taken is dropped and the
//! determination is left to whoever holds it. A single-threaded driver (the
//! simulator) never sees it taken, so its runs are deterministic.
//! Per-thread state ([`ThreadPolicyState`]) is owned by the driver and
//! passed in `&mut`. Nothing here allocates after construction.
//!
//! Driver protocol, per thread: [`SscController::register_thread`] at
//! creation; [`SscController::on_lock_attempt`] before acquiring a lock (move
//! the thread if it returns a core; a driver that tracks lock hotness, see
//! `detect::LockHotness`, may call it only for hot locks);
//! [`SscController::begin_slice`] when a slice (or accounting window) starts
//! and [`SscController::on_slice_end`] when it ends;
//! [`SscController::unregister_thread`] at exit. Optionally,
//! [`SscController::observe_progress`] with lock acquisitions completed by
//! the program's threads, so the search compares measured throughput.
//! Globally, from a monitor:
//! [`SscController::tick`] for the timer and [`SscController::on_ssc_load`]
//! for growth on load. Where a thread runs is [`SscController::placement`]
//! (or [`SscController::place_from_monitor`] for a driver that places from a
//! monitor), on the CPUs [`SscController::cores_of`] names: the SSC is
//! `order()[..bound()]`, everything else the general set (paper 1, Sec. 3.4:
//! balance the two apart).

mod memory;
mod params;
mod search;
mod unconfined;

pub use memory::{program_key, ClassMemory};

/// A thread's classification key not read yet
/// ([`SscController::keys_matter`]).
pub const UNKNOWN_KEY: u64 = 0;
pub use params::{
    Decision, DecisionKind, SscParams, PAPER_TSC_HZ, PAPER_VOTE_TICKS_PER_CORE, USER_HANDOFF_NS,
};
pub use search::{Phase, Reference, Refine, SearchState, UnconfinedProbe};

use crate::detect::{gives_core_away, is_quiet, qualifies, QuietStreak};
use crate::placement::Placement;
use crate::{CoreId, Nanos};
use search::{BoundMove, Round};
use serde::Serialize;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard, TryLockError};

mod controller;

/// Paper 1's `is_mig`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum MigState {
    /// Not lock intensive (`is_mig == 0`); runs on the general cores.
    General,
    /// Lock intensive; moves to the SSC at its next lock attempt.
    QualifyToMigrate,
    /// Lock intensive and counted; lives on the SSC.
    HaveMigrated,
}

impl MigState {
    /// Classified lock intensive (qualified or migrated).
    #[inline]
    pub fn is_lock_intensive(self) -> bool {
        self != MigState::General
    }
}

/// What the controller keeps per thread (paper 1's task_struct fields). The
/// driver owns it and passes it to every call for that thread.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct ThreadPolicyState {
    /// Classification.
    pub is_mig: MigState,
    /// The bound when the thread was last placed (`curr->special_core_bound`).
    pub placed_bound: u32,
    /// The bound when its current slice began (`curr->record_bound`); 0 when
    /// the thread moved into the SSC during the slice (per-thread warm-up).
    pub record_bound: u32,
    /// When its current slice began.
    pub slice_begin: Nanos,
    /// Consecutive quiet slices (migrate-back).
    pub quiet: QuietStreak,
    /// The driver's hash of the thread's program (or program and lock), the
    /// key of the classification memory.
    pub program_key: u64,
    /// Its last slice ran in a real-time class: never placed (see
    /// [`SliceObs::realtime`]).
    pub realtime: bool,
    /// Its last verdict of [`crate::detect::gives_core_away`], from a slice
    /// with attempts enough to judge ([`YIELD_VERDICT_MIN_ATTEMPTS`]);
    /// `None` before such a slice. In a program with threads judged to
    /// yield, a thread without a verdict does not qualify yet.
    pub yields_core: Option<bool>,
}

/// Lock attempts a slice needs for its yields to change the thread's
/// verdict: a thread that spent its slice asleep behind the lock made one
/// attempt and no yield yet, which says nothing (64 sysbench threads that
/// yield inside every lock qualified on such slices).
pub const YIELD_VERDICT_MIN_ATTEMPTS: u64 = 8;

impl ThreadPolicyState {
    /// The state of a thread the controller has not registered yet (a free
    /// slot): general, never placed. [`SscController::register_thread`]
    /// gives a real thread its state.
    pub fn unregistered() -> Self {
        ThreadPolicyState {
            is_mig: MigState::General,
            placed_bound: 0,
            record_bound: 0,
            slice_begin: 0,
            quiet: QuietStreak::default(),
            program_key: 0,
            realtime: false,
            yields_core: None,
        }
    }
}

/// One slice as the driver observed it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct SliceObs {
    /// The core the slice ran on.
    pub core: CoreId,
    /// The slice's length (`D_i`): its CPU time where slices are counted in
    /// CPU time (the runtime), else its on-CPU interval.
    pub slice_len: Nanos,
    /// The wall-clock time the slice spanned, off-CPU time included; 0
    /// where slices are on-CPU intervals (the kernel monitor, the
    /// simulator), which counts as `slice_len`. Qualification measures the
    /// wait share over it ([`crate::detect::qualifies`]).
    pub wall_len: Nanos,
    /// Time spent waiting to acquire locks during it (`sum_j W_ij`).
    pub lock_wait: Nanos,
    /// Acquisitions that had to wait during it (read only where
    /// [`crate::detect::DetectParams::handoff_ns`] is set). A wait that
    /// began in an earlier window and goes on in this one is one of them
    /// here too; a driver's stats count it once.
    pub waits: u64,
    /// Lock attempts during it, contended or not (read only where
    /// [`crate::detect::DetectParams::yields_per_attempt`] is set).
    pub attempts: u64,
    /// Calls to `sched_yield` during it (as `attempts`).
    pub yields: u64,
    /// The thread runs in a real-time class: its scheduling is the
    /// program's own choice (as its affinity is), so it is never placed.
    pub realtime: bool,
}

/// What a thread must do after a slice.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum ThreadAction {
    /// Nothing.
    Stay,
    /// It just qualified as lock intensive; it moves at its next lock attempt
    /// ([`SscController::on_lock_attempt`]).
    Qualified,
    /// It cooled down: the driver moves it back to the general cores.
    MigrateBack,
    /// Its slice would qualify, but it yields about as often as it locks
    /// ([`crate::detect::gives_core_away`]): it stays on the general cores.
    YieldsCore,
    /// Its slice would qualify, but the program has one core: there is no
    /// SSC apart from the cores the other threads run on, so nothing is
    /// confined and no search runs ([`SscController::can_confine`]).
    NoCoreToSpare,
}

/// The outcome of [`SscController::on_slice_end`].
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct SliceDecision {
    /// What this thread must do.
    pub action: ThreadAction,
    /// Whether the slice was counted as a vote.
    pub voted: bool,
    /// A search or timer decision taken during this call, for the log.
    pub decision: Option<Decision>,
}

/// The paper's voting variables and search state, guarded by `voting_lock`.
#[derive(Debug)]
struct Voting {
    /// `voting_locking`: summed lock waiting of the votes.
    locking: Nanos,
    /// `voting_slice`: summed slice length of the votes.
    slice: Nanos,
    /// Number of votes (halved with the totals).
    votes: u32,
    search: SearchState,
}

/// The SSC controller (paper 1, Algorithms 2-4; see the module docs for the
/// concurrency contract).
#[derive(Debug)]
pub struct SscController {
    params: SscParams,
    /// Cores in the order they join the SSC (see `placement::Topology`).
    order: Box<[CoreId]>,
    /// Position of each core id in `order`; `u32::MAX` if absent.
    rank: Box<[u32]>,
    /// `special_core_bound`.
    bound: AtomicU32,
    /// `n_lock_intensive_tasks`.
    lock_intensive: AtomicU32,
    /// Registered threads whose verdict is that they give their core away
    /// (`ThreadPolicyState::yields_core`): while there are any, a thread
    /// not judged yet does not qualify.
    yielders: AtomicU32,
    /// Registered threads whose verdict is that they keep their core as
    /// they lock (`ThreadPolicyState::yields_core` is `Some(false)`).
    keepers: AtomicU32,
    /// `remig_next`: when the re-search timer fires.
    remig_next: AtomicU64,
    /// Mirror of `voting.slice`, read without the lock (Alg. 3 line 20 reads
    /// it unlocked too).
    voted_slice: AtomicU64,
    /// Latest bound change (vote warm-up).
    settled_at: AtomicU64,
    /// When the first thread qualified (0: none yet).
    contended_since: AtomicU64,
    /// Progress reported since `progress_since` (see `observe_progress`).
    progress: AtomicU64,
    /// Start of the progress window: the end of the warm-up after the last
    /// bound change, moved forward as the window is halved.
    progress_since: AtomicU64,
    /// Whether the driver reports progress at all.
    progress_reported: AtomicBool,
    /// The search is in its round on every core (`Phase::Baseline`), read
    /// without the voting lock (see `SscParams::heavy_baseline_round`).
    in_baseline: AtomicBool,
    /// Contended acquisitions this round by threads off the SSC and on it
    /// (see `observe_waits`).
    round_waits_off: AtomicU64,
    round_waits_on: AtomicU64,
    /// Since when they count: the last determination (or the start), which
    /// may precede the progress window by a warm-up.
    waits_since: AtomicU64,
    /// Whether the driver reports waits at all (`observe_waits`, even of
    /// none): a round without waits then had none.
    waits_reported: AtomicBool,
    /// Cores needed to keep SSC run queues short (growth on load); 1 if off.
    load_floor: AtomicU32,
    /// p of the last determination, as f64 bits (migrate-back compares with it).
    last_p: AtomicU64,
    /// The search's baseline progress per ms on every core, as f64 bits; 0
    /// while it has none (see `far_below_baseline`).
    baseline_rate: AtomicU64,
    memory: ClassMemory,
    voting: Mutex<Voting>,
}

/// Takes the voting lock if free; a poisoned lock is still usable, since the
/// state is plain numbers and every update leaves it consistent.
#[inline]
fn try_voting(lock: &Mutex<Voting>) -> Option<MutexGuard<'_, Voting>> {
    match lock.try_lock() {
        Ok(guard) => Some(guard),
        Err(TryLockError::Poisoned(poisoned)) => Some(poisoned.into_inner()),
        Err(TryLockError::WouldBlock) => None,
    }
}

/// Relaxed everywhere on these atomics: each is a self-contained hint
/// (paper 1 reads `special_core_bound` unlocked); a stale read costs at most
/// one extra migration or a dropped vote, which the next slice corrects.
const HINT: Ordering = Ordering::Relaxed;

impl SscController {
    /// The parameters it runs with.
    pub fn params(&self) -> &SscParams {
        &self.params
    }

    /// `special_core_bound`: the SSC is the first `bound()` cores of the order.
    #[inline]
    pub fn bound(&self) -> u32 {
        self.bound.load(HINT)
    }

    /// Lock-intensive threads counted (`n_lock_intensive_tasks`).
    #[inline]
    pub fn lock_intensive(&self) -> u32 {
        self.lock_intensive.load(HINT)
    }

    /// Whether every registered thread judged on how it locks gives its
    /// core away as it does (at least one is judged), and none is lock
    /// intensive: a yielder is never placed, so confinement has nothing to
    /// offer until that changes, and a driver may look seldom. sysbench
    /// threads (8 threads on 2 CPUs) lost 5% to a monitor that looked 16
    /// times in its 180 ms and found nothing each time, and nothing when it
    /// looked 3 times.
    pub fn only_yielders(&self) -> bool {
        self.yielders.load(HINT) > 0 && self.keepers.load(HINT) == 0 && self.lock_intensive() == 0
    }

    /// The SSC now: the first `bound()` cores of the order.
    #[inline]
    pub fn ssc_cores(&self) -> &[CoreId] {
        &self.order[..(self.bound() as usize).min(self.order.len())]
    }

    /// The whole order cores join the SSC in.
    pub fn order(&self) -> &[CoreId] {
        &self.order
    }

    /// Whether confining can change anything: with one core (a one-CPU
    /// cpuset or container) the SSC would be every core. Then no thread
    /// qualifies to move and the search never starts, so a driver has
    /// nothing to decide often (on one CPU, the monitor's rounds every
    /// millisecond cost git grep at 8 threads 0.85x glibc's throughput).
    #[inline]
    pub fn can_confine(&self) -> bool {
        self.order.len() > 1
    }

    /// Is `core` in the SSC now (`this_cpu < special_core_bound`)?
    #[inline]
    pub fn is_ssc_core(&self, core: CoreId) -> bool {
        self.rank
            .get(core as usize)
            .is_some_and(|&r| r < self.bound())
    }

    /// The classification memory.
    pub fn memory(&self) -> &ClassMemory {
        &self.memory
    }

    /// Votes accumulated so far: (`voting_locking`, `voting_slice`); `None`
    /// if the voting lock is held elsewhere.
    pub fn vote_totals(&self) -> Option<(Nanos, Nanos)> {
        try_voting(&self.voting).map(|v| (v.locking, v.slice))
    }

    /// The search state; `None` if the voting lock is held elsewhere.
    pub fn search_state(&self) -> Option<SearchState> {
        try_voting(&self.voting).map(|v| v.search)
    }

    /// Largest bound the search may use.
    fn max_bound(&self) -> u32 {
        max_bound(&self.params, self.order.len() as u32)
    }

    /// A determination from the current votes (Alg. 4) and its effects.
    fn determine(&self, voting: &mut Voting, now: Nanos) -> Decision {
        let bound = self.bound();
        let lock_intensive = self.lock_intensive();
        let p = voting.locking as f64 / voting.slice.max(1) as f64;
        let since = self.progress_since.load(HINT);
        let elapsed = now.saturating_sub(since);
        let progress = self.progress.load(HINT);
        // Per millisecond; `votes_suffice` keeps the window non-empty.
        let measured = self
            .measures_progress()
            .then(|| progress as f64 * 1e6 / elapsed.max(1) as f64);
        let off = self.round_waits_off.swap(0, HINT);
        let on = self.round_waits_on.swap(0, HINT);
        let waits_over = now.saturating_sub(self.waits_since.swap(now, HINT));
        let round = Round {
            measured,
            bound,
            lock_intensive,
            max_bound: self.max_bound(),
            min_bound: self.load_floor.load(HINT).max(1),
            useful_perc: 1.0 - p.min(1.0),
            // Only waits that could qualify a thread count (a program that
            // needs its cores waits seldom: git grep's 2-20 a ms).
            waits_off_ssc: crate::detect::handoffs_could_qualify(
                &self.params.detect,
                off,
                waits_over,
                1,
            )
            .then(|| off as f64 / (off + on) as f64),
            handoff_share: if self.waits_reported.load(HINT) {
                crate::detect::handoff_share(
                    &self.params.detect,
                    off + on,
                    waits_over,
                    self.max_bound(),
                )
            } else {
                None
            },
            contended_for: match self.contended_since.load(HINT) {
                0 => 0,
                since => now.saturating_sub(since),
            },
        };
        let step = voting.search.determine(&self.params, round);
        if voting.votes > 0 {
            // A round closed by time may have no votes: no p to compare.
            self.last_p.store(p.to_bits(), HINT);
        }
        let mut decision = Decision {
            at: now,
            kind: step.kind,
            bound_before: bound,
            bound_after: bound,
            throughput: step.thro,
            p,
            lock_intensive,
            climbing: voting.search.climbing,
        };
        match step.bound {
            BoundMove::Restart => decision.bound_after = self.restart(voting, now),
            BoundMove::To(new_bound) => {
                self.move_bound(voting, new_bound, now);
                decision.bound_after = new_bound;
            }
            // Disjoint rounds: each round is fresh evidence, so confirmations
            // (and jump confirmations) are independent readings.
            BoundMove::Keep if self.params.votes_per_ssc_core > 0 => self.clear_votes(voting, now),
            BoundMove::Keep => self.fade_votes(voting, now, progress, elapsed),
        }
        if let Phase::Refine(refine) = voting.search.phase {
            decision.climbing = refine.streak;
        }
        let baseline = voting.search.unconfined_thro.unwrap_or(0.0);
        self.baseline_rate.store(baseline.to_bits(), HINT);
        self.note_phase(&voting.search);
        decision
    }

    /// Mirrors whether `search` is in its round on every core.
    #[inline]
    fn note_phase(&self, search: &SearchState) {
        self.in_baseline.store(
            matches!(search.phase, Phase::Baseline | Phase::Reference(_)),
            HINT,
        );
    }

    /// Alg. 4 line 50: SHRINK_VOTING(1, 2) lets older votes fade; the
    /// progress window fades alike (half the count over half the time).
    fn fade_votes(&self, voting: &mut Voting, now: Nanos, progress: u64, elapsed: Nanos) {
        voting.locking /= 2;
        voting.slice /= 2;
        voting.votes /= 2;
        self.voted_slice.store(voting.slice, HINT);
        self.progress.fetch_sub(progress / 2, HINT);
        self.progress_since.store(now - elapsed / 2, HINT);
    }

    /// Sets the bound, clears the votes and re-arms the timer (Alg. 4 lines
    /// 20-23, 52).
    fn move_bound(&self, voting: &mut Voting, new_bound: u32, now: Nanos) {
        self.bound.store(new_bound.max(1), HINT);
        self.clear_votes(voting, now.saturating_add(self.params.vote_warmup));
        self.remig_next
            .store(now.saturating_add(self.params.research_interval), HINT);
        self.settled_at.fetch_max(now, HINT);
    }

    /// Drops every vote and starts the progress window at `progress_from`.
    fn clear_votes(&self, voting: &mut Voting, progress_from: Nanos) {
        voting.locking = 0;
        voting.slice = 0;
        voting.votes = 0;
        self.voted_slice.store(0, HINT);
        self.progress.store(0, HINT);
        self.progress_since.store(progress_from, HINT);
    }

    /// Alg. 3 lines 31-34: bound back to the start, votes cleared, climbing
    /// again. The recorded last step is reset too, so the new search does not
    /// compare against the old one. Returns the new bound.
    fn restart(&self, voting: &mut Voting, now: Nanos) -> u32 {
        voting.search = SearchState::for_params(&self.params);
        self.note_phase(&voting.search);
        let start = if self.params.baseline_unconfined {
            self.max_bound()
        } else {
            self.params
                .initial_bound
                .max(self.load_floor.load(HINT))
                .clamp(1, self.max_bound())
        };
        self.move_bound(voting, start, now);
        start
    }
}

/// Largest bound the search may use on `cores` cores under `params`.
fn max_bound(params: &SscParams, cores: u32) -> u32 {
    match params.max_bound {
        0 => cores,
        cap => cap.min(cores),
    }
    .max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn assert_sync<T: Sync + Send>() {}

    #[test]
    fn controller_is_shareable() {
        assert_sync::<SscController>();
    }

    /// Two threads drive one controller at once; the try-locked voting
    /// keeps every invariant (no counts lost or wrapped, bound in range).
    #[test]
    fn concurrent_slice_ends_keep_the_invariants() {
        let order: Vec<CoreId> = (0..16).collect();
        let ctl = SscController::new(SscParams::default(), order, 0);
        std::thread::scope(|scope| {
            for worker in 0..2u32 {
                let ctl = &ctl;
                scope.spawn(move || {
                    let mut thread = ctl.register_thread(worker.into(), 0);
                    let loads = [0u32; 16];
                    let mut core = 15 - worker;
                    for step in 0..20_000u64 {
                        let now = step * 1_000;
                        if let Some(target) = ctl.on_lock_attempt(&mut thread, core, &loads, now) {
                            core = target;
                        }
                        ctl.begin_slice(&mut thread, now);
                        let obs = SliceObs {
                            core,
                            slice_len: 1_000_000,
                            lock_wait: 300_000,
                            waits: 0,
                            attempts: 0,
                            yields: 0,
                            wall_len: 0,
                            realtime: false,
                        };
                        ctl.on_slice_end(&mut thread, obs, now + 1_000);
                    }
                    assert_eq!(thread.is_mig, MigState::HaveMigrated);
                    ctl.unregister_thread(&thread);
                });
            }
        });
        assert_eq!(ctl.lock_intensive(), 0);
        assert!((1..=16).contains(&ctl.bound()));
    }
}
