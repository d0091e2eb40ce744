//! "No confinement" as a candidate of the SSC search: the round on every
//! core that begins a search (`SscParams::baseline_unconfined`), the climb
//! judged against it, and the late probe of every core
//! (`SscParams::probe_unconfined`).

use super::params::{DecisionKind, SscParams};
use super::search::{BoundMove, Phase, Reference, Round, SearchState, Step, UnconfinedProbe};

/// Reference rounds begin this many settled rounds after settling, and
/// the gap doubles up to `SscParams::reference_every`. At 2, sysbench
/// mutex's `bench apps` runs (about 90 ms under corral) paid two
/// reference rounds, a tenth of their time at a quarter of the rate.
const FIRST_REFERENCE_GAP: u32 = 4;

impl SearchState {
    /// Whether the program is still arriving on every core: with
    /// `SscParams::arrival_growth`, the lock-intensive count rose by more
    /// than it since the last round on every core, or progress moved by
    /// more than it either way (arriving threads raise a program's
    /// progress, or, where they contend, lower it). The rounds held for
    /// `SscParams::trial_after` are such last rounds; a first round has
    /// none and counts: holding it cost sysbench mutex 10-25% of a
    /// `bench apps` run at 4-32 threads (2.8x glibc at 4), and a baseline
    /// it got wrong is re-measured by the reference rounds. A baseline
    /// taken while the program moves reads a program that is not all
    /// there yet. Records this round either way.
    fn baseline_rising(&mut self, params: &SscParams, round: Round) -> bool {
        let Some(rate) = round.measured else {
            return false;
        };
        let prev = self.baseline_prev.replace((rate, round.lock_intensive));
        let grew = |now: f64, before: f64| now > before * (1.0 + params.arrival_growth);
        params.arrival_growth > 0.0
            && prev.is_some_and(|(r, n)| {
                grew(rate, r)
                    || grew(r, rate)
                    || grew(f64::from(round.lock_intensive), f64::from(n))
            })
    }

    /// Settled on a confined bound with measured progress and
    /// `SscParams::reference_every`: the bound is kept only while it
    /// measures better than the reference on every core (`confirmations`
    /// rounds below it go back to every core), and the reference is
    /// re-measured by one round on every core after `FIRST_REFERENCE_GAP`
    /// settled rounds, then twice as many each time, at most
    /// `reference_every`.
    pub(super) fn keep_confined_honest(
        &mut self,
        params: &SscParams,
        round: Round,
        thro: f64,
    ) -> Option<Step> {
        if params.reference_every == 0 || round.measured.is_none() || round.bound >= round.max_bound
        {
            return None;
        }
        self.settled_mean = if self.settled_mean > 0.0 {
            (self.settled_mean + thro) / 2.0
        } else {
            thro
        };
        if let Some(reference) = self.unconfined_thro {
            self.below_reference = if thro < reference {
                self.below_reference + 1
            } else {
                0
            };
            if self.below_reference >= params.confirmations.max(1) {
                let confined = Reference {
                    confined: round.bound,
                    confined_thro: self.settled_mean,
                };
                return Some(self.drop_confinement(round, reference, confined));
            }
        }
        if self.reference_gap == 0 {
            self.reference_gap = FIRST_REFERENCE_GAP.min(params.reference_every);
            self.reference_due = self.reference_gap;
        }
        self.reference_due = self.reference_due.saturating_sub(1);
        if self.reference_due > 0 {
            return None;
        }
        self.phase = Phase::Reference(Reference {
            confined: round.bound,
            confined_thro: self.settled_mean,
        });
        Some(Step::to(DecisionKind::Reference, thro, round.max_bound))
    }

    /// The confined bound stays: the next reference round comes twice as
    /// many settled rounds later, at most `SscParams::reference_every`.
    fn next_reference_later(&mut self, params: &SscParams) {
        self.reference_gap = (self.reference_gap * 2).clamp(1, params.reference_every.max(1));
        self.reference_due = self.reference_gap;
    }

    /// Back to every core, settled there, on `reference` as its T; the
    /// `confined` bound is remembered (see [`Self::back_to_confined`]).
    fn drop_confinement(&mut self, round: Round, reference: f64, confined: Reference) -> Step {
        self.phase = Phase::Settled;
        self.climbing = 0;
        self.below_reference = 0;
        self.dropped = Some(confined);
        self.since_drop = 0;
        let work_cores = round.lock_intensive.min(round.max_bound).max(1);
        self.record_last(work_cores, reference);
        let bound = if round.bound >= round.max_bound {
            BoundMove::Keep
        } else {
            BoundMove::To(round.max_bound)
        };
        Step {
            kind: DecisionKind::DropConfined,
            thro: round.thro(),
            bound,
        }
    }

    /// The reference round on every core: the new reference. The confined
    /// bound is taken back if its settled rounds read at least as much;
    /// else the program stays on every core. The margin that confinement
    /// had to win by when the search settled is not asked again: with
    /// it, a bound that wins by about the margin (the simulator's mempop
    /// and postmark at 64-1,024 cores, by 5-8%) flipped between the two
    /// at every reference round, 13-17 of 143 grid points per seed.
    pub(super) fn reference_round(
        &mut self,
        params: &SscParams,
        round: Round,
        reference: Reference,
        thro: f64,
    ) -> Step {
        self.unconfined_thro = Some(thro);
        self.phase = Phase::Settled;
        self.climbing = 0;
        self.settled_mean = 0.0;
        if reference.confined_thro >= thro {
            self.next_reference_later(params);
            return Step::to(DecisionKind::KeepConfined, thro, reference.confined);
        }
        self.drop_confinement(round, thro, reference)
    }

    /// On every core after a drop: `confirmations` rounds that read below
    /// the dropped bound's rounds by `unconfined_margin` take that bound
    /// back, with the last of them as the new reference. One round just
    /// after a move reads a mix of both placements (on 1,024 simulated
    /// cores the convoy on every core builds over several rounds); a
    /// program that needs its cores reads above and stays. The memory
    /// lapses after `SscParams::reference_every` settled rounds.
    pub(super) fn back_to_confined(
        &mut self,
        params: &SscParams,
        round: Round,
        thro: f64,
    ) -> Option<Step> {
        let dropped = self.dropped?;
        if round.bound < round.max_bound || round.measured.is_none() {
            self.dropped = None;
            return None;
        }
        let worse = thro * (1.0 + params.unconfined_margin) < dropped.confined_thro;
        self.below_reference = if worse { self.below_reference + 1 } else { 0 };
        self.since_drop += 1;
        if self.below_reference >= params.confirmations.max(1) {
            self.dropped = None;
            self.below_reference = 0;
            self.unconfined_thro = Some(thro);
            self.settled_mean = 0.0;
            self.next_reference_later(params);
            let work_cores = round.lock_intensive.min(dropped.confined).max(1);
            self.record_last(work_cores, dropped.confined_thro);
            return Some(Step::to(DecisionKind::KeepConfined, thro, dropped.confined));
        }
        if self.since_drop >= params.reference_every {
            self.dropped = None;
        }
        None
    }

    /// The round on every core is measured: the doubling starts from the
    /// initial bound. One round, not the best of several: a longer stay on
    /// every core let the simulator's 1,024-core presets fall into a convoy
    /// more often than it measured them better.
    pub(super) fn baseline(&mut self, params: &SscParams, round: Round, thro: f64) -> Step {
        let rising = self.baseline_rising(params, round);
        self.awaits_trial = round.contended_for < params.trial_after(round.handoff_share);
        if self.awaits_trial {
            return Step::hold(thro);
        }
        // A round closed by votes before the driver's first progress
        // report has only the paper's estimate T = n(1 - p), in other
        // units than every later round: no reference at all. Wait for a
        // measured one (the kernel-lock monitor, which never measures,
        // runs a preset with no arrival holds).
        let unmeasured = params.use_progress && round.measured.is_none();
        if (rising || unmeasured) && self.baseline_holds < params.arrival_hold_max {
            self.baseline_holds += 1;
            return Step::hold(thro);
        }
        // Only measured progress compares every core with a confined bound:
        // the paper's T = n(1 - p) grows with the cores by construction, so
        // a driver that counts no progress (the kernel-lock monitor) climbs
        // as before, one round later.
        self.unconfined_thro = round.measured.filter(|&t| t > 0.0);
        self.phase = Phase::Climb;
        let start = params
            .initial_bound
            .max(round.min_bound)
            .clamp(1, round.max_bound);
        Step::to(DecisionKind::Baseline, thro, start)
    }

    /// Where the doubling goes from `work_cores` after a better T: twice as
    /// far, or, while T is still below the baseline on every core, as far
    /// as linear growth would need to meet it.
    pub(super) fn next_climb_bound(&self, work_cores: u32, thro: f64, limit: u32) -> u32 {
        let doubled = work_cores.saturating_mul(2);
        let jump = match self.unconfined_thro {
            Some(unconfined) if thro > 0.0 && thro < unconfined => {
                (f64::from(work_cores) * unconfined / thro)
                    .ceil()
                    .min(f64::from(u32::MAX)) as u32
            }
            _ => 0,
        };
        doubled.max(jump).min(limit)
    }

    /// Whether `thro` is below half the baseline on every core: growth
    /// toward every core then needs no confirmation (after a restart on a
    /// program that needs its cores, each confirmation at a small bound is
    /// a round at a fraction of its progress).
    #[inline]
    pub(super) fn far_below_baseline(&self, thro: f64) -> bool {
        self.unconfined_thro.is_some_and(|u| thro * 2.0 < u)
    }

    /// With a baseline on every core, a climb that ended within the margin
    /// of it settles there at once: the refinement could only find a bound
    /// within a few percent of its center, which would not beat every core
    /// either.
    pub(super) fn settle_before_refining(
        &mut self,
        params: &SscParams,
        round: Round,
        center: u32,
        center_thro: f64,
    ) -> Option<Step> {
        self.unconfined_thro?;
        self.probe_unconfined(params, round, center, center_thro, round.thro())
    }

    /// With `probe_unconfined`, a search about to settle on `center` below
    /// every core measures every core first, unless the round that decided
    /// it was on every core and worse beyond the margin (a small machine,
    /// where the doubling reaches every core: its confirmed-worse rounds
    /// already measured it, and probing again only repeats them).
    pub(super) fn probe_unconfined(
        &mut self,
        params: &SscParams,
        round: Round,
        center: u32,
        center_thro: f64,
        thro: f64,
    ) -> Option<Step> {
        if center >= round.max_bound {
            return None;
        }
        if let Some(unconfined) = self.unconfined_thro {
            // Measured at the start: no probe needed.
            if center_thro >= unconfined * (1.0 + params.unconfined_margin) {
                return None;
            }
            self.climbing = 0;
            self.phase = Phase::Settled;
            let work_cores = round.lock_intensive.min(round.max_bound).max(1);
            self.record_last(work_cores, unconfined);
            return Some(Step::to(
                DecisionKind::SettleUnconfined,
                thro,
                round.max_bound,
            ));
        }
        if !params.probe_unconfined {
            return None;
        }
        let measured_every_core = round.bound >= round.max_bound
            && round.thro() < center_thro * (1.0 - params.unconfined_margin);
        if measured_every_core {
            return None;
        }
        self.climbing = 0;
        self.phase = Phase::ProbeUnconfined(UnconfinedProbe {
            center,
            center_thro,
            streak: 0,
        });
        Some(Step::to(
            DecisionKind::ProbeUnconfined,
            thro,
            round.max_bound,
        ))
    }

    /// One round on every core: `confirmations` agreeing rounds keep it (it
    /// did within `unconfined_margin` of the center) or go back to the
    /// center. Either way the search settles.
    pub(super) fn probe_round(
        &mut self,
        params: &SscParams,
        round: Round,
        mut probe: UnconfinedProbe,
        thro: f64,
    ) -> Step {
        let confirmations = params.confirmations.max(1) as i32;
        probe.streak = if thro >= probe.center_thro * (1.0 - params.unconfined_margin) {
            probe.streak.max(0) + 1
        } else {
            probe.streak.min(0) - 1
        };
        if probe.streak.abs() < confirmations {
            self.phase = Phase::ProbeUnconfined(probe);
            return Step::hold(thro);
        }
        self.phase = Phase::Settled;
        self.climbing = 0;
        if probe.streak > 0 {
            let work_cores = round.lock_intensive.min(round.max_bound).max(1);
            self.record_last(work_cores, thro);
            return Step {
                kind: DecisionKind::SettleUnconfined,
                thro,
                bound: BoundMove::Keep,
            };
        }
        self.record_last(probe.center, probe.center_thro);
        Step::to(DecisionKind::RefineSettle, thro, probe.center)
    }
}
