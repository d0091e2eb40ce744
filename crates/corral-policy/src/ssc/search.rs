//! The SSC size search: paper 1's Algorithm 4 (`determine_new_bound`) and
//! corral's refinement after the doubling stops.
//!
//! Pure state machine: the controller feeds it one round of votes and applies
//! the returned [`Step`] (move the bound and clear the votes, or halve them).

use super::params::{DecisionKind, SscParams};
use crate::Nanos;
use serde::Serialize;

/// Where the search stands.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub enum Phase {
    /// One round on every core before the doubling
    /// (`SscParams::baseline_unconfined`).
    Baseline,
    /// Algorithm 4's doubling; `climbing` counts confirmations.
    Climb,
    /// Pattern search between halved steps around the best bound so far.
    Refine(Refine),
    /// Every core (no confinement) measured against the bound the search
    /// would settle on (`SscParams::probe_unconfined`).
    ProbeUnconfined(UnconfinedProbe),
    /// Settled on a confined bound: one round on every core re-measures
    /// the reference (`SscParams::reference_every`).
    Reference(Reference),
    /// The search stopped (`climbing == 0` in the paper); only the adaptation
    /// check runs.
    Settled,
}

/// The bound the search would settle on, while every core is measured.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct UnconfinedProbe {
    /// The bound the search found.
    pub center: u32,
    /// Its normalised throughput.
    pub center_thro: f64,
    /// Consecutive rounds on every core as good as the center (> 0, within
    /// `unconfined_margin`) or worse (< 0).
    pub streak: i32,
}

/// A reference round: the confined bound it left and what that bound's
/// settled rounds read.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Reference {
    /// The bound the search had settled on.
    pub confined: u32,
    /// The settled rounds' throughput there (a running mean).
    pub confined_thro: f64,
}

/// Refinement state: probing `center +- step`, halving `step` when neither
/// side is better, until `step` is 0.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Refine {
    /// Best bound confirmed so far.
    pub center: u32,
    /// Normalised throughput measured at `center`.
    pub center_thro: f64,
    /// Distance of the probe from the center.
    pub step: u32,
    /// +1 or -1: the side being probed.
    pub dir: i32,
    /// The side that last moved the center at this step (0: none), so the
    /// old center is never probed again.
    pub moved_dir: i32,
    /// The bound being measured.
    pub probe: u32,
    /// Consecutive better (> 0) or not-better (< 0) rounds at the probe.
    pub streak: i32,
}

impl Refine {
    /// The next side to probe: the other side at this step if the center
    /// has not moved at it, else the halved step from the + side.
    fn advance(&mut self) {
        if self.dir > 0 && self.moved_dir == 0 {
            self.dir = -1;
        } else {
            self.step /= 2;
            self.dir = 1;
            self.moved_dir = 0;
        }
    }
}

/// Inputs of one determination.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Round {
    /// Measured progress rate of the round, if the driver reports it: it
    /// replaces T = n(1 - p) (see `SscParams::use_progress`).
    pub measured: Option<f64>,
    pub bound: u32,
    pub lock_intensive: u32,
    /// Largest allowed bound (cores in the order, or the configured cap).
    pub max_bound: u32,
    /// Smallest allowed bound (load floor, at least 1).
    pub min_bound: u32,
    pub useful_perc: f64,
    /// Share of the round's contended acquisitions made off the SSC, if
    /// the driver reports them (`SscController::observe_waits`).
    pub waits_off_ssc: Option<f64>,
    /// How long the program has had a lock-intensive thread (since the
    /// first qualified; `SscParams::baseline_min_contended`).
    pub contended_for: Nanos,
    /// The share of every core's time the round's contended acquisitions
    /// cost in hand-offs (`detect::handoff_share`), at most what
    /// confinement could save; `None` where the driver reports no waits
    /// (or prices no hand-off). See `SscParams::trial_after`.
    pub handoff_share: Option<f64>,
}

impl Round {
    /// Lock-intensive threads on the SSC (at least 1).
    fn work_cores(&self) -> u32 {
        self.lock_intensive.min(self.bound).max(1)
    }

    /// Alg. 4 lines 2-4: T = useful_perc x work_cores, or the measured rate
    /// where there is one.
    pub(super) fn thro(&self) -> f64 {
        self.measured
            .unwrap_or(self.useful_perc * f64::from(self.work_cores()))
    }
}

/// What a determination does to the bound.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum BoundMove {
    /// The bound stays; the votes fade (or are cleared, with disjoint rounds).
    Keep,
    /// The bound moves here and the votes are cleared.
    To(u32),
    /// The search restarts from the initial bound.
    Restart,
}

/// What one determination decided.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Step {
    pub kind: DecisionKind,
    pub thro: f64,
    pub bound: BoundMove,
}

impl Step {
    /// Nothing moves (a confirmation counted, or a settled round).
    pub(super) fn hold(thro: f64) -> Self {
        Step {
            kind: DecisionKind::Hold,
            thro,
            bound: BoundMove::Keep,
        }
    }

    /// The bound moves to `bound`.
    pub(super) fn to(kind: DecisionKind, thro: f64, bound: u32) -> Self {
        Step {
            kind,
            thro,
            bound: BoundMove::To(bound),
        }
    }
}

/// Paper 1's Algorithm 4 (`determine_new_bound`): its persistent variables
/// plus corral's refinement.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct SearchState {
    /// Paper's `climbing`: 1 after a move, counts up on better rounds and down
    /// (from -1) on worse ones; 0 once stopped.
    pub climbing: i32,
    /// Current phase.
    pub phase: Phase,
    /// Throughput recorded at the last move (`RECORD_LAST_VOTING`).
    pub thro_last_step: f64,
    /// Work cores recorded at the last move.
    pub work_cores_last_step: u32,
    /// Consecutive settled rounds above alpha (> 0) or below beta (< 0).
    pub jump_streak: i32,
    /// Consecutive settled rounds whose work cores differ from the recorded
    /// ones: like a throughput jump, a change must persist to restart.
    pub cores_streak: u32,
    /// T of the baseline round on every core, once measured.
    pub unconfined_thro: Option<f64>,
    /// Rounds since the search settled (0 while it searches).
    pub rounds_settled: u32,
    /// Lock-intensive threads at the last determination.
    pub last_lock_intensive: u32,
    /// Rounds held in a row because threads were still arriving.
    pub arrival_holds: u32,
    /// The best T counted at the current bound since it last moved.
    pub bound_best: f64,
    /// Rounds held in a row as stalls (`SscParams::stall_fraction`).
    pub stall_holds: u32,
    /// The last round on every core held until the program has been
    /// contended long enough (`SscParams::trial_after`): only time can
    /// change that, so a driver need not look every tick.
    pub awaits_trial: bool,
    /// The last round on every core before the baseline counted, to tell
    /// whether the program was still arriving (`baseline_rising`).
    pub baseline_prev: Option<(f64, u32)>,
    /// Baseline rounds held in a row because progress or the
    /// lock-intensive count was still rising.
    pub baseline_holds: u32,
    /// Settled rounds between reference rounds now (0: not started).
    pub reference_gap: u32,
    /// Settled rounds until the next reference round.
    pub reference_due: u32,
    /// A running mean of the settled rounds' throughput at the bound.
    pub settled_mean: f64,
    /// Settled rounds in a row at a confined bound that read below the
    /// reference, or, after a drop, on every core below the dropped bound.
    pub below_reference: u32,
    /// The confined bound last dropped for every core and what it read:
    /// rounds on every core that then read worse than it by the margin
    /// take it back (a round just after a move reads a mix of both).
    pub dropped: Option<Reference>,
    /// Settled rounds since that drop.
    pub since_drop: u32,
}

impl SearchState {
    /// A fresh search (Alg. 3 lines 31-33: climbing = 1).
    pub fn new() -> Self {
        SearchState {
            climbing: 1,
            phase: Phase::Climb,
            thro_last_step: 0.0,
            work_cores_last_step: 0,
            jump_streak: 0,
            cores_streak: 0,
            unconfined_thro: None,
            rounds_settled: 0,
            last_lock_intensive: 0,
            arrival_holds: 0,
            bound_best: 0.0,
            stall_holds: 0,
            awaits_trial: false,
            baseline_prev: None,
            baseline_holds: 0,
            reference_gap: 0,
            reference_due: 0,
            settled_mean: 0.0,
            below_reference: 0,
            dropped: None,
            since_drop: 0,
        }
    }

    /// A fresh search under `params`: it begins on every core where
    /// `baseline_unconfined` asks for it.
    pub fn for_params(params: &SscParams) -> Self {
        SearchState {
            phase: if params.baseline_unconfined {
                Phase::Baseline
            } else {
                Phase::Climb
            },
            ..Self::new()
        }
    }

    /// One determination (Alg. 4) on the round's T ([`Round::thro`]).
    pub(crate) fn determine(&mut self, params: &SscParams, round: Round) -> Step {
        let work_cores = round.work_cores();
        let thro = round.thro();
        // A reference round is a settled search's measurement: the rounds
        // after it are no new settling to record.
        if !matches!(self.phase, Phase::Settled | Phase::Reference(_)) {
            self.rounds_settled = 0;
        }
        if self.arrivals_under_way(params, round) {
            return Step::hold(thro);
        }
        if self.stalled(params, thro) {
            return Step::hold(thro);
        }
        let step = match self.phase {
            Phase::Baseline => self.baseline(params, round, thro),
            Phase::Climb => self.climb(params, round, work_cores, thro),
            Phase::Refine(refine) => self.refine_round(params, round, refine, thro),
            Phase::ProbeUnconfined(probe) => self.probe_round(params, round, probe, thro),
            Phase::Reference(reference) => self.reference_round(params, round, reference, thro),
            Phase::Settled => self.adapt(params, round, work_cores, thro),
        };
        self.bound_best = match step.bound {
            BoundMove::To(b) if b != round.bound => 0.0,
            BoundMove::Restart => 0.0,
            _ => self.bound_best.max(thro),
        };
        step
    }

    /// Whether this searching round is held as a stall
    /// (`SscParams::stall_fraction`): far below both the best round at
    /// this bound and the baseline on every core, and not right after
    /// another such hold.
    fn stalled(&mut self, params: &SscParams, thro: f64) -> bool {
        let searching = matches!(
            self.phase,
            Phase::Climb | Phase::Refine(_) | Phase::ProbeUnconfined(_)
        );
        let low = |reference: f64| thro < params.stall_fraction * reference;
        let stall = params.stall_fraction > 0.0
            && searching
            && self.stall_holds == 0
            && low(self.bound_best)
            && self.unconfined_thro.is_none_or(low);
        self.stall_holds = if stall { self.stall_holds + 1 } else { 0 };
        stall
    }

    /// Whether this round is held because lock-intensive threads were still
    /// arriving on a confined bound (`SscParams::arrival_growth`); records
    /// the count either way.
    fn arrivals_under_way(&mut self, params: &SscParams, round: Round) -> bool {
        let before = std::mem::replace(&mut self.last_lock_intensive, round.lock_intensive);
        let searching = matches!(
            self.phase,
            Phase::Climb | Phase::Refine(_) | Phase::ProbeUnconfined(_)
        );
        let grew =
            f64::from(round.lock_intensive) > f64::from(before) * (1.0 + params.arrival_growth);
        // Threads still to move: most of the waits are off the SSC.
        let unmoved = params.mixed_waits_off_ssc > 0.0
            && round
                .waits_off_ssc
                .is_some_and(|s| s > params.mixed_waits_off_ssc);
        let hold = params.arrival_growth > 0.0
            && searching
            && round.bound < round.max_bound
            && (grew || unmoved)
            && self.arrival_holds < params.arrival_hold_max;
        self.arrival_holds = if hold { self.arrival_holds + 1 } else { 0 };
        hold
    }

    /// Alg. 4 lines 6-43, the doubling with `confirmations` better rounds to
    /// grow and (as in the paper) one more to step back.
    fn climb(&mut self, params: &SscParams, round: Round, work_cores: u32, thro: f64) -> Step {
        let hold = Step::hold(thro);
        let confirmations = params.confirmations.max(1) as i32;
        if thro > self.thro_last_step {
            // Confirmations guard a move against noise; a round below half
            // the baseline is evidence enough that more cores do better.
            let confirmed = self.far_below_baseline(thro);
            if self.climbing < 0 && !confirmed {
                self.climbing = 1;
                return hold;
            }
            if self.climbing < confirmations && !confirmed {
                self.climbing += 1;
                return hold;
            }
            let limit = round.max_bound.min(round.lock_intensive).max(1);
            let new_bound = self.next_climb_bound(work_cores, thro, limit);
            self.climbing = 1;
            // Growth to every core, which the baseline round measured, is
            // decided against that figure below, as a capped climb is:
            // measuring every core again costs a program that confinement
            // helps (on 2 cores the doubling's first step reaches them).
            let measured_already = self.unconfined_thro.is_some()
                && new_bound >= round.max_bound
                && round.bound < round.max_bound;
            if new_bound > work_cores && !measured_already {
                self.record_last(work_cores, thro);
                return Step::to(DecisionKind::Double, thro, new_bound);
            }
            // Capped on every core: nothing is confined, so there is
            // nothing to refine.
            if self.unconfined_thro.is_some() && round.bound >= round.max_bound {
                self.climbing = 0;
                self.phase = Phase::Settled;
                self.record_last(work_cores, thro);
                return Step {
                    kind: DecisionKind::SettleUnconfined,
                    thro,
                    bound: BoundMove::Keep,
                };
            }
            // Capped: the paper keeps re-confirming; corral refines below.
            if params.refine {
                if let Some(settle) = self.settle_before_refining(params, round, work_cores, thro) {
                    return settle;
                }
                return self.start_refine(params, round, work_cores, thro);
            }
            return hold;
        }
        // A round far below the last step is no noise (`reject_below`).
        let far_worse = self.climbing > 0 && Self::far_below(params, thro, self.thro_last_step);
        if self.climbing > 0 && !far_worse {
            self.climbing = -1;
            return hold;
        }
        if self.climbing > -confirmations && !far_worse {
            self.climbing -= 1;
            return hold;
        }
        // Confirmed worse: back to the last step, and stop (or refine).
        let back = self.work_cores_last_step.max(round.min_bound).max(1);
        self.climbing = 0;
        if params.refine {
            let center_thro = self.thro_last_step;
            if let Some(settle) = self.settle_before_refining(params, round, back, center_thro) {
                return settle;
            }
            let mut step = self.start_refine(params, round, back, center_thro);
            if step.bound == BoundMove::Keep && round.bound != back {
                step.bound = BoundMove::To(back);
            }
            return step;
        }
        if let Some(probe) = self.probe_unconfined(params, round, back, self.thro_last_step, thro) {
            return probe;
        }
        self.phase = Phase::Settled;
        Step::to(DecisionKind::StepBack, thro, back)
    }

    /// Whether `thro` is below `reference` by more than noise
    /// ([`SscParams::reject_below`]; never, where that is 0).
    fn far_below(params: &SscParams, thro: f64, reference: f64) -> bool {
        thro < params.reject_below * reference
    }

    pub(super) fn record_last(&mut self, work_cores: u32, thro: f64) {
        self.thro_last_step = thro;
        self.work_cores_last_step = work_cores;
    }

    /// Begins the pattern search around `center` with step `center / 2`.
    /// The doubling reached `center` from `center / 2` because T rose, so
    /// that side is not probed again (`moved_dir` = +1).
    fn start_refine(
        &mut self,
        params: &SscParams,
        round: Round,
        center: u32,
        center_thro: f64,
    ) -> Step {
        let refine = Refine {
            center,
            center_thro,
            step: center / 2,
            dir: 1,
            moved_dir: 1,
            probe: center,
            streak: 0,
        };
        self.next_probe(params, round, refine, center_thro)
    }

    /// Moves to the next valid probe, or settles at the center.
    fn next_probe(
        &mut self,
        params: &SscParams,
        round: Round,
        mut refine: Refine,
        thro: f64,
    ) -> Step {
        let limit = round.max_bound.min(round.lock_intensive).max(1);
        let lowest = round.min_bound.max(1);
        while refine.step > 0 {
            let candidate =
                i64::from(refine.center) + i64::from(refine.dir) * i64::from(refine.step);
            let old_center = refine.moved_dir == -refine.dir;
            if !old_center && candidate >= i64::from(lowest) && candidate <= i64::from(limit) {
                refine.probe = candidate as u32;
                refine.streak = 0;
                self.phase = Phase::Refine(refine);
                return Step::to(DecisionKind::RefineProbe, thro, refine.probe);
            }
            refine.advance();
        }
        if let Some(probe) =
            self.probe_unconfined(params, round, refine.center, refine.center_thro, thro)
        {
            return probe;
        }
        self.phase = Phase::Settled;
        self.climbing = 0;
        self.record_last(refine.center, refine.center_thro);
        Step {
            kind: DecisionKind::RefineSettle,
            thro,
            bound: if round.bound == refine.center {
                BoundMove::Keep
            } else {
                BoundMove::To(refine.center)
            },
        }
    }

    /// One round at a refinement probe: `confirmations` agreeing rounds
    /// accept or reject it.
    fn refine_round(
        &mut self,
        params: &SscParams,
        round: Round,
        mut refine: Refine,
        thro: f64,
    ) -> Step {
        let confirmations = params.confirmations.max(1) as i32;
        refine.streak = if thro > refine.center_thro {
            refine.streak.max(0) + 1
        } else {
            refine.streak.min(0) - 1
        };
        if refine.streak >= confirmations {
            refine.center = refine.probe;
            refine.center_thro = thro;
            refine.moved_dir = refine.dir;
            return self.next_probe(params, round, refine, thro);
        }
        if refine.streak <= -confirmations || Self::far_below(params, thro, refine.center_thro) {
            refine.advance();
            return self.next_probe(params, round, refine, thro);
        }
        self.phase = Phase::Refine(refine);
        Step::hold(thro)
    }

    /// Alg. 4 lines 44-47: a change of work cores, or T outside
    /// [beta, alpha] x the recorded T (the same side), on
    /// `jump_confirmations` consecutive rounds restarts the search.
    ///
    /// Settled on every core after measuring it (`probe_unconfined`), a new
    /// count of lock-intensive threads confines nobody new and changes no
    /// measured progress, and a rise of progress cannot call for more cores:
    /// only a fall restarts the search, so threads that flicker around the
    /// threshold do not send the program back to one core.
    ///
    /// The first `settle_in_rounds` settled rounds only re-record T (see
    /// `SscParams::settle_in_rounds`).
    fn adapt(&mut self, params: &SscParams, round: Round, work_cores: u32, thro: f64) -> Step {
        self.rounds_settled = self.rounds_settled.saturating_add(1);
        if self.rounds_settled <= params.settle_in_rounds {
            self.record_last(work_cores, thro);
            return Step::hold(thro);
        }
        let unconfined = (params.probe_unconfined || self.unconfined_thro.is_some())
            && round.bound >= round.max_bound;
        // On every core already, more progress cannot call for more cores.
        let side = if thro > params.alpha * self.thro_last_step && !unconfined {
            1
        } else if thro < params.beta * self.thro_last_step {
            -1
        } else {
            0
        };
        self.jump_streak = match side {
            0 => 0,
            _ if self.jump_streak.signum() == side => self.jump_streak + side,
            _ => side,
        };
        // On every core, only a fall can restart, and programs that need
        // their cores swing the most: a fall must last longer there.
        let needed = if unconfined {
            params.jump_confirmations.max(params.unconfined_fall_rounds)
        } else {
            params.jump_confirmations
        }
        .max(1);
        self.cores_streak = if work_cores != self.work_cores_last_step && !unconfined {
            self.cores_streak + 1
        } else {
            0
        };
        let jumped = self.jump_streak.unsigned_abs() >= needed;
        let kind = if self.cores_streak >= needed {
            DecisionKind::RestartWorkCores
        } else if jumped {
            DecisionKind::RestartThroughputJump
        } else {
            return self
                .keep_confined_honest(params, round, thro)
                .or_else(|| self.back_to_confined(params, round, thro))
                .unwrap_or(Step::hold(thro));
        };
        Step {
            kind,
            thro,
            bound: BoundMove::Restart,
        }
    }
}

impl Default for SearchState {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
#[path = "search_tests.rs"]
mod tests;
