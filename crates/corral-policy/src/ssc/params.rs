//! Parameters of the SSC controller, and the events it reports.

use crate::detect::DetectParams;
use crate::Nanos;
use serde::Serialize;

/// TSC rate assumed to convert paper 1's vote sufficiency from TSC ticks to
/// nanoseconds: 1.9 GHz, the nominal clock of the AMD Opteron 8347 HE of
/// paper 1's main machine (Sec. 4.1; the paper does not state the rate).
pub const PAPER_TSC_HZ: u64 = 1_900_000_000;

/// Paper 1, Alg. 3 line 20: votes suffice once
/// `voting_slice > special_core_bound x 256,000` TSC ticks.
pub const PAPER_VOTE_TICKS_PER_CORE: u64 = 256_000;

/// The user-space preset's [`DetectParams::handoff_ns`]: a futex sleep and
/// wake with their two context switches, about 2 us. With the 10% share a
/// slice then needs more than 50 contended acquisitions per ms of CPU.
pub const USER_HANDOFF_NS: Nanos = 2_000;

/// Parameters of [`super::SscController`].
///
/// Named presets: [`SscParams::default`] is the 2013 algorithm plus every
/// improvement, growth on load included; [`SscParams::kernel`] and
/// [`SscParams::user_space`] are what corral's drivers run;
/// [`SscParams::paper_2013`] is the algorithm exactly as published (the
/// improvements off). Drivers pick a preset; none edits fields.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct SscParams {
    /// Per-slice classification thresholds (paper 1, Sec. 3.2; paper 2).
    pub detect: DetectParams,
    /// Vote sufficiency: a determination runs once the voted slice time
    /// exceeds `bound x vote_slice_per_core`. Paper 1, Alg. 3 line 20:
    /// 256,000 TSC ticks per core = 134,736 ns at [`PAPER_TSC_HZ`].
    pub vote_slice_per_core: Nanos,
    /// Consecutive agreeing rounds before the bound moves. Paper 1, Alg. 4: 2
    /// (a step back, as published, takes one round more).
    pub confirmations: u32,
    /// Re-search timeout: the search restarts when the bound has not moved
    /// for this long. Paper 1, Sec. 3.5: 30 s.
    pub research_interval: Nanos,
    /// A settled T above `alpha x` the recorded T restarts the search (Alg. 4
    /// line 45; no published value). 1.3: round-to-round noise of a
    /// sufficient vote is a few percent, a phase change moves T by tens.
    pub alpha: f64,
    /// A settled T below `beta x` the recorded T restarts the search (Alg. 4
    /// line 45; no published value). 0.7, symmetric to `alpha`.
    pub beta: f64,
    /// Bound at start and after a restart. Paper 1, Alg. 3 line 31: 1.
    pub initial_bound: u32,
    /// Largest SSC (`max_special_cores`); 0 means every core of the order.
    pub max_bound: u32,
    /// Send a lock-intensive thread back after `detect.release_after_slices`
    /// quiet slices (paper 2). Off in the 2013 algorithm.
    pub migrate_back: bool,
    /// Migrate-back also needs the thread's share below this fraction of the
    /// SSC's last measured p: on a small SSC every thread waits little (with
    /// one core, not at all), so only a thread quiet *among its peers* has
    /// really cooled. A program cooling as a whole shows as a T jump and
    /// restarts the search instead. 0.5 (no published value).
    pub release_peer_fraction: f64,
    /// Ignore votes (and progress) from slices that began less than this
    /// after the last bound change (paper 1, Sec. 4.6: early votes skewed
    /// single counter to 2 cores). Non-zero also turns on the per-thread
    /// warm-up: a slice during which its thread moved into the SSC never
    /// votes, so arrivals (short-lived tasks) do not delay everyone's votes.
    /// 0 turns both off.
    pub vote_warmup: Nanos,
    /// A round also needs `votes_per_ssc_core x bound` votes (at most one per
    /// lock-intensive thread), besides Alg. 3 line 20's voted time. Beyond
    /// about 30 SSC cores one 4 ms slice exceeds `bound x 134.7 us`, so
    /// without it a round's T rests on a single slice. 1 (one slice per SSC
    /// core, i.e. about one slice length per round); 0 is the paper's rule.
    /// Non-zero also makes rounds disjoint (votes cleared after a round
    /// instead of halved as in Alg. 4 line 50), so confirmations are
    /// independent readings.
    pub votes_per_ssc_core: u32,
    /// Consecutive settled rounds outside [beta, alpha] (on the same side)
    /// before a throughput jump restarts the search. Paper 1 (Alg. 4 line
    /// 45) restarts on the first; corral waits for 2, so one noisy round
    /// cannot undo a settled search while a real behaviour change (which
    /// persists) still restarts it one round later.
    pub jump_confirmations: u32,
    /// The first this many settled rounds re-record T instead of testing it
    /// for a jump: a search that settles while threads still qualify and
    /// move recorded T before they all arrived, and their arrival would
    /// otherwise read as a jump that restarts it. 0 (the papers) records T
    /// only at the decision.
    pub settle_in_rounds: u32,
    /// Settled on every core, a fall of T restarts the search only after
    /// this many rounds (at least `jump_confirmations`): a program that
    /// needs its cores is there because confinement did not help it, and
    /// its own swings would otherwise send it back to one core. 0 keeps
    /// `jump_confirmations`.
    pub unconfined_fall_rounds: u32,
    /// A searching round at a confined bound whose lock-intensive count grew
    /// by more than this fraction since the last round is not evidence: the
    /// threads that qualified during it ran unconfined for part of it, so
    /// it measures a mix of bounds (a program of many threads qualifies
    /// over several rounds). Such rounds hold without counting, at most
    /// `arrival_hold_max` in a row. 0 (the papers) counts every round.
    pub arrival_growth: f64,
    /// The most rounds in a row `arrival_growth` may hold: a program whose
    /// threads keep arriving is still searched.
    pub arrival_hold_max: u32,
    /// A searching round whose progress fell below this fraction of both
    /// the best round at the same bound and the baseline on every core is
    /// a stall, not a measure of the bound: it holds without counting, once
    /// in a row. sysbench mutex at 64 threads on one core ran 100k locks a
    /// ms, then a round of a 40 ms stall ran 9k, and as the round that
    /// decided, it settled the program on every core at 0.4x for the rest
    /// of its run. A bound that never did well is judged as before. 0 (the
    /// papers): no such hold.
    pub stall_fraction: f64,
    /// A searching round at a confined bound in which more than this share
    /// of the contended acquisitions were made off the SSC holds as an
    /// arrival (under the same cap): the threads that contend were not all
    /// moved yet, so it measures a mix of bounds. sysbench mutex at 64
    /// threads: on one core with 50-60 of its threads qualified, waits
    /// stayed at 2,800 a ms (against under 300 with all there) and progress
    /// at every core's 45k a ms, and the search settled on every core. 0
    /// (the papers): not looked at.
    pub mixed_waits_off_ssc: f64,
    /// Where the baseline round's contended acquisitions cost hand-offs
    /// under the qualifying share of every core's time (what confinement
    /// saves is then small), the baseline on every core holds (goes on
    /// measuring) until the program has had a lock-intensive thread for
    /// this long. A confined round costs a program that needs its cores a
    /// warm-up and a round at a fraction of its speed, which a program
    /// contended for less than about that long cannot earn back (rent
    /// until the rent paid matches the price). git grep at 16-64 threads
    /// lives 20-30 ms on 16 cores: it qualified, spent its last third on one
    /// core and ran at 0.76-0.85x glibc. Heavy hand-offs (sysbench mutex:
    /// thousands a ms) start the search at once. 0 (the papers): the
    /// search starts at its first round.
    pub baseline_min_contended: Nanos,
    /// What a confined trial costs a program that needs its cores, in its
    /// own time (about one round at half speed). Its round on every core
    /// holds, beyond `baseline_min_contended`, until the program has been
    /// contended so long that its hand-offs' share of every core's time
    /// (`detect::handoff_share`, at most what confinement could save) would
    /// have paid for a trial: `trial_price / share`. pigz -p 64 on 2 CPUs
    /// hands off 0.1-2.6 times a ms (under 0.3% of the time) and spent 25
    /// ms of a 200 ms run on one core before settling back on both: 0.93x
    /// of no policy. 0 (the papers): not looked at.
    pub trial_price: Nanos,
    /// Compare measured progress (see `SscController::observe_progress`:
    /// lock acquisitions of the program's threads per unit time) instead of
    /// T(n) = n(1 - p(n)) once the driver reports any. Paper 1, footnote 1:
    /// T is meant as K(n)/K(1), measured over one-core throughput; n(1 - p)
    /// approximates it but counts critical sections lengthened by cache
    /// misses as useful work. Acquisitions per time are proportional to
    /// useful work only in homogeneous programs (paper 1's target, Sec.
    /// 3.6.2); a driver that cannot say so reports nothing and keeps n(1 - p).
    pub use_progress: bool,
    /// Exponential backoff of migrate-back: each release of a thread that
    /// requalifies before staying general for its release streak doubles the
    /// quiet slices its next release needs, up to `2^release_backoff_max`
    /// times `detect.release_after_slices`. Threads sharing few SSC cores
    /// wait less because they no longer run at once, not because the lock
    /// cooled; the backoff stops their churn. 0 turns it off.
    pub release_backoff_max: u32,
    /// After the doubling stops, refine by a pattern search with halving
    /// steps between n/2 and 2n (paper 1, Sec. 4.6: 8 cores instead of 10).
    pub refine: bool,
    /// Grow the SSC when its cores average more than this many runnable
    /// threads (paper 2: the lock cores' run queues overflow). 0 turns it off.
    pub grow_runnable_per_core: f64,
    /// Slots of the per-program classification memory (paper 1, Sec. 4.6:
    /// short-lived tasks exit before they are classified). 0 turns it off.
    pub class_memory_slots: usize,
    /// "No confinement" is always a candidate: once the search would settle
    /// below every core, the bound moves to every core (the general threads
    /// keep every CPU too) for `confirmations` rounds, and stays there
    /// unless the settled bound's progress beat it by more than
    /// `unconfined_margin`. With measured whole-program progress, a program
    /// whose parallel part needs the cores keeps them. Off in the papers.
    pub probe_unconfined: bool,
    /// How much more progress a confined bound must show than every core to
    /// be kept (ties go to no confinement: never worse than no policy).
    pub unconfined_margin: f64,
    /// A round at a probe (a doubled bound, or a refinement probe) below
    /// this fraction of the throughput it is compared with rejects the
    /// probe at once, without the `confirmations` that guard a move
    /// against noise: rounds swing by tens of percent, not by half. On a
    /// 16-core machine sysbench mutex at 4-16 threads spent 35-57 ms of
    /// rounds at a doubled bound of 2 cores before stepping back to 1
    /// (three rounds). 0 turns it off (the papers: every step back takes
    /// its confirmations).
    pub reject_below: f64,
    /// The search begins with one round on every core (no confinement), and
    /// uses it twice: while the doubling is still below it, the bound jumps
    /// to where linear growth would meet it (a program whose lock does not
    /// collapse needs few steps to reach its cores), and a search that ends
    /// below it (by `unconfined_margin`) settles on every core without the
    /// late probe `probe_unconfined` makes.
    pub baseline_unconfined: bool,
    /// Settled on a confined bound with measured progress, the search
    /// keeps the bound only while it measures better than the reference on
    /// every core (`confirmations` rounds below it, or a reference round
    /// above the bound's settled rounds, go back to every core; rounds
    /// there below the dropped bound by `unconfined_margin` take it back),
    /// and re-measures that reference with one round on every core after 2
    /// settled rounds, then 4, 8, ..., at most this many: a reference taken
    /// once, while the program's threads were still arriving, is not
    /// trusted for the program's life. 0 turns it off (the papers never
    /// re-measure).
    pub reference_every: u32,
    /// With measured progress, no round is shorter than this, and a round
    /// also closes this long after the last one without waiting for votes,
    /// once it has counted
    /// `progress_round_min` units (or after ten times as long): lock-
    /// intensive threads that use little CPU vote slowly, while the progress
    /// of the whole program is counted anyway. 0 turns it off.
    pub progress_round: Nanos,
    /// The fewest progress units any round with measured progress rests on
    /// (relative noise about `1 / sqrt` of it; a driver that samples
    /// progress once a tick would otherwise compare empty and full ticks).
    pub progress_round_min: u64,
    /// With measured progress, the round on every core that begins a
    /// search closes this soon (and no sooner than its
    /// `progress_round_min` units) once the hand-offs it counted cost more
    /// than the qualifying share of every core's time
    /// (`detect::handoff_share`): the trial then starts at once
    /// ([`Self::trial_after`] is 0), the round is only the trial's
    /// reference, and the late probe of every core
    /// ([`Self::probe_unconfined`]) measures it again before the search
    /// settles confined. 0 (or not below `progress_round`): the round is
    /// as long as any.
    pub heavy_baseline_round: Nanos,
}

impl SscParams {
    /// How long a program must have been contended before its round on
    /// every core gives way to a confined trial, if its hand-offs cost
    /// `handoff_share` of every core's time (`None`: not known, no wait).
    /// Hand-offs over the qualifying share start the trial at once.
    pub fn trial_after(&self, handoff_share: Option<f64>) -> Nanos {
        let Some(share) = handoff_share else {
            return 0;
        };
        if share > self.detect.qualify_share {
            return 0;
        }
        let rent = match self.trial_price {
            0 => 0,
            price if share > 0.0 => (price as f64 / share).min(Nanos::MAX as f64) as Nanos,
            _ => Nanos::MAX,
        };
        self.baseline_min_contended.max(rent)
    }

    /// corral's preset for kernel locks, run by the kernel-lock monitor and
    /// by the simulator's `lca` (which models kernel spin locks): every
    /// improvement but growth on load. With every thread lock intensive
    /// (paper 1's homogeneous programs) the SSC holds every thread by
    /// design, so "more than two runnable per SSC core" always fires and
    /// grows the SSC to half the thread count, undoing the cure (the
    /// simulator's `lca-grow` shows it).
    ///
    /// Convergence: a driver that reports progress (the simulator does; the
    /// kernel-lock monitor does not, and keeps vote-closed rounds) closes a
    /// round every 1 ms once it has counted 200 acquisitions, instead of
    /// waiting for one 4 ms slice per SSC core: `--seconds 0.2` then reaches
    /// the final bound at 48 cores.
    ///
    /// The vote warm-up after a bound change is 1.25 ms, not a whole 4 ms
    /// slice: tasks move at their next lock attempt, well within it, and
    /// every step of the search then costs about 2.5 ms instead of 5. On
    /// the simulator's acceptance grid (14 presets, `lca-qspinlock`, 8 to
    /// 1,024 cores, 0.2 s, seeds 1 and 2) no point settles later than 20
    /// ms (4 ms: 38-40 of 130 did, up to 38 ms) and none falls below 0.95x
    /// of the better baseline. The value was chosen among measured ones and
    /// the search is sensitive to it: 2 ms left 28-32 points above 20 ms,
    /// 1.5 ms 3, and 1 ms settled fast but left PFIND under `lca` over the
    /// ticket lock at 0.88 of the default's peak at 48 cores.
    pub fn kernel() -> Self {
        SscParams {
            vote_warmup: 1_250_000,
            grow_runnable_per_core: 0.0,
            progress_round: 1_000_000,
            progress_round_min: 200,
            baseline_unconfined: true,
            // One reference round in at most 33: about 3% of the time on
            // every core, where confinement helps most.
            reference_every: 32,
            // 1 ms rounds: a restart needs 4 ms of changed progress, not a
            // 2 ms dip (a convoy the lock recovers from by itself).
            jump_confirmations: 4,
            ..Self::default()
        }
    }

    /// corral's preset for user-space locks, run by `corral run`: the
    /// kernel preset (growth on load answers kernel waiters spinning on long
    /// SSC run queues, paper 2; user-space waiters give their core up, so a
    /// long SSC run queue costs little there too), plus "no confinement" as
    /// a candidate and time-closed rounds: the runtime counts every lock
    /// attempt of the program, so it can tell when confinement hurts. Its
    /// waiters sleep, so only threads whose contended acquisitions cost a
    /// share of their time qualify ([`DetectParams::handoff_ns`]).
    pub fn user_space() -> Self {
        SscParams {
            detect: DetectParams {
                handoff_ns: USER_HANDOFF_NS,
                // One yield for every two lock attempts: sysbench threads
                // yields once per lock; a worker that yields between
                // batches of locks stays far below.
                yields_per_attempt: 0.5,
                ..DetectParams::default()
            },
            probe_unconfined: true,
            // The search begins by measuring every core, where the program
            // runs before anything is confined: a program that needs its
            // cores then spends one round confined, not a climb, and one
            // that confinement helps settles without re-measuring every
            // core (on 2 cores the doubling's first step reaches them).
            baseline_unconfined: true,
            // 10 ms rounds: two of them are 20 ms.
            jump_confirmations: 2,
            // A program of many threads qualifies over tens of ms: the
            // two rounds after settling record where it arrived.
            settle_in_rounds: 2,
            // sysbench threads at 64 threads: progress falls 800 -> 300 a ms
            // by itself; two 10 ms rounds of it restarted the search.
            unconfined_fall_rounds: 4,
            // Rounds of such programs swing +-40%: two lucky ones beat
            // every core by 26% and kept them on one core for 190 ms.
            unconfined_margin: 0.15,
            // 64 threads on 2 cores qualify over 30-60 ms: a round at one
            // core that held a fifth of them read as no better than every
            // core, and the search settled unconfined at 0.4x.
            arrival_growth: 0.25,
            arrival_hold_max: 4,
            stall_fraction: 1.0 / 3.0,
            mixed_waits_off_ssc: 0.5,
            // Four rounds and a warm-up. At 24 ms, git grep at 16-64
            // threads on 2 CPUs (50-60 ms a run) was moved to one core at
            // 35 ms in 2 of 6 runs and stayed there for the rest of its
            // life; at 48 ms it ran 3-4% faster (0.85-0.94x -> 0.89-0.97x of
            // plain, 30-40 interleaved runs at 16, 32 and 64 threads), pigz
            // -p 64 alike (0.90x). Heavy hand-offs do not wait for it.
            baseline_min_contended: 48_000_000,
            // A 10 ms round at half speed. At a tenth of the time in
            // hand-offs (where they turn heavy) the price is paid in 50 ms,
            // near `baseline_min_contended`; git grep at 64 threads on 2
            // CPUs (1.6%) would wait 310 ms, longer than it lives.
            trial_price: 5_000_000,
            // Rounds of the programs above swing +-40%: a probe under half
            // its reference is worse, not unlucky.
            reject_below: 0.5,
            // 10 ms rounds of at least 400 attempts (noise about 5%).
            progress_round: 10_000_000,
            progress_round_min: 400,
            // sysbench mutex on 2 CPUs, whose hand-offs cost most of both:
            // a 10 ms round on every core runs at a sixth of the confined
            // rate, and a `bench apps` point's corral run lasts 40-60 ms.
            // 3 ms, against its own 1-thread rate: 4 threads 0.77 -> 0.86x,
            // 16 threads 0.79 -> 0.81x, 64 threads 0.67 -> 0.69x.
            heavy_baseline_round: 3_000_000,
            // A thread placed by the monitor moves at its next lock
            // attempt, which may be a whole sleep away: a slice's length.
            vote_warmup: 4_000_000,
            ..Self::kernel()
        }
    }

    /// The kernel preset without the vote warm-up: the ablation the
    /// simulator's `lca-nowarm` runs to show what the warm-up buys.
    pub fn kernel_without_warmup() -> Self {
        SscParams {
            vote_warmup: 0,
            ..Self::kernel()
        }
    }

    /// Paper 1's algorithm exactly: no migrate-back, no warm-up, no
    /// refinement, no growth on load, no classification memory, a round as
    /// soon as the voted time suffices, a restart on one jumping round, and
    /// T = n(1 - p) only.
    pub fn paper_2013() -> Self {
        SscParams {
            migrate_back: false,
            vote_warmup: 0,
            votes_per_ssc_core: 0,
            jump_confirmations: 1,
            use_progress: false,
            release_backoff_max: 0,
            refine: false,
            grow_runnable_per_core: 0.0,
            class_memory_slots: 0,
            ..Self::default()
        }
    }
}

impl Default for SscParams {
    fn default() -> Self {
        SscParams {
            detect: DetectParams::default(),
            vote_slice_per_core: PAPER_VOTE_TICKS_PER_CORE * 1_000_000_000 / PAPER_TSC_HZ,
            confirmations: 2,
            research_interval: 30_000_000_000,
            alpha: 1.3,
            beta: 0.7,
            initial_bound: 1,
            max_bound: 0,
            migrate_back: true,
            release_peer_fraction: 0.5,
            // One CFS slice (4 ms minimum granularity): the cores joining
            // or leaving the SSC rebalance; arrivals are handled per thread.
            vote_warmup: 4_000_000,
            votes_per_ssc_core: 1,
            jump_confirmations: 2,
            settle_in_rounds: 0,
            unconfined_fall_rounds: 0,
            arrival_growth: 0.0,
            arrival_hold_max: 0,
            stall_fraction: 0.0,
            mixed_waits_off_ssc: 0.0,
            baseline_min_contended: 0,
            trial_price: 0,
            use_progress: true,
            // Up to 16 x 3 quiet slices: long against a search round.
            release_backoff_max: 4,
            refine: true,
            // Two runnable threads per SSC core: each gets at most half a core.
            grow_runnable_per_core: 2.0,
            class_memory_slots: 256,
            probe_unconfined: false,
            unconfined_margin: 0.05,
            reject_below: 0.0,
            baseline_unconfined: false,
            reference_every: 0,
            progress_round: 0,
            progress_round_min: 0,
            heavy_baseline_round: 0,
        }
    }
}

/// The kinds of [`Decision`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum DecisionKind {
    /// A determination that moved nothing (a confirmation counted, or a
    /// settled round within [beta, alpha]).
    Hold,
    /// Alg. 4 lines 11-23: T rose twice; the bound doubles.
    Double,
    /// Alg. 4 lines 33-37: T stopped rising; back to the last step, search
    /// stopped.
    StepBack,
    /// Refinement: the bound moves to the next probe.
    RefineProbe,
    /// Refinement finished; the bound is the best center.
    RefineSettle,
    /// The search would settle below every core: every core (no
    /// confinement) is measured against it first.
    ProbeUnconfined,
    /// No confinement did as well as the best bound: the search settles on
    /// every core.
    SettleUnconfined,
    /// The round on every core that begins a search
    /// (`SscParams::baseline_unconfined`) is measured; the doubling starts.
    Baseline,
    /// Settled on a confined bound: one round on every core re-measures
    /// the reference (`SscParams::reference_every`).
    Reference,
    /// The reference round read below the confined bound by the margin:
    /// back to the confined bound.
    KeepConfined,
    /// The confined bound no longer measures better than the reference on
    /// every core: the program goes back to every core.
    DropConfined,
    /// Alg. 3 lines 28-37: the re-search timer fired.
    RestartTimer,
    /// Alg. 4 line 45: T left [beta, alpha] x the recorded T.
    RestartThroughputJump,
    /// Alg. 4 line 45: the number of work cores changed.
    RestartWorkCores,
    /// Paper 2: the SSC's run queues were too long; the bound grew.
    GrowOnLoad,
}

/// One decision of the controller, for the driver's log.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Decision {
    /// When it was taken.
    pub at: Nanos,
    /// What happened.
    pub kind: DecisionKind,
    /// SSC size before.
    pub bound_before: u32,
    /// SSC size after.
    pub bound_after: u32,
    /// Normalised throughput T = (1 - p) x work cores of the round, or, when
    /// the driver reports progress (`SscParams::use_progress`), measured
    /// progress per millisecond; 0 when no round was evaluated.
    pub throughput: f64,
    /// Lock-wait share p = voting_locking / voting_slice of the round.
    pub p: f64,
    /// Lock-intensive threads counted when it was taken.
    pub lock_intensive: u32,
    /// The search's confirmation counter after it (paper's `climbing`, or the
    /// refinement streak).
    pub climbing: i32,
}
