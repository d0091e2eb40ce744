//! "No confinement" as a candidate of the SSC search: the round on every
//! core that begins a search (`SscParams::baseline_unconfined`), the climb
//! judged against it, and the late probe of every core
//! (`SscParams::probe_unconfined`).

use super::params::{DecisionKind, SscParams};
use super::search::{BoundMove, Phase, Round, SearchState, Step, UnconfinedProbe};

impl SearchState {
    /// The round on every core is measured: the doubling starts from the
    /// initial bound. One round, not the best of several: a longer stay on
    /// every core let the simulator's 1,024-core presets fall into a convoy
    /// more often than it measured them better.
    pub(super) fn baseline(&mut self, params: &SscParams, round: Round, thro: f64) -> Step {
        self.awaits_trial = round.contended_for < params.trial_after(round.handoff_share);
        if self.awaits_trial {
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
